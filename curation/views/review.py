"""Review's grid and its bulk actions: a screenful of pages in SQL order, their captions and latest
changes, what a bulk override or caption would change, and doing it in one statement.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable


import numpy as np

from ..manifest import aggregates, history
from ..manifest.rules import LIVE_DOCUMENT_SQL
from ..manifest.caption_limit import stored_caption
from ..manifest.store import Manifest, now
from ..sources.page_numbers import page_number
from .filters import DECISIONS, PAGES_FROM, PageFilter, _by_keys, _where, decision_params, filter_counts


SORTS = {
    "sigma": ("σ, lowest first", "p.sigma NULLS LAST, p.doc_id, p.page"),  # failed pages last
    "sigma_desc": ("σ, highest first", "p.sigma DESC, p.doc_id, p.page"),
    "page": ("Document and page", "d.path, p.doc_id, p.page"),
    "picture_desc": ("Largest picture first", "p.picture_area DESC NULLS LAST, p.doc_id, p.page"),
}
KEYED_MIN = 2_000  # a screen this deep or deeper in σ order is read by key (from its σ bin), not by OFFSET
DRIVEN_MAX = 20_000  # overridden or failed pages sorted whole for a screen (milliseconds); more are walked in the sort's order
SORT_COLUMNS = {"sigma": "sigma", "sigma_desc": "sigma", "page": "path", "picture_desc": "picture_area"}


def page_rows(manifest: Manifest, threshold: float | None, flt: PageFilter = PageFilter(), sort: str = "sigma",
              limit: int = 40, offset: int = 0, *, rule: str | None = None,
              picture_area_min: float | None = None, total: int | None = None) -> list[dict]:
    """One screenful of pages with their decision, features, suggestion and duplicate group, in SQL order.

    Near-duplicates come group by group, so the reprints of one plate sit side by side. `total`, the
    filter's page count when the caller has it, lets a screen past the middle be read from the end: a
    deep offset walks every page before it (9 s for the last screen of a million pages, 5 ms from the end).
    """
    order = SORTS[sort][1]
    where, params = _where(flt, walk=SORT_COLUMNS[sort])
    bound = {**decision_params(manifest, threshold, rule, picture_area_min), **params}
    pages_from = PAGES_FROM
    if flt.decision == "duplicates":  # driven from the duplicate groups, a few thousand rows at most
        pages_from = PAGES_FROM.replace("FROM pages p JOIN", "FROM duplicates g CROSS JOIN pages p "
                                        "ON p.doc_id = g.doc_id AND p.page = g.page JOIN", 1)
        order = f"g.group_id, {order}"
    elif flt.decision == "overridden" and total is not None and total <= DRIVEN_MAX:
        # a few overridden pages among millions: sorted from the overrides, not found along the sort's walk
        pages_from = PAGES_FROM.replace("FROM pages p JOIN documents d ON d.id = p.doc_id LEFT JOIN overrides o ON "
                                        "o.doc_id = p.doc_id AND o.page = p.page", "FROM overrides o CROSS JOIN pages p "
                                        "ON p.doc_id = o.doc_id AND p.page = o.page JOIN documents d ON d.id = p.doc_id", 1)
    elif flt.decision == "failed" and total is not None and total <= DRIVEN_MAX:
        # a few failed pages among millions: sorted from their own index, not found at the end of the sort's walk
        pages_from = PAGES_FROM.replace("FROM pages p", "FROM pages p INDEXED BY pages_failed", 1)
    elif sort == "page":  # documents by their path's index, each one's pages by the key: no sort of every page
        pages_from = PAGES_FROM.replace("FROM pages p JOIN documents d ON d.id = p.doc_id",
                                        "FROM documents d CROSS JOIN pages p ON p.doc_id = d.id", 1)
    # Two steps: the screen's pages by rowid first, through the joins the filter needs and no more
    # (a deep offset walks every page before it), then those pages in full.
    walk, skip, take = order, int(offset), int(limit)
    seek = _sigma_seek(manifest, flt, sort, skip, take)
    if seek is not None:  # by key: from the σ bin that holds the screen, whatever its depth
        where, skip = f"{where} AND {seek[0]}", seek[1]
        bound["seek"] = seek[2]
    elif total is not None and offset > total / 2:
        walk, skip = reversed_order(order), max(0, total - offset - limit)
        take = max(0, min(limit, total - offset))
    rowids = [row[0] for row in manifest.conn.execute(
        f"SELECT p.rowid {pages_from} {where} ORDER BY {walk} LIMIT {take} OFFSET {skip}", bound)]
    if not rowids:
        return []
    rows = manifest.pages(threshold, where=f"p.rowid IN ({', '.join(map(str, rowids))})", params=bound, order=order,
                          rule=rule)
    return [dict(row) for row in rows]


def _sigma_seek(manifest: Manifest, flt: PageFilter, sort: str, offset: int, limit: int) -> tuple[str, int, float] | None:
    """A deep screen of every page in σ order addressed by key: (the condition that starts the walk at the σ bin
    holding page `offset`, the offset left within it, the σ it starts at); None where a screen is not addressed
    so (another filter, a shallow offset, a screen reaching the pages without σ). The bins (aggregates) count
    the pages before the bin; the few pages on its edge that a float puts in the bin beside are counted
    exactly, so the screen is the one OFFSET would read."""
    if sort not in ("sigma", "sigma_desc") or offset < KEYED_MIN or (flt.decision, flt.doc_id, flt.page) != ("all", None, None):
        return None
    binned = aggregates.bins(manifest)
    scored = binned.sigma_bin >= 0
    pages = np.bincount(binned.sigma_bin[scored], weights=binned.pages[scored]).astype(np.int64)
    if offset + limit > pages.sum():
        return None
    descending = sort == "sigma_desc"
    walked = np.cumsum(pages[::-1] if descending else pages)
    step = int(np.searchsorted(walked, offset, side="right"))  # the bin holding page `offset`, in walk order
    first = len(pages) - step if descending else step  # the bin after it (descending) or it (ascending)
    edge = first / aggregates.SIGMA_STEPS
    before = int(pages[first:].sum()) if descending else int(pages[:first].sum())
    # Pages a float put in the bin beside `edge`: binned at or above it but below it, or the other way round.
    moved = manifest.conn.execute(
        f"SELECT COALESCE(SUM(CASE WHEN {aggregates.SIGMA_BIN_SQL} >= :bin AND p.sigma < :edge THEN 1 "
        f"WHEN {aggregates.SIGMA_BIN_SQL} < :bin AND p.sigma >= :edge THEN -1 ELSE 0 END), 0) "
        f"FROM pages p JOIN documents d ON d.id = p.doc_id WHERE {LIVE_DOCUMENT_SQL} "
        "AND p.sigma >= :edge - 1e-6 AND p.sigma < :edge + 1e-6", {"bin": first, "edge": edge}).fetchone()[0]
    before += -moved if descending else moved
    return ("p.sigma < :seek" if descending else "p.sigma >= :seek"), offset - before, edge


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


def captions_for(manifest: Manifest, keys: Iterable[tuple[int, int]]) -> dict[tuple[int, int], str]:
    """The captions of the given (doc_id, page) pairs (pages without one are absent), in one query."""
    return _by_keys(manifest, "captions", "text", keys)


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
    with manifest.recording("override", view_note(manifest, flt)) as action, _bulk_pages(manifest, threshold, flt,
                                                                                           rule, picture_area_min) as count:
        write_overrides(manifest, action, "temp.bulk_pages", keep)
    return count


def write_overrides(manifest: Manifest, action: int, keys: str, keep: bool | None) -> None:
    """Include, exclude or clear the pages of the table `keys` (doc_id, page), recorded under `action`."""
    new = None if keep is None else int(bool(keep))
    history.record_pages(manifest.conn, action, "override", keys, new)
    if new is None:
        manifest.conn.execute(f"DELETE FROM overrides WHERE (doc_id, page) IN (SELECT doc_id, page FROM {keys})")
    else:
        stamp = now()
        manifest.conn.execute(
            "INSERT INTO overrides (doc_id, page, keep, created_at, updated_at) "
            f"SELECT doc_id, page, ?, ?, ? FROM {keys} WHERE true "
            "ON CONFLICT(doc_id, page) DO UPDATE SET keep = excluded.keep, updated_at = excluded.updated_at",
            (new, stamp, stamp),
        )


@contextlib.contextmanager
def _bulk_pages(manifest: Manifest, threshold: float | None, flt: PageFilter, rule: str | None,
                picture_area_min: float | None, extra: str = ""):
    """The filter's pages (and `extra`'s condition) as temp.bulk_pages (doc_id, page) while the block runs,
    taken once before anything changes; yields how many there are. Call inside a transaction."""
    try:
        yield bulk_pages_table(manifest, "bulk_pages", threshold, flt, rule, picture_area_min, extra)
    finally:
        manifest.conn.execute("DROP TABLE IF EXISTS temp.bulk_pages")


def bulk_pages_table(manifest: Manifest, name: str, threshold: float | None, flt: PageFilter, rule: str | None,
                     picture_area_min: float | None, extra: str = "") -> int:
    """The filter's pages (and `extra`'s condition) taken once as the temporary table `name` (doc_id, page, in
    the order of its rowid); how many there are."""
    where, params = _where(flt)
    bound = {**decision_params(manifest, threshold, rule, picture_area_min), **params}
    manifest.conn.execute(f"DROP TABLE IF EXISTS temp.{name}")
    manifest.conn.execute(f"CREATE TEMP TABLE {name} AS SELECT p.doc_id, p.page {PAGES_FROM} {where} {extra}", bound)
    return manifest.conn.execute(f"SELECT COUNT(*) FROM temp.{name}").fetchone()[0]


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
    """Pages in the filter (filter_counts), and how many of them have a caption already (from the captions)."""
    where, params = _where(flt)
    pages = filter_counts(manifest, threshold, flt, rule=rule, picture_area_min=picture_area_min)["pages"]
    captioned = manifest.conn.execute(
        f"SELECT COUNT(*) {CAPTIONED_FROM} {where}",
        {**decision_params(manifest, threshold, rule, picture_area_min), **params}).fetchone()[0]
    return {"pages": pages, "captioned": captioned}


# The captioned pages with the joins of PAGES_FROM, driven from the captions (fewer than the pages).
CAPTIONED_FROM = PAGES_FROM.replace("FROM pages p JOIN", "FROM captions c0 CROSS JOIN pages p "
                                    "ON p.doc_id = c0.doc_id AND p.page = c0.page JOIN", 1)


def bulk_caption(manifest: Manifest, threshold: float | None, flt: PageFilter, text: str | None, *,
                 replace: bool = True, rule: str | None = None, picture_area_min: float | None = None) -> int:
    """Give every page in the filter the caption `text` (blank removes captions), in one transaction, recorded
    as one action (undone in one step).

    With `replace` false, pages that have a caption keep it. Returns how many pages were set.
    """
    with manifest.recording("caption", view_note(manifest, flt)) as action, _bulk_pages(
            manifest, threshold, flt, rule, picture_area_min, caption_condition(replace)) as count:
        write_captions(manifest, action, "temp.bulk_pages", text)
    return count


def caption_condition(replace: bool) -> str:
    """Which pages of a view a bulk caption writes: all, or (not `replace`) those without a caption."""
    return "" if replace else f"AND NOT {CAPTIONED_SQL}"


def write_captions(manifest: Manifest, action: int, keys: str, text: str | None) -> None:
    """Give the pages of the table `keys` (doc_id, page) the caption `text` (blank removes), under `action`."""
    text = stored_caption(text)
    history.record_pages(manifest.conn, action, "caption", keys, text)
    if text is None:
        manifest.conn.execute(f"DELETE FROM captions WHERE (doc_id, page) IN (SELECT doc_id, page FROM {keys})")
    else:
        manifest.conn.execute(
            f"INSERT INTO captions (doc_id, page, text, updated_at) SELECT doc_id, page, ?, ? FROM {keys} WHERE true "
            "ON CONFLICT(doc_id, page) DO UPDATE SET text = excluded.text, updated_at = excluded.updated_at",
            (text, now()))


def documents_for_filter(manifest: Manifest) -> list[dict]:
    """Live documents that have pages, for the document filter: id, path and page count."""
    rows = manifest.conn.execute(
        f"SELECT d.id, d.path, d.pages FROM documents d WHERE {LIVE_DOCUMENT_SQL} "
        "AND EXISTS (SELECT 1 FROM pages p WHERE p.doc_id = d.id) ORDER BY d.path"
    )
    return [dict(row) for row in rows]


def page_changes(manifest: Manifest, keys: Iterable[tuple[int, int]]) -> dict[tuple[int, int], str]:
    """Each given page's latest change as a card says it, "excluded by ana, 3 Dec 14:02" (UTC); pages
    nobody changed are absent. One query."""
    return {key: str(change) for key, change in history.latest_page_changes(manifest.conn, keys).items()}


def latest_changes(manifest: Manifest, count: int = 10) -> list[dict]:
    """The latest actions, newest first, as Home lists them: when (UTC), who, what."""
    return [{"When (UTC)": history.short_time(row["at"]), "Who": row["user"], "What": row["description"]}
            for row in history.actions(manifest.conn, limit=count)]


def latest_change(manifest: Manifest) -> int:
    """Changes with every change anyone makes by hand (an action of the history): whether a screen drawn
    before is still as the manifest is."""
    return history.latest_id(manifest.conn)


def last_undoable(manifest: Manifest) -> dict | None:
    """The manifest user's latest override, caption or picture action (one or a bulk one) not undone yet."""
    return history.last_undoable(manifest.conn, manifest.user, ("override", "caption", "picture"))
