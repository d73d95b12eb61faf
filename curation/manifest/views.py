"""What the dashboard shows, computed where it is cheap: in SQL and NumPy, never per page in Python.

Every function takes a Manifest and the decision being looked at, and returns plain data (dicts,
lists, arrays), so the pages stay thin and this module is tested without Streamlit. A decision is
the σ `threshold` plus, as keywords, the `rule` (picture, sigma or model) and `picture_area_min` (square inches);
left out, they are the saved ones (Manifest.decision_params). All of it must stay fast on a
100,000-page manifest: counts and histograms are single aggregate queries, lists are SQL pages of
at most a screenful, and nothing loads a thumbnail that is not on screen.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import io
import math
import os
import re
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import PIL.Image
import PIL.ImageDraw
import pymupdf

from . import history, thumbnail_store
from ..decisions import learn
from ..scoring.scorer import THUMBNAIL_QUALITY, THUMBNAIL_SIDE
from ..sources.paths import reading_roots
from ..sources.page_numbers import page_number
from ..sources.reader import error_text, open_document
from .rules import (BASE_RULE_SQL, DECIDED_BY_SQL, DEFAULT_PICTURE_AREA_MIN, DEFAULT_RULE, DISAGREES_SQL,
                    INK_TONE_MIN, KEEP_SQL, LIVE_DOCUMENT_SQL, PICTURE_AREA_SQL, PICTURE_BOX_SQL,
                    PICTURE_DECIDED_BY_SQL, PICTURE_KEEP_SQL, RULES)
from .store import Manifest, now

# The joins every page query uses; aliases p, d and o as in Manifest.pages().
PAGES_FROM = (
    "FROM pages p JOIN documents d ON d.id = p.doc_id "
    "LEFT JOIN overrides o ON o.doc_id = p.doc_id AND o.page = p.page"
)

DECISIONS = {
    "all": "All pages",
    "kept": "Kept",
    "rejected": "Rejected",
    "overridden": "Overridden",
    "near": "Near the cutoff",
    "disagrees": "Model disagrees",
    "duplicates": "Near-duplicates",
    "failed": "Failed",
}
# The model is compared with the rule it stands beside: the picture rule when it decides itself.
# Pages the curator already decided are left out: they are reviewed.
DISAGREES_FILTER_SQL = f"o.keep IS NULL AND {DISAGREES_SQL.replace(':rule', ':base_rule')}"
DUPLICATE_SQL = "EXISTS (SELECT 1 FROM duplicates dg WHERE dg.doc_id = p.doc_id AND dg.page = p.page)"
DECISION_SQL = {
    "all": "",
    "kept": f"{KEEP_SQL} = 1",
    "rejected": f"{KEEP_SQL} = 0",
    "overridden": "o.keep IS NOT NULL",
    "near": None,  # NEAR_SQL, by the measure the rule cuts on
    "disagrees": DISAGREES_FILTER_SQL,
    "duplicates": DUPLICATE_SQL,
    "failed": "p.status = 'failed'",
}
# "Near the cutoff" on the measure the rule cuts: written as ranges so SQLite uses the column's index.
NEAR_SQL = {
    "sigma": "p.sigma BETWEEN :threshold - :near AND :threshold + :near",
    "picture_area": "p.picture_area BETWEEN :picture_area_min / :near AND :picture_area_min * :near",
}
RULE_LABELS = {"picture": "Picture rule", "sigma": "σ only", "model": "Learned from overrides"}
_BASE_SQL = BASE_RULE_SQL.replace(":rule", ":base_rule")  # the rule's own decision, beside the model
PICTURE_FLOOR = 0.1  # square inches: the picture-area histogram's left edge; pages below it hold no picture
PICTURE_CEILING = 1000.0
SORTS = {
    "sigma": ("σ, lowest first", "p.sigma NULLS LAST, p.doc_id, p.page"),  # failed pages last
    "sigma_desc": ("σ, highest first", "p.sigma DESC, p.doc_id, p.page"),
    "page": ("Document and page", "d.path, p.page"),
    "picture_desc": ("Largest picture first", "p.picture_area DESC NULLS LAST, p.doc_id, p.page"),
}
RENDER_LONG_SIDE = 2400  # pixels: enough to judge an engraving's line work on a large screen
RENDER_MAX_ZOOM = 4.0
OUTLINE_COLOUR = (232, 93, 4)  # picture boxes on thumbnails: an orange no scan is printed in


def decision_params(manifest: Manifest, threshold: float | None = None, rule: str | None = None,
                    picture_area_min: float | None = None) -> dict:
    """What KEEP_SQL and the filters bind: the saved rule and cutoffs, or the ones being tried."""
    if rule is not None and rule not in RULES:
        raise ValueError(f"unknown rule {rule!r}; one of {', '.join(RULES)}")
    params = manifest.decision_params(threshold, rule)
    if picture_area_min is not None:
        params["picture_area_min"] = float(picture_area_min)
    params["base_rule"] = base_rule(params["rule"])
    return params


def base_rule(rule: str) -> str:
    """The rule the model is compared with: the rule itself, or the picture rule when the model decides."""
    return "picture" if rule == "model" else rule


def near_measure(manifest: Manifest, rule: str) -> str:
    """What "near the cutoff" is measured on under `rule`: σ for σ only, else the picture area (the
    model falls back to the picture rule), or σ again while no page has picture features."""
    return "picture_area" if rule != "sigma" and has_features(manifest) else "sigma"


@dataclass(frozen=True)
class PageFilter:
    """Which pages a review screen shows: by decision, optionally one document.

    `near` is the half-width of "near the cutoff" in units of `near_on`: σ, or for the picture area a
    factor (2.0 is from half to twice picture_area_min).
    """

    decision: str = "all"
    doc_id: int | None = None
    near: float = 5.0
    page: int | None = None  # one page of the document, to show it alone
    near_on: str = "sigma"

    def sql(self) -> tuple[str, dict]:
        if self.decision not in DECISION_SQL:
            raise ValueError(f"unknown decision filter {self.decision!r}")
        conditions, params = [], {}
        if self.decision == "near":
            if self.near_on not in NEAR_SQL:
                raise ValueError(f"cannot measure nearness on {self.near_on!r}")
            conditions.append(NEAR_SQL[self.near_on])
            params["near"] = float(self.near)
        elif DECISION_SQL[self.decision]:
            conditions.append(DECISION_SQL[self.decision])
        if self.doc_id is not None:
            conditions.append("p.doc_id = :doc_id")
            params["doc_id"] = int(self.doc_id)
        if self.page is not None:
            conditions.append("p.page = :page")
            params["page"] = int(self.page)
        return " AND ".join(conditions), params


def _where(flt: PageFilter) -> tuple[str, dict]:
    condition, params = flt.sql()
    return f"WHERE {LIVE_DOCUMENT_SQL}" + (f" AND ({condition})" if condition else ""), params


# -- counts -----------------------------------------------------------------------------------


def filter_counts(manifest: Manifest, threshold: float | None, flt: PageFilter = PageFilter(), *,
                  rule: str | None = None, picture_area_min: float | None = None) -> dict:
    """How many pages the filter holds, and of those how many are kept and overridden (included, excluded)."""
    where, params = _where(flt)
    row = manifest.conn.execute(
        f"SELECT COUNT(*) AS pages, COALESCE(SUM({KEEP_SQL}), 0) AS kept, "
        f"COALESCE(SUM(o.keep IS NOT NULL), 0) AS overridden, COALESCE(SUM(o.keep = 1), 0) AS included, "
        f"COALESCE(SUM(o.keep = 0), 0) AS excluded {PAGES_FROM} {where}",
        {**decision_params(manifest, threshold, rule, picture_area_min), **params},
    ).fetchone()
    return {**dict(row), "rejected": row["pages"] - row["kept"]}


# KEEP_SQL once more, bound to the saved decision's values (:saved_threshold, :saved_rule, ...).
_SAVED_KEEP_SQL = re.sub(r":(threshold|rule|picture_area_min|ink_tone_min)\b", r":saved_\1", KEEP_SQL)


def figures(manifest: Manifest, threshold: float | None, saved: float | None = None, *, rule: str | None = None,
            picture_area_min: float | None = None) -> dict:
    """The threshold page's figures for the decision being tried, and what the saved one keeps, in one scan.

    The saved side is the saved rule and picture cutoff at σ `saved`; without `saved` both sides are
    the decision being tried. Counts agree with Manifest.summary(): failed pages count as rejected
    (they cannot be exported).
    """
    bound = decision_params(manifest, threshold, rule, picture_area_min)
    kept_saved_sql = "NULL"
    if saved is not None:
        bound.update({f"saved_{key}": value for key, value in decision_params(manifest, saved).items()})
        kept_saved_sql = f"COALESCE(SUM({_SAVED_KEEP_SQL}), 0)"
    row = manifest.conn.execute(
        f"SELECT COUNT(*) AS pages, COALESCE(SUM({KEEP_SQL}), 0) AS kept, {kept_saved_sql} AS kept_saved, "
        f"COALESCE(SUM(o.keep IS NOT NULL), 0) AS overrides, COALESCE(SUM(p.status = 'failed'), 0) AS failed "
        f"{PAGES_FROM} WHERE {LIVE_DOCUMENT_SQL}",
        bound,
    ).fetchone()
    result = dict(row)
    if saved is None:
        result["kept_saved"] = result["kept"]
    result["rejected"] = result["pages"] - result["kept"]
    result["rejected_saved"] = result["pages"] - result["kept_saved"]
    result["removed_share"] = result["rejected"] / result["pages"] if result["pages"] else 0.0
    result["removed_share_saved"] = result["rejected_saved"] / result["pages"] if result["pages"] else 0.0
    return result


def page_count(manifest: Manifest) -> int:
    """Pages of live documents, from indexes only: cheap enough for every script run."""
    return manifest.conn.execute(
        f"SELECT COUNT(*) FROM pages p JOIN documents d ON d.id = p.doc_id WHERE {LIVE_DOCUMENT_SQL}"
    ).fetchone()[0]


def override_count(manifest: Manifest) -> int:
    """Overrides on pages of live documents, as summary() counts them."""
    return manifest.conn.execute(
        f"SELECT COUNT(*) FROM overrides o JOIN documents d ON d.id = o.doc_id WHERE {LIVE_DOCUMENT_SQL}"
    ).fetchone()[0]


def unfeatured_count(manifest: Manifest) -> int:
    """Scored pages without picture features (scored before they existed): σ decides them."""
    return manifest.conn.execute(
        f"SELECT COUNT(*) FROM pages p JOIN documents d ON d.id = p.doc_id "
        f"WHERE {LIVE_DOCUMENT_SQL} AND p.status = 'ok' AND p.picture_area IS NULL"
    ).fetchone()[0]


def has_features(manifest: Manifest) -> bool:
    """Whether any scored page has picture features (by the picture_area index)."""
    return manifest.conn.execute(
        "SELECT EXISTS (SELECT 1 FROM pages WHERE picture_area IS NOT NULL)").fetchone()[0] == 1


# -- review -----------------------------------------------------------------------------------


def page_rows(manifest: Manifest, threshold: float | None, flt: PageFilter = PageFilter(), sort: str = "sigma",
              limit: int = 40, offset: int = 0, *, rule: str | None = None,
              picture_area_min: float | None = None, total: int | None = None) -> list[dict]:
    """One screenful of pages with their decision, features, suggestion and duplicate group, in SQL order.

    Near-duplicates come group by group, so the reprints of one plate sit side by side. `total`, the
    filter's page count when the caller has it, lets a screen past the middle be read from the end: a
    deep offset walks every page before it (9 s for the last screen of a million pages, 5 ms from the end).
    """
    where, params = _where(flt)
    bound = {**decision_params(manifest, threshold, rule, picture_area_min), **params}
    order = SORTS[sort][1]
    joins = ""
    if flt.decision == "duplicates":  # driven from the duplicate groups, a few thousand rows at most
        joins, order = " JOIN duplicates g ON g.doc_id = p.doc_id AND g.page = p.page", f"g.group_id, {order}"
    # Two steps: the screen's pages by rowid first, through the joins the filter needs and no more
    # (a deep offset walks every page before it), then those pages in full.
    walk, skip, take = order, int(offset), int(limit)
    if total is not None and offset > total / 2:
        walk, skip = reversed_order(order), max(0, total - offset - limit)
        take = max(0, min(limit, total - offset))
    rowids = [row[0] for row in manifest.conn.execute(
        f"SELECT p.rowid {PAGES_FROM}{joins} {where} ORDER BY {walk} LIMIT {take} OFFSET {skip}", bound)]
    if not rowids:
        return []
    rows = manifest.pages(threshold, where=f"p.rowid IN ({', '.join(map(str, rowids))})", params=bound, order=order,
                          rule=rule)
    return [dict(row) for row in rows]


def reversed_order(order: str) -> str:
    """An ORDER BY list (terms "expr [DESC] [NULLS FIRST|LAST]") walked the other way, NULLs included:
    SQLite puts NULLs first ascending and last descending unless a term says otherwise."""
    terms = []
    for term in order.split(","):
        words = term.upper().split()
        descending = "DESC" in words
        nulls_first = "FIRST" in words or (not descending and "LAST" not in words)
        terms.append(f"{term.split()[0]} {'ASC' if descending else 'DESC'} NULLS {'LAST' if nulls_first else 'FIRST'}")
    return ", ".join(terms)


def thumbnails(manifest: Manifest, keys: Iterable[tuple[int, int]], *,
               draw_missing: bool = False) -> dict[tuple[int, int], bytes]:
    """The thumbnails of the given (doc_id, page) pairs, wherever the manifest keeps them: its table, then
    the folder beside it, whatever the store set now (thumbnails stored before a change stay readable).
    Pages without one are absent; with `draw_missing`, a scored page without one (the store `none`) is
    drawn from its PDF at thumbnail size when the PDF is at hand (kept in memory, DRAWN_KEPT of them)."""
    keys = list(keys)
    found = _by_keys(manifest, "thumbnails", "jpeg", keys)
    missing = [key for key in keys if key not in found]
    folder = manifest.thumbnail_folder
    if not missing or not (draw_missing or folder.is_dir()):
        return found
    documents = {row["id"]: row for row in manifest.conn.execute(
        f"SELECT id, sha256, path, size FROM documents WHERE id IN ({', '.join(str(int(d)) for d, _ in missing)})")}
    missing = [key for key in missing if key[0] in documents]
    if folder.is_dir():
        for doc_id, page in missing:
            jpeg = thumbnail_store.read_file(thumbnail_store.file_of(folder, documents[doc_id]["sha256"], page))
            if jpeg is not None:
                found[(doc_id, page)] = jpeg
    missing = [key for key in missing if key not in found]
    if draw_missing and missing:
        # Only pages that were scored: a failed page may be one that takes hours to draw.
        scored = _by_keys(manifest, "pages", "status", missing)
        roots = _document_roots(manifest, {documents[doc_id]["path"] for doc_id, _ in missing})
        for doc_id, page in missing:
            doc = documents[doc_id]
            if scored.get((doc_id, page)) == "ok":
                with contextlib.suppress(PageUnavailable):
                    found[(doc_id, page)] = _drawn_thumbnail(doc["path"], doc["size"], doc["sha256"], page, roots)
    return found


DRAWN_KEPT = 400  # drawn thumbnails kept in memory (about 10 kB each): ten screens of Review


@functools.lru_cache(maxsize=DRAWN_KEPT)
def _drawn_thumbnail(path: str, size: int, sha256: str, page: int, roots: tuple[str, ...]) -> bytes:
    """Keyed by content as well as path: another manifest's document at the same path is drawn anew."""
    return draw_page(path, size, page, THUMBNAIL_SIDE, quality=THUMBNAIL_QUALITY, roots=roots)


def _document_roots(manifest: Manifest, paths: Iterable[str]) -> tuple[str, ...]:
    """The folders these documents may be drawn from: the allowed folders, and the folder of a document a
    command-line ingest read from outside them; a document under them must still lie there when opened."""
    return tuple(str(root) for root in reading_roots(manifest.path, manifest, {os.path.dirname(p) for p in paths}))


def pictures_for(manifest: Manifest, keys: Iterable[tuple[int, int]]) -> dict[tuple[int, int], list[tuple]]:
    """Every picture box of the given pages as the curator left them (x0, y0, x1, y1, square inches;
    reference pixels; deleted ones left out), the scorer's largest first, in one query; pages without a
    picture are absent."""
    keys = list(keys)
    if not keys:
        return {}
    boxes: dict[tuple[int, int], list[tuple]] = {}
    rows = manifest.conn.execute(
        f"WITH k(doc_id, page) AS (VALUES {', '.join('(?, ?)' for _ in keys)}) "
        f"SELECT x.doc_id, x.page, {PICTURE_BOX_SQL}, {PICTURE_AREA_SQL} FROM k JOIN pictures x "
        f"ON x.doc_id = k.doc_id AND x.page = k.page WHERE NOT x.deleted "
        f"ORDER BY x.doc_id, x.page, x.rank IS NULL, x.rank, x.number", [n for key in keys for n in key])
    for doc_id, page, *box in rows:
        boxes.setdefault((doc_id, page), []).append(tuple(box))
    return boxes


PICTURE_OVERRIDES = {1: "include", 0: "exclude", None: "auto"}


def picture_rows(manifest: Manifest, threshold: float | None = None, *, rule: str | None = None,
                 picture_area_min: float | None = None) -> Iterable[dict]:
    """Every picture, in document and page order: `picture` is its number on its page (1 the scorer's
    largest when first found; stable while the manifest holds it, as export names it), x0 y0 x1 y1 its box
    as fractions of the page (the curator's where redrawn), `area` its square inches; `keep` whether
    `export --crop pictures` writes it (its page is kept and so is the picture), `decided_by` who decided it
    (override, page, added, deleted or threshold), `override` the curator's decision on it (include,
    exclude or auto), `found` whether the scorer still finds it. One query, streamed."""
    bound = decision_params(manifest, threshold, rule, picture_area_min)
    rows = manifest.conn.execute(
        f"SELECT d.path AS doc, x.page, x.number AS picture, {PICTURE_BOX_SQL}, p.width, p.height, "
        f"{PICTURE_AREA_SQL} AS area, ({KEEP_SQL}) AND ({PICTURE_KEEP_SQL}) AS keep, "
        f"{PICTURE_DECIDED_BY_SQL} AS decided_by, x.keep AS override, x.rank IS NOT NULL OR x.added AS found, "
        f"x.caption FROM pictures x JOIN pages p ON p.doc_id = x.doc_id AND p.page = x.page "
        f"JOIN documents d ON d.id = p.doc_id LEFT JOIN overrides o ON o.doc_id = p.doc_id AND o.page = p.page "
        f"WHERE {LIVE_DOCUMENT_SQL} AND p.status = 'ok' ORDER BY d.path, x.page, x.number", bound)
    for row in rows:
        box = {k: round(row[b] / row[size], 4) for k, b, size in
               (("x0", "bx0", "width"), ("y0", "by0", "height"), ("x1", "bx1", "width"), ("y1", "by1", "height"))}
        yield {"doc": row["doc"], "page": row["page"], "picture": row["picture"], **box,
               "area": round(row["area"], 3), "keep": bool(row["keep"]), "decided_by": row["decided_by"],
               "override": PICTURE_OVERRIDES[row["override"]], "found": bool(row["found"]), "caption": row["caption"]}


def outline_pictures(image: bytes, boxes: list[tuple], width: int | None) -> bytes:
    """`image` (a thumbnail or a rendered page, JPEG) with each picture box drawn on it; `width` is the
    page's width in reference pixels, which the boxes are measured in."""
    if not boxes or not width:
        return image
    with PIL.Image.open(io.BytesIO(image)) as opened:
        picture = opened.convert("RGB")
    scale = picture.width / width
    draw = PIL.ImageDraw.Draw(picture)
    line = max(2, round(picture.width / 150))
    for x0, y0, x1, y1, *_ in boxes:
        draw.rectangle([x0 * scale, y0 * scale, x1 * scale, y1 * scale], outline=OUTLINE_COLOUR, width=line)
    out = io.BytesIO()
    picture.save(out, "JPEG", quality=90)
    return out.getvalue()


def captions_for(manifest: Manifest, keys: Iterable[tuple[int, int]]) -> dict[tuple[int, int], str]:
    """The captions of the given (doc_id, page) pairs (pages without one are absent), in one query."""
    return _by_keys(manifest, "captions", "text", keys)


def _by_keys(manifest: Manifest, table: str, columns: str, keys: Iterable[tuple[int, int]], many: bool = False) -> dict:
    """Values of `columns` (one, or several comma-separated as a tuple) of `table` by (doc_id, page);
    with `many`, a list of them per key, for tables holding several rows a page."""
    keys = list(keys)
    if not keys:
        return {}
    values = ", ".join("(?, ?)" for _ in keys)
    selected = ", ".join(f"t.{column.strip()}" for column in columns.split(","))
    # A join from the keys, not `(doc_id, page) IN (VALUES ...)`: SQLite scans the whole table for that.
    rows = manifest.conn.execute(
        f"WITH k(doc_id, page) AS (VALUES {values}) "
        f"SELECT t.doc_id, t.page, {selected} FROM k JOIN {table} t ON t.doc_id = k.doc_id AND t.page = k.page",
        [n for key in keys for n in key],
    )
    found: dict = {}
    for row in rows:
        value = row[2] if "," not in columns else tuple(row[2:])
        if many:
            found.setdefault((row[0], row[1]), []).append(value)
        else:
            found[(row[0], row[1])] = value
    return found


def bulk_override_effect(counts: dict, keep: bool | None) -> str:
    """What including (True), excluding (False) or clearing (None) every page of a view changes, in words, from
    its `filter_counts`: "This replaces 4 Include overrides; 1 page is already excluded"."""
    pages, included, excluded = counts["pages"], counts["included"], counts["excluded"]
    if keep is None:
        if not included and not excluded:
            return "No page in this view has an override: nothing changes."
        return (f"This removes {_overrides(included + excluded)} ({included:,} Include, {excluded:,} Exclude); "
                "those pages go back to the rule's decision.")
    replaced, same = (excluded, included) if keep else (included, excluded)
    word, other = ("Include", "Exclude") if keep else ("Exclude", "Include")
    parts = [f"This replaces {_overrides(replaced, other)}" if replaced else f"It replaces no {other} override"]
    if same:
        parts.append(f"{_pages(same)} {'is' if same == 1 else 'are'} already {word.lower()}d")
    fresh = pages - replaced - same
    if fresh:
        parts.append(f"{_pages(fresh)} without an override get{'s' if fresh == 1 else ''} one")
    return "; ".join(parts) + "."


def bulk_caption_effect(pages: int, captioned: int, overwrite: bool) -> tuple[int, str]:
    """How many captions a bulk caption writes, and in words what it does to the `captioned` pages that have
    one already: kept unless `overwrite`."""
    if overwrite:
        return pages, (f"It overwrites {_captions(captioned)} already written." if captioned else
                       "No page here has a caption yet.")
    writes = pages - captioned
    return writes, (f"{_pages(captioned)} with a caption keep{'s' if captioned == 1 else ''} it." if captioned else
                    "No page here has a caption yet.")


def _pages(n: int) -> str:
    return f"{n:,} page" + ("" if n == 1 else "s")


def _overrides(n: int, kind: str = "") -> str:
    return f"{n:,} {kind + ' ' if kind else ''}override" + ("" if n == 1 else "s")


def _captions(n: int) -> str:
    return f"{n:,} caption" + ("" if n == 1 else "s")


def bulk_override(manifest: Manifest, threshold: float | None, flt: PageFilter, keep: bool | None, *,
                  rule: str | None = None, picture_area_min: float | None = None) -> int:
    """Include (True), exclude (False) or clear (None) every page in the filter, in one transaction, recorded as
    one action (undone in one step).

    Returns how many pages the filter held. The filter is evaluated once, before anything changes,
    so "exclude everything kept" excludes exactly the pages that were kept.
    """
    new = None if keep is None else int(bool(keep))
    with manifest.recording("override", view_note(manifest, flt)) as action, _bulk_pages(manifest, threshold, flt,
                                                                                           rule, picture_area_min) as count:
        history.record_pages(manifest.conn, action, "override", "temp.bulk_pages", new)
        if new is None:
            manifest.conn.execute(
                "DELETE FROM overrides WHERE (doc_id, page) IN (SELECT doc_id, page FROM temp.bulk_pages)"
            )
        else:
            stamp = now()
            manifest.conn.execute(
                "INSERT INTO overrides (doc_id, page, keep, created_at, updated_at) "
                "SELECT doc_id, page, ?, ?, ? FROM temp.bulk_pages WHERE true "
                "ON CONFLICT(doc_id, page) DO UPDATE SET keep = excluded.keep, updated_at = excluded.updated_at",
                (new, stamp, stamp),
            )
    return count


@contextlib.contextmanager
def _bulk_pages(manifest: Manifest, threshold: float | None, flt: PageFilter, rule: str | None,
                picture_area_min: float | None, extra: str = ""):
    """The filter's pages (and `extra`'s condition) as temp.bulk_pages (doc_id, page) while the block runs,
    taken once before anything changes; yields how many there are. Call inside a transaction."""
    where, params = _where(flt)
    bound = {**decision_params(manifest, threshold, rule, picture_area_min), **params}
    manifest.conn.execute("DROP TABLE IF EXISTS temp.bulk_pages")
    manifest.conn.execute(f"CREATE TEMP TABLE bulk_pages AS SELECT p.doc_id, p.page {PAGES_FROM} {where} {extra}",
                          bound)
    try:
        yield manifest.conn.execute("SELECT COUNT(*) FROM temp.bulk_pages").fetchone()[0]
    finally:
        manifest.conn.execute("DROP TABLE IF EXISTS temp.bulk_pages")


def view_note(manifest: Manifest, flt: PageFilter) -> str:
    """Which view a bulk action applied to, for the history: "view: Kept, 1890-03.pdf"."""
    parts = [DECISIONS.get(flt.decision, flt.decision)]
    if flt.doc_id is not None:
        doc = manifest.document(flt.doc_id)
        parts.append(os.path.basename(doc["path"]) if doc else f"document {flt.doc_id}")
    if flt.page is not None:
        parts.append(f"p. {page_number(flt.page)}")
    return "view: " + ", ".join(parts)


CAPTIONED_SQL = "EXISTS (SELECT 1 FROM captions c WHERE c.doc_id = p.doc_id AND c.page = p.page)"


def caption_counts(manifest: Manifest, threshold: float | None, flt: PageFilter, *, rule: str | None = None,
                   picture_area_min: float | None = None) -> dict:
    """Pages in the filter, and how many of them have a caption already."""
    where, params = _where(flt)
    row = manifest.conn.execute(
        f"SELECT COUNT(*) AS pages, COALESCE(SUM({CAPTIONED_SQL}), 0) AS captioned {PAGES_FROM} {where}",
        {**decision_params(manifest, threshold, rule, picture_area_min), **params},
    ).fetchone()
    return dict(row)


def bulk_caption(manifest: Manifest, threshold: float | None, flt: PageFilter, text: str | None, *,
                 replace: bool = True, rule: str | None = None, picture_area_min: float | None = None) -> int:
    """Give every page in the filter the caption `text` (blank removes captions), in one transaction, recorded
    as one action (undone in one step).

    With `replace` false, pages that have a caption keep it. Returns how many pages were set.
    """
    text = (text or "").strip() or None
    extra = "" if replace else f"AND NOT {CAPTIONED_SQL}"
    with manifest.recording("caption", view_note(manifest, flt)) as action, _bulk_pages(
            manifest, threshold, flt, rule, picture_area_min, extra) as count:
        history.record_pages(manifest.conn, action, "caption", "temp.bulk_pages", text)
        if text is None:
            manifest.conn.execute(
                "DELETE FROM captions WHERE (doc_id, page) IN (SELECT doc_id, page FROM temp.bulk_pages)")
        else:
            manifest.conn.execute(
                "INSERT INTO captions (doc_id, page, text, updated_at) SELECT doc_id, page, ?, ? "
                "FROM temp.bulk_pages WHERE true "
                "ON CONFLICT(doc_id, page) DO UPDATE SET text = excluded.text, updated_at = excluded.updated_at",
                (text, now()))
    return count


def documents_for_filter(manifest: Manifest) -> list[dict]:
    """Live documents that have pages, for the document filter: id, path and page count."""
    rows = manifest.conn.execute(
        f"SELECT d.id, d.path, d.pages FROM documents d WHERE {LIVE_DOCUMENT_SQL} "
        "AND EXISTS (SELECT 1 FROM pages p WHERE p.doc_id = d.id) ORDER BY d.path"
    )
    return [dict(row) for row in rows]


# -- the learned model ------------------------------------------------------------------------


@dataclass(frozen=True)
class ModelState:
    """What the Review page says about the model learned from overrides."""

    suggestions: int  # pages with a stored suggestion (0: nothing learned yet)
    learned_from: int  # overrides the stored suggestions were fitted on
    included: int  # overrides now on scored pages: the labels the next fit would use
    excluded: int
    kept: int  # pages the model keeps
    disagrees: int  # pages without an override where the model and the rule differ

    @property
    def labels(self) -> int:
        return self.included + self.excluded

    @property
    def ready(self) -> bool:
        return learn.ready(np.array([True] * self.included + [False] * self.excluded, bool))

    @property
    def stale(self) -> bool:
        """Overrides were added or removed since the model learned (a rough sign: the count moved)."""
        return self.suggestions > 0 and self.labels != self.learned_from


def override_labels(manifest: Manifest) -> tuple[int, int]:
    """Included and excluded overrides on scored pages of live documents: what the model learns from."""
    row = manifest.conn.execute(
        f"SELECT COALESCE(SUM(o.keep = 1), 0), COALESCE(SUM(o.keep = 0), 0) FROM overrides o "
        f"JOIN pages p ON p.doc_id = o.doc_id AND p.page = o.page JOIN documents d ON d.id = o.doc_id "
        f"WHERE {LIVE_DOCUMENT_SQL} AND p.status = 'ok'"
    ).fetchone()
    return int(row[0]), int(row[1])


def learned(manifest: Manifest) -> tuple[int, int]:
    """Pages with a stored suggestion, and how many overrides the model learned them from (cheap)."""
    suggestions = manifest.conn.execute("SELECT COUNT(*) FROM suggestions").fetchone()[0]
    learned_from = int(manifest.get_setting("suggestions_from_overrides", "0") or 0) if suggestions else 0
    return suggestions, learned_from


def model_state(manifest: Manifest, rule: str | None = None) -> ModelState:
    """The stored suggestions against the rule (`rule` or the saved one), and the labels there are now."""
    included, excluded = override_labels(manifest)
    suggestions, learned_from = learned(manifest)
    kept = disagrees = 0
    if suggestions:
        row = manifest.conn.execute(
            f"SELECT COALESCE(SUM(s.keep), 0), COALESCE(SUM(s.keep != COALESCE({_BASE_SQL}, 0) AND o.keep IS NULL), 0) "
            f"FROM suggestions s JOIN pages p ON p.doc_id = s.doc_id AND p.page = s.page "
            f"JOIN documents d ON d.id = p.doc_id LEFT JOIN overrides o ON o.doc_id = p.doc_id AND o.page = p.page "
            f"WHERE {LIVE_DOCUMENT_SQL}",
            decision_params(manifest, rule=rule),
        ).fetchone()
        kept, disagrees = int(row[0]), int(row[1])
    return ModelState(suggestions, learned_from, included, excluded, kept, disagrees)


def learn_blocker(included: int, excluded: int) -> str | None:
    """Why the model cannot learn from these overrides yet, for a person; None when it can."""
    labels = included + excluded
    if labels < learn.MIN_LABELS:
        return (f"The model learns from your overrides: it needs at least {learn.MIN_LABELS}, with both decisions "
                f"among them, and you have made {labels} ({included} included, {excluded} excluded). "
                f"Include or exclude {learn.MIN_LABELS - labels} more page(s).")
    few = "excluded" if excluded < learn.MIN_PER_CLASS else "included" if included < learn.MIN_PER_CLASS else None
    if few is not None:
        have = excluded if few == "excluded" else included
        return (f"Your {labels} overrides are nearly all one decision ({included} included, {excluded} excluded): "
                f"the model needs both, at least {learn.MIN_PER_CLASS} {few} pages, to tell them apart. "
                f"{few[:-1].capitalize()} {learn.MIN_PER_CLASS - have} more.")
    return None


@dataclass(frozen=True)
class LearnOutcome:
    learned: bool
    message: str
    labels: int


def learn_from_overrides(manifest: Manifest) -> LearnOutcome:
    """Fit the model on the overrides and store its suggestions; says what it learned, or why not yet.

    Too few overrides clear the old suggestions (their labels are gone), as `python -m curation learn` does.
    """
    included, excluded = override_labels(manifest)
    result = learn.refresh_suggestions(manifest)
    if result is None:
        return LearnOutcome(False, learn_blocker(included, excluded) or "The model could not learn from these overrides.",
                            included + excluded)
    state = model_state(manifest)
    compared = RULE_LABELS[base_rule(manifest.rule)].lower().replace("σ only", "σ-only rule")
    return LearnOutcome(
        True,
        f"Learned from {result.labels:,} overrides ({included:,} included, {excluded:,} excluded). The model keeps "
        f"{state.kept:,} of {state.suggestions:,} pages and disagrees with the {compared} on {state.disagrees:,} "
        "page(s) you have not decided: see them with the filter **Model disagrees**.",
        result.labels,
    )


def use_model(manifest: Manifest) -> None:
    """Make the model's suggestions the decisions (the rule 'model'), remembering the rule it replaces."""
    if manifest.rule != "model":
        manifest.set_setting("rule_before_model", manifest.rule)
        manifest.rule = "model"


def stop_using_model(manifest: Manifest) -> str:
    """Go back to the rule used before the model decided (the picture rule if none); returns it."""
    previous = manifest.get_setting("rule_before_model", DEFAULT_RULE)
    previous = previous if previous in RULES and previous != "model" else DEFAULT_RULE
    manifest.rule = previous
    return previous


# -- threshold --------------------------------------------------------------------------------


def sigma_range(manifest: Manifest) -> tuple[float, float] | None:
    """The smallest and largest σ of scored pages (indexed), or None when nothing is scored."""
    row = manifest.conn.execute(
        f"SELECT MIN(p.sigma), MAX(p.sigma) FROM pages p JOIN documents d ON d.id = p.doc_id "
        f"WHERE {LIVE_DOCUMENT_SQL} AND p.sigma IS NOT NULL"
    ).fetchone()
    return None if row[0] is None else (float(row[0]), float(row[1]))


@dataclass(frozen=True)
class Histogram:
    edges: np.ndarray  # bins + 1 edges
    kept: np.ndarray  # pages per bin whose decision is keep (overrides included)
    rejected: np.ndarray

    @property
    def total(self) -> np.ndarray:
        return self.kept + self.rejected

    def rows(self) -> list[dict]:
        """Long-form rows for a stacked chart: one per bin and decision."""
        rows = []
        for i in range(len(self.kept)):
            for decision, counts in (("kept", self.kept), ("rejected", self.rejected)):
                rows.append({"start": float(self.edges[i]), "end": float(self.edges[i + 1]),
                             "decision": decision, "pages": int(counts[i])})
        return rows


def histogram(manifest: Manifest, threshold: float | None, bins: int = 60,
              span: tuple[float, float] | None = None, *, rule: str | None = None,
              picture_area_min: float | None = None) -> Histogram | None:
    """σ of scored pages binned in SQL, each bin split by decision. None when nothing is scored."""
    span = span or sigma_range(manifest)
    if span is None:
        return None
    low, high = math.floor(span[0]), math.ceil(span[1])
    high = max(high, low + 1)
    width = (high - low) / bins
    rows = manifest.conn.execute(
        f"SELECT MIN(MAX(CAST((p.sigma - :low) / :width AS INTEGER), 0), :last) AS bin, "
        f"SUM({KEEP_SQL}) AS kept, COUNT(*) AS pages {PAGES_FROM} "
        f"WHERE {LIVE_DOCUMENT_SQL} AND p.sigma IS NOT NULL GROUP BY bin",
        {"low": low, "width": width, "last": bins - 1,
         **decision_params(manifest, threshold, rule, picture_area_min)},
    ).fetchall()
    kept, total = np.zeros(bins, np.int64), np.zeros(bins, np.int64)
    for row in rows:
        kept[row["bin"]] = row["kept"]
        total[row["bin"]] = row["pages"]
    return Histogram(np.linspace(low, high, bins + 1), kept, total - kept)


def picture_histogram(manifest: Manifest, threshold: float | None = None, bins: int = 45, *,
                      rule: str | None = None, picture_area_min: float | None = None) -> Histogram | None:
    """The largest picture's area (square inches) of pages with features, in bins equal on a log scale
    from PICTURE_FLOOR to PICTURE_CEILING, each split by decision; pages below the floor (no picture at
    all) count in the first bin. None when no page has features."""
    _ensure_log10(manifest.conn)
    low, high = math.log10(PICTURE_FLOOR), math.log10(PICTURE_CEILING)
    rows = manifest.conn.execute(
        f"SELECT MIN(MAX(CAST((log10(MAX(p.picture_area, :floor)) - :low) / :width AS INTEGER), 0), :last) AS bin, "
        f"SUM({KEEP_SQL}) AS kept, COUNT(*) AS pages {PAGES_FROM} "
        f"WHERE {LIVE_DOCUMENT_SQL} AND p.picture_area IS NOT NULL GROUP BY bin",
        {"floor": PICTURE_FLOOR, "low": low, "width": (high - low) / bins, "last": bins - 1,
         **decision_params(manifest, threshold, rule, picture_area_min)},
    ).fetchall()
    if not rows:
        return None
    kept, total = np.zeros(bins, np.int64), np.zeros(bins, np.int64)
    for row in rows:
        kept[row["bin"]] = row["kept"]
        total[row["bin"]] = row["pages"]
    return Histogram(np.logspace(low, high, bins + 1), kept, total - kept)


def _ensure_log10(conn: sqlite3.Connection) -> None:
    """SQLite's math functions are a build option; where they are missing, Python's stands in."""
    try:
        conn.execute("SELECT log10(10.0)")
    except sqlite3.OperationalError:
        conn.create_function("log10", 1, lambda x: None if x is None or x <= 0 else math.log10(x),
                             deterministic=True)


def otsu(counts: np.ndarray, edges: np.ndarray) -> float:
    """Otsu's cutoff for a histogram: the edge that maximises the variance between the two sides."""
    counts = np.asarray(counts, np.float64)
    centers = (edges[:-1] + edges[1:]) / 2
    weight = np.cumsum(counts)[:-1]  # pages at or below each candidate edge
    total = counts.sum()
    if total == 0 or len(counts) < 2:
        return float(edges[len(edges) // 2])
    mass = np.cumsum(counts * centers)[:-1]
    mean_total = mass[-1] + counts[-1] * centers[-1]
    with np.errstate(divide="ignore", invalid="ignore"):
        between = (mean_total * weight / total - mass) ** 2 / (weight * (total - weight))
    between = np.nan_to_num(between, nan=-1.0, posinf=-1.0)
    return float(edges[int(np.argmax(between)) + 1])


@dataclass(frozen=True)
class Suggestion:
    threshold: float
    kept: int
    rejected: int
    how: str


def suggest_threshold(manifest: Manifest, bins: int = 256, *, rule: str | None = "sigma",
                      picture_area_min: float | None = None) -> Suggestion | None:
    """A σ cutoff from the σ distribution alone (Otsu's method), with what it would keep under `rule`
    (σ only by default: the cutoff is that rule's)."""
    hist = histogram(manifest, threshold=0.0, bins=bins)
    if hist is None or hist.total.sum() < 2:
        return None
    cut = round(otsu(hist.total, hist.edges), 1)
    counts = filter_counts(manifest, cut, rule=rule, picture_area_min=picture_area_min)
    how = (
        "Otsu's method: σ of all scored pages is split into two groups, text-like below and "
        "picture-like above, at the value that makes each group as tight as possible (the largest "
        "variance between the groups). It looks only at the numbers, so check the borderline pages."
    )
    return Suggestion(cut, counts["kept"], counts["rejected"], how)


class Borderline(NamedTuple):
    """The pages on each side of where the rule being tried cuts, nearest the cut first."""

    below: list[dict]  # the removed side
    above: list[dict]  # the kept side
    measure: str  # what the cut is on: "sigma", "picture_area" or "confidence" (the model's)


BORDERLINE_SQL = {  # measure: (below's condition and order, above's condition and order)
    "sigma": (("p.sigma <= :threshold", "p.sigma DESC"), ("p.sigma > :threshold", "p.sigma")),
    "picture_area": (("p.picture_area < :picture_area_min", "p.picture_area DESC"),
                     ("p.picture_area >= :picture_area_min", "p.picture_area")),
    "confidence": (("s.keep = 0", "s.confidence"), ("s.keep = 1", "s.confidence")),
}


def edge_measure(manifest: Manifest, rule: str) -> str:
    """Where `rule` cuts: σ; the picture area (σ while no page has features); or, for the model,
    its confidence (the picture area while nothing is learned)."""
    if rule == "sigma":
        return "sigma"
    if rule == "model" and manifest.conn.execute("SELECT EXISTS (SELECT 1 FROM suggestions)").fetchone()[0]:
        return "confidence"
    return "picture_area" if has_features(manifest) else "sigma"


def borderline(manifest: Manifest, threshold: float | None, count: int = 8, *, rule: str | None = None,
               picture_area_min: float | None = None) -> Borderline:
    """The pages just below and just above the cut of the rule being tried, nearest first, by index.

    σ only: σ at or below the cutoff and above it. Picture rule: picture area below and at or above
    picture_area_min. Learned: the model's rejections and keeps, least confident first.
    """
    params = decision_params(manifest, threshold, rule, picture_area_min)
    measure = edge_measure(manifest, params["rule"])
    sides = []
    for condition, order in BORDERLINE_SQL[measure]:
        rows = manifest.pages(threshold, where=condition, params=params, order=f"{order}, p.doc_id, p.page",
                              limit=count, rule=params["rule"])
        sides.append([dict(row) for row in rows])
    return Borderline(sides[0], sides[1], measure)


# -- documents and jobs -----------------------------------------------------------------------


def document_rows(manifest: Manifest) -> list[dict]:
    """Documents for the ingest table, with whether their file is still where the manifest says."""
    return [{**dict(row), "missing": not os.path.exists(row["path"])} for row in manifest.documents()]


def missing_sources(manifest: Manifest) -> list[str]:
    """Paths of live documents whose PDF is gone: their pages can be reviewed but not opened or exported."""
    rows = manifest.conn.execute(f"SELECT d.path FROM documents d WHERE {LIVE_DOCUMENT_SQL} ORDER BY d.path")
    return [row[0] for row in rows if not os.path.exists(row[0])]


def job_progress(job: sqlite3.Row | dict) -> dict:
    """A job row as a person reads it: fraction done, speed and time left as text. Until the speed is known,
    the time since it started, so the line moves from the first second."""
    done, total = job["done"] or 0, job["total"] or 0
    return {
        "fraction": min(1.0, done / total) if total else 0.0,
        "done": done,
        "total": total,
        "rate": f"{job['rate']:.1f} pages/s" if job["rate"] else f"{duration(elapsed(job))} so far",
        "eta": duration(job["eta"]) + " left" if job["eta"] is not None and job["status"] == "running" else "",
    }


def elapsed(job: sqlite3.Row | dict) -> float:
    """Seconds since the job started (0 when its start cannot be read)."""
    try:
        started = dt.datetime.fromisoformat(job["started_at"])
    except (KeyError, IndexError, TypeError, ValueError):
        return 0.0
    return max(0.0, (dt.datetime.now(dt.timezone.utc) - started).total_seconds())


def duration(seconds: float | None) -> str:
    if seconds is None:
        return ""
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"


# -- opening a page large ---------------------------------------------------------------------


class PageUnavailable(Exception):
    """The page cannot be drawn from its PDF; the message says why, for a person."""


def render_page(manifest: Manifest, doc_id: int, page: int, long_side: int = RENDER_LONG_SIDE) -> bytes:
    """A page drawn fresh from its PDF at high resolution, as JPEG bytes.

    Raises PageUnavailable when the file is gone, changed since it was scored, or unreadable.
    """
    doc = manifest.document(doc_id)
    if doc is None:
        raise PageUnavailable(f"document {doc_id} is not in the manifest")
    return draw_page(doc["path"], doc["size"], page, long_side, roots=_document_roots(manifest, [doc["path"]]))


def draw_page(path: str, scored_size: int, page: int, long_side: int, quality: int = 90, roots=None) -> bytes:
    """Page `page` of the PDF at `path`, `long_side` pixels on its long side, as JPEG bytes; raises
    PageUnavailable when the file is gone, is no longer the `scored_size` bytes it had, is unreadable, or
    (with `roots`) no longer lies under them when opened."""
    try:
        size = os.stat(path).st_size
    except OSError:
        raise PageUnavailable(
            f"The source PDF is no longer at {path}. The thumbnail is all the manifest holds; "
            "ingest the file from its new place to open its pages again."
        ) from None
    if size != scored_size:
        raise PageUnavailable(f"{path} has changed since it was scored; ingest it again to see it as it is now.")
    try:
        with open_document(path, roots) as pdf:
            drawn = pdf[page]
            zoom = min(RENDER_MAX_ZOOM, long_side / max(drawn.rect.width, drawn.rect.height))
            pix = drawn.get_pixmap(matrix=pymupdf.Matrix(zoom, zoom), colorspace=pymupdf.csRGB, alpha=False)
            return pix.tobytes("jpeg", jpg_quality=quality)
    except Exception as exc:  # MuPDF raises plain RuntimeError/ValueError for damaged files
        raise PageUnavailable(f"{path}, page {page_number(page)}, cannot be drawn: {error_text(exc)}") from exc


# -- the rule in words ------------------------------------------------------------------------


def square_inches(area: float) -> str:
    """An area as a person writes it: 2 sq in, 0.35 sq in, 48 sq in."""
    return f"{area:.0f} sq in" if area >= 10 else f"{area:.2g} sq in"


def rule_summary(rule: str, threshold: float, picture_area_min: float) -> str:
    """The rule in a few words, for a sidebar or a header: "picture rule: a picture ≥ 2 sq in"."""
    if rule == "sigma":
        return f"σ only: σ > {threshold:g}"
    if rule == "model":
        return "learned from your overrides"
    return f"picture rule: a picture ≥ {square_inches(picture_area_min)}"


def rule_explanation(rule: str, threshold: float, picture_area_min: float, *, suggestions: int = 0,
                     learned_from: int = 0, unfeatured: int = 0) -> str:
    """What the rule looks at and where it cuts, in a curator's words (Markdown)."""
    picture = (f"it holds a **picture** of at least **{square_inches(picture_area_min)}** and its **ink tone** "
               f"is at least **{INK_TONE_MIN:g}**")
    features = (
        "- *Picture*: ink that is not text, rules or frames. Letters are small and stand in lines beside letters "
        "of their size (a masthead's or headline's big type too); the strokes of an engraving, cartoon, cut or "
        "plate join into shapes far larger than any letter. Its size is the area its strokes cover, in square "
        "inches of the printed page, so the cutoff means the same at any scan resolution: a cartoon or plate "
        "covers 10 sq in and more, a stock cut in an advertisement about 1. Text columns, bleed-through and "
        "dark borders hold none, however high their σ.\n"
        f"- *Ink tone*: how dark the darkest ink is against the paper (0 paper, 1 black); below {INK_TONE_MIN:g} a "
        "page holds only paper grain.\n"
    )
    sigma_stays = (f"- *σ* stays on every page and in its histogram below; **σ only** is the original method "
                   f"(keep where σ > {threshold:g}).")
    if unfeatured:
        sigma_stays += (f" {unfeatured:,} page(s) were scored before these features existed and are decided by "
                        f"σ > {threshold:g} until `python -m curation rescore` measures them.")
    if rule == "sigma":
        return (f"**σ only, the original method.** A page is kept when σ, the spread of its grey levels at 144 dpi, "
                f"is above **{threshold:g}**; your overrides always win.\n\n"
                "Text columns sit around σ 15–30 and engravings at 50–90, but scans fool it: dark scanner-bed "
                "borders, uneven light and bleed-through from the reverse lift text pages to 35–52, and faded "
                "engravings fall to 20–40. The picture share and ink tone are still measured: the picture rule "
                "uses them.")
    if rule == "model":
        if suggestions:
            learned = (f"A small model (logistic regression on σ, σ inside the page, ink tone, ink coverage and "
                       f"picture share) learned from **{learned_from:,}** of your overrides and suggests a decision "
                       "for every page, with its confidence. It does not update by itself: after new overrides, "
                       "press **Learn from my overrides** on Review again.")
        else:
            learned = ("**Nothing is learned yet**, so every page follows the picture rule: press **Learn from my "
                       "overrides** on Review (it needs 10 overrides, both decisions among them).")
        return (f"**Learned from your overrides.** The model's suggestion is the decision of every page you have "
                f"not overruled; pages without a suggestion follow the picture rule, kept when {picture}.\n\n"
                f"- *The model*: every include and exclude you make on Review is a label. {learned}\n"
                f"{features}{sigma_stays}")
    return (f"**Picture rule.** A page is kept when {picture}; your overrides always win.\n\n"
            f"{features}{sigma_stays}")


# -- who did what ----------------------------------------------------------------------------


def page_changes(manifest: Manifest, keys: Iterable[tuple[int, int]]) -> dict[tuple[int, int], str]:
    """Each given page's latest change as a card says it, "excluded by ana, 3 Dec 14:02" (UTC); pages
    nobody changed are absent. One query."""
    return {key: str(change) for key, change in history.latest_page_changes(manifest.conn, keys).items()}


def latest_changes(manifest: Manifest, count: int = 10) -> list[dict]:
    """The latest actions, newest first, as Home lists them: when (UTC), who, what."""
    return [{"When (UTC)": history.short_time(row["at"]), "Who": row["user"], "What": row["description"]}
            for row in history.actions(manifest.conn, limit=count)]


def last_undoable(manifest: Manifest) -> dict | None:
    """The manifest user's latest override or caption action (one page or a bulk one) not undone yet."""
    return history.last_undoable(manifest.conn, manifest.user, ("override", "caption"))


# -- home -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Step:
    page: str  # the page script that does it
    label: str
    why: str


def next_steps(summary: dict, rule_saved: bool, job_running: bool, *, picture_area_min: float = DEFAULT_PICTURE_AREA_MIN,
               suggestions: int = 0) -> list[Step]:
    """What a curator should do next, in workflow order, given what the manifest holds.

    `rule_saved`: whether a rule or cutoff was ever saved; `suggestions`: pages the model suggests for.
    """
    documents = sum(summary["documents"].values())
    if job_running:
        return [Step("pages/ingest.py", "Watch the ingest", "Pages are being scored; figures grow as they arrive.")]
    if documents == 0:
        return [Step("pages/ingest.py", "Add your PDFs", "Upload PDFs or give a folder on the server.")]
    steps = []
    broken = sum(n for status, n in summary["documents"].items() if status not in ("ok", "replaced"))
    if broken:
        steps.append(Step("pages/ingest.py", "Check the documents that did not score fully",
                          f"{broken} document(s) are failed, partial or unfinished; the reasons are listed."))
    rule = summary.get("rule", DEFAULT_RULE)
    in_words = rule_summary(rule, summary["threshold"], picture_area_min)
    if not rule_saved:
        steps.append(Step("pages/threshold.py", "Choose the decision rule and its cutoff",
                          f"Pages are decided by the {in_words[0].lower() + in_words[1:]} (the default). See what "
                          f"it keeps, compare it with σ only, the original method, and look at the pages at the edge."))
    if summary["overrides"] == 0:
        steps.append(Step("pages/review.py", "Review the pages at the edge",
                          "Include the engravings the rule misses, exclude the pages it keeps wrongly; every "
                          "decision you make also teaches the model."))
    elif summary["overrides"] >= learn.MIN_LABELS and not suggestions:
        steps.append(Step("pages/review.py", "Let the model learn from your overrides",
                          f"You have made {summary['overrides']:,} overrides: press Learn from my overrides on "
                          "Review, then look at the pages where the model disagrees with the rule."))
    steps.append(Step("pages/export.py", "Export the training set",
                      f"{summary['kept']:,} pages are kept now ({in_words}, and your overrides)."))
    return steps
