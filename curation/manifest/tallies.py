"""Exact counts of pages by decision at any cutoff (`tally`): the sums of the manifest's bins (curation.manifest.
aggregates), with the pages a bin cannot decide alone read one by one through their indexes and counted with
KEEP_SQL itself: those in the bins beside a cutoff, and the pages a curator decided (an override, or picture
edits: `decided`), followed after each change by the pages the history says were changed.
"""

from __future__ import annotations

import math
import sqlite3
from dataclasses import dataclass

import numpy as np

from .aggregates import (AREA_BIN_SQL, AREA_BINS, AREA_FLOOR, AREA_STEPS, KIND_SQL, SIGMA_BIN_SQL, SIGMA_STEPS,
                         _memo_lock, _snapshot, area_bin, bins, ensure_log10, sigma_bin, version)
from .rules import DISAGREES_SQL, INK_TONE_MIN, KEEP_SQL, LIVE_DOCUMENT_SQL


_DISAGREES_SQL = f"o.keep IS NULL AND {DISAGREES_SQL.replace(':rule', ':base_rule')}"


@dataclass(frozen=True)
class Tally:
    """Pages weighed one row each: the bins, less the pages read one by one, plus those pages exactly."""

    sigma_bin: np.ndarray
    area_bin: np.ndarray
    failed: np.ndarray
    keep: np.ndarray  # bool
    disagrees: np.ndarray  # bool: the model and the rule differ on a page without an override
    override: np.ndarray  # 1 include, 0 exclude, -1 none
    weight: np.ndarray

    def mask(self, decision: str) -> np.ndarray:
        return {"all": np.ones(len(self.weight), bool), "kept": self.keep, "rejected": ~self.keep,
                "overridden": self.override >= 0, "disagrees": self.disagrees, "failed": self.failed}[decision]

    def counts(self, decision: str | np.ndarray = "all") -> dict:
        """Review's filter counts: pages, kept, overridden (included, excluded), failed; of a decision, or
        of the rows a mask selects."""
        mask, w = (self.mask(decision) if isinstance(decision, str) else decision), self.weight
        total = lambda m: int(w[mask & m].sum())  # noqa: E731
        pages = int(w[mask].sum())
        kept = total(self.keep)
        return {"pages": pages, "kept": kept, "overridden": total(self.override >= 0),
                "included": total(self.override == 1), "excluded": total(self.override == 0),
                "failed": total(self.failed), "rejected": pages - kept}

    def by_bin(self, column: str, to_bin, bins: int) -> tuple[np.ndarray, np.ndarray]:
        """Pages and kept pages per display bin of `column` ('sigma_bin' or 'area_bin'); `to_bin` maps
        fine bins to display bins. Pages without the figure are left out."""
        fine = getattr(self, column)
        has = fine >= 0
        index = np.clip(to_bin(fine[has]), 0, bins - 1)
        weight = self.weight[has]
        total = np.bincount(index, weights=weight, minlength=bins).astype(np.int64)
        kept = np.bincount(index, weights=weight * self.keep[has], minlength=bins).astype(np.int64)
        return total, kept


def _decisions(params: dict, sb, ab, kind, model) -> tuple[np.ndarray, np.ndarray]:
    """Each row's decision and whether the model disagrees with the rule, from its bins (exact away from
    the bins beside the cutoffs)."""
    by_sigma = (sb >= 0) & (sb > sigma_cut(params["threshold"])[0])
    by_area = (ab >= 0) & (ab > area_cut(params["picture_area_min"])[0])
    picture = np.where(kind == 0, by_sigma, np.where(kind == 1, by_area, np.where(kind == 3, by_area & by_sigma, False)))
    rule = params["rule"]
    base = by_sigma if params["base_rule"] == "sigma" else picture
    keep = np.where(model >= 0, model == 1, picture) if rule == "model" else (by_sigma if rule == "sigma" else picture)
    return keep.astype(bool), (model >= 0) & ((model == 1) != base)


SIGMA_EDGE = 1e-6  # a σ this near a cutoff may fall in the bin on either side of it, as its float rounds


def sigma_cut(threshold: float) -> tuple[int, float, float]:
    """How the bins guess a σ cutoff: pages in bins above the first number are guessed kept, and those with a σ
    from the second to the third (excluded) are read apart, as the guess may be wrong for them. A cutoff on a
    bin's edge (every σ the slider sets: tenths) keeps the bins from that edge up and reads only the pages
    within SIGMA_EDGE of it (at 4 M pages a tenth of σ holds thousands: a tenth of a second to read);
    any other cutoff reads the whole bin that holds it."""
    edge = round(threshold * SIGMA_STEPS)
    if abs(threshold * SIGMA_STEPS - edge) < 1e-9:
        return edge - 1, threshold - SIGMA_EDGE, threshold + SIGMA_EDGE
    held = sigma_bin(threshold)
    return held, held / SIGMA_STEPS - SIGMA_EDGE, (held + 1) / SIGMA_STEPS + SIGMA_EDGE


AREA_EDGE = 1e-6  # relative: an area this near a bin's edge or a cutoff may fall on either side of it


def area_cut(minimum: float) -> tuple[int, float, float]:
    """As sigma_cut, for the picture cutoff: pages in bins above the first number are guessed kept, and those with
    an area from the second to the third (excluded) are read apart. The bin holding the cutoff is guessed the way
    most of it lies (log bins, whose edges the slider never sets), so only the part between the cutoff and the
    bin's nearer edge is read: half a bin at most. The open-ended bins at either end are read whole."""
    held = area_bin(minimum)
    if held <= 0 or held >= AREA_BINS - 1:
        return held, -1.0 if held <= 0 else _area_edge(held) * (1 - AREA_EDGE), \
            1e308 if held >= AREA_BINS - 1 else _area_edge(held + 1) * (1 + AREA_EDGE)
    lower, upper = _area_edge(held), _area_edge(held + 1)
    if math.log(minimum / lower) < math.log(upper / minimum):  # nearer the lower edge: the bin guessed kept
        return held - 1, lower * (1 - AREA_EDGE), minimum * (1 + AREA_EDGE)
    return held, minimum * (1 - AREA_EDGE), upper * (1 + AREA_EDGE)


def _area_edge(n: int) -> float:
    return 10 ** (math.log10(AREA_FLOOR) + n / AREA_STEPS)


def tally(manifest, params: dict) -> Tally:
    """Every live page weighed once under the decision `params` (views.decision_params): exact counts.
    The last few are kept in memory while nothing they count changed."""
    if params["ink_tone_min"] != INK_TONE_MIN:
        raise ValueError("the bins are counted at the rule's ink tone")
    now = version(manifest.conn)
    key = (str(manifest.path), now, tuple(sorted(params.items())))
    with _memo_lock:
        found = _tallies.get(key)
    if found is None:
        found = _tally(manifest, params, now)
        with _memo_lock:
            for stale in [k for k in _tallies if k[0] == key[0] and k[1] != now]:  # counted before a change
                del _tallies[stale]
            _tallies[key] = found
            while len(_tallies) > TALLIES_KEPT:
                del _tallies[next(iter(_tallies))]
    return found


TALLIES_KEPT = 8  # a tally holds a row per distinct bin and decision (_compacted): under a megabyte each
_tallies: dict[tuple, Tally] = {}
_decided: dict[str, "_Decided"] = {}


def _tally(manifest, params: dict, now: tuple) -> Tally:
    found = bins(manifest)
    keep, disagrees = _decisions(params, found.sigma_bin, found.area_bin, found.kind, found.model)
    record = _decided_record(manifest, now)
    pages = record.pages
    apart = [_exactly(pages, params), _undecided(_at_the_cutoffs(manifest, params, now[:2]), record.keys)]
    parts = [(found.sigma_bin, found.area_bin, found.failed, keep, disagrees, np.full(len(keep), -1), found.pages)]
    for one in apart:  # each page read apart: its bin's guess taken back, its exact decision added
        guess, guessed_disagree = _decisions(params, one["sigma_bin"], one["area_bin"], one["kind"], one["model"])
        count = len(guess)
        parts.append((one["sigma_bin"], one["area_bin"], one["failed"], guess, guessed_disagree,
                      np.full(count, -1), -np.ones(count, np.int64)))
        parts.append((one["sigma_bin"], one["area_bin"], one["failed"], one["keep"], one["disagrees"], one["override"],
                      np.ones(count, np.int64)))
    return _compacted([np.concatenate(column) for column in zip(*parts)])


def _compacted(columns: list[np.ndarray]) -> Tally:
    """The tally of `columns` (sigma_bin, area_bin, failed, keep, disagrees, override, weight) with the rows
    that differ only in weight summed into one and those that sum to nothing dropped: every count reads
    the rows by these columns alone, so it is the same, and a bulk action's half a million decided pages
    (a row each, twice) fold into the few thousand bins they fall in."""
    sigma, area, failed, keep, disagrees, override, weight = columns
    code = (((((sigma.astype(np.int64) + 1) * (AREA_BINS + 1) + area + 1) * 2 + failed) * 2 + keep) * 2
            + disagrees) * 3 + override + 1
    code, inverse = np.unique(code, return_inverse=True)
    summed = np.bincount(inverse.ravel(), weights=weight, minlength=len(code)).round().astype(np.int64)
    code, summed = code[summed != 0], summed[summed != 0]
    override, code = code % 3 - 1, code // 3
    disagrees, code = code % 2, code // 2
    keep, code = code % 2, code // 2
    failed, code = code % 2, code // 2
    area, sigma = code % (AREA_BINS + 1) - 1, code // (AREA_BINS + 1) - 1
    return Tally(sigma, area, failed.astype(bool), keep.astype(bool), disagrees.astype(bool), override, summed)


_BINS_SELECT = (f"SELECT COALESCE({SIGMA_BIN_SQL}, -1), "
                f"CASE WHEN p.picture_area IS NULL THEN -1 ELSE {AREA_BIN_SQL} END, {KIND_SQL}, COALESCE(sg.keep, -1), "
                "p.status = 'failed'")
_JOINS = ("FROM pages p JOIN documents d ON d.id = p.doc_id "
          "LEFT JOIN overrides o ON o.doc_id = p.doc_id AND o.page = p.page "
          "LEFT JOIN suggestions sg ON sg.doc_id = p.doc_id AND sg.page = p.page")
_BIN_NAMES = ("sigma_bin", "area_bin", "kind", "model", "failed")


def decided(manifest, now: tuple | None = None) -> dict:
    """The pages a curator decided (an override, or picture edits) with their bins and the figures their
    decision reads, as arrays (NaN for NULL). Read in full once while the pages' figures and the suggestions
    stay; after that, a change is followed by the pages the history says were changed since (every override
    and picture edit is recorded there, in its transaction), read by key: one page's override costs one page."""
    return _decided_record(manifest, now).pages


def _decided_record(manifest, now: tuple | None = None) -> "_Decided":
    conn = manifest.conn
    now = now or version(conn)
    with _memo_lock:
        found = _decided.get(str(manifest.path))
    if found is not None and found.base == now[:2] and found.counter == now[2]:
        return found
    ensure_log10(conn)
    with _snapshot(conn):
        counter = version(conn)[2]
        last = conn.execute("SELECT COALESCE(MAX(rowid), 0) FROM history_changes").fetchone()[0]
        pages = None
        # Many changes since (a bulk action) are read faster with every decided page than by key.
        if found is not None and found.base == now[:2] and last - found.last_change <= len(found.pages["page"]) // 4 + 5000:
            pages = _followed(conn, found, last)
        if pages is None:
            with _memo_lock:  # read in full: the old arrays go first (at 4 M pages, a bulk action's 100 MB)
                _decided.pop(str(manifest.path), None)
            found = None
            pages = _decided_pages(conn, "SELECT p2.rowid FROM overrides o2 CROSS JOIN pages p2 "
                                   "ON p2.doc_id = o2.doc_id AND p2.page = o2.page "
                                   "UNION SELECT rowid FROM pages WHERE pictures_included IS NOT NULL")
    kept = _Decided(now[:2], counter, last, pages, np.sort(_page_key(pages["doc_id"], pages["page"])))
    with _memo_lock:
        _decided[str(manifest.path)] = kept
    return kept


@dataclass(frozen=True)
class _Decided:
    base: tuple  # the pages' and the suggestions' counters the pages were read at
    counter: int  # the 'decided' counter
    last_change: int  # the history's last change read
    pages: dict
    keys: np.ndarray  # the pages' keys (_page_key), sorted


READ_ROWS = 20_000  # decided pages turned into an array at a time (_decided_pages)
_DECIDED_NAMES = (*_BIN_NAMES, "override", "sigma", "picture_area", "ink_tone", "pictures_included", "auto_area",
                  "doc_id", "page", "ok")


def _decided_pages(conn: sqlite3.Connection, rowids: str, params: tuple = ()) -> dict:
    """The decided pages among the pages `rowids` (a query) selects, as decided() gives them."""
    cursor = conn.cursor()
    cursor.row_factory = None
    cursor.execute(
        f"{_BINS_SELECT}, COALESCE(o.keep, -1), p.sigma, p.picture_area, p.ink_tone, p.pictures_included, "
        f"p.pictures_auto_area, p.doc_id, p.page, p.status = 'ok' {_JOINS} WHERE {LIVE_DOCUMENT_SQL} "
        f"AND (o.keep IS NOT NULL OR p.pictures_included IS NOT NULL) AND p.rowid IN ({rowids})", params)
    # A part at a time, each part's columns in their own type: half a million rows as Python tuples would take
    # about 300 MB at once, as one table of floats 60 MB.
    parts = [_typed(np.array(rows, np.float64).reshape(-1, len(_DECIDED_NAMES)))
             for rows in iter(lambda: cursor.fetchmany(READ_ROWS), [])]  # None: NaN
    if not parts:
        return _typed(np.empty((0, len(_DECIDED_NAMES))))
    return {name: np.concatenate([part[name] for part in parts]) for name in _DECIDED_NAMES}


# The decided pages' columns that are not figures (float64, NaN for NULL): small whole numbers and flags.
_DECIDED_TYPES = {"sigma_bin": np.int32, "area_bin": np.int32, "kind": np.int8, "model": np.int8, "failed": bool,
                  "override": np.int8, "doc_id": np.int64, "page": np.int32, "ok": bool}


def _typed(table: np.ndarray) -> dict:
    return {name: table[:, i].astype(_DECIDED_TYPES.get(name, np.float64))
            for i, name in enumerate(_DECIDED_NAMES)}


def _followed(conn: sqlite3.Connection, known: _Decided, last: int) -> dict | None:
    """`known`'s pages brought up to date with the pages the history changed after its last change; None
    when the counter moved without a recorded change (a writer that does not record: read them all)."""
    changed = "SELECT DISTINCT doc_id, page FROM history_changes WHERE rowid > ? AND rowid <= ? AND doc_id IS NOT NULL"
    keys = np.array(conn.execute(changed, (known.last_change, last)).fetchall(), np.int64).reshape(-1, 2)
    if not len(keys):
        return None
    fresh = _decided_pages(conn, f"SELECT p2.rowid FROM ({changed}) k CROSS JOIN pages p2 "
                                 "ON p2.doc_id = k.doc_id AND p2.page = k.page", (known.last_change, last))
    pages = known.pages
    stay = ~_among(_page_key(pages["doc_id"], pages["page"]), np.sort(_page_key(keys[:, 0], keys[:, 1])))
    return {name: np.concatenate([pages[name][stay], fresh[name]]) for name in _DECIDED_NAMES}


def _page_key(doc_id: np.ndarray, page: np.ndarray) -> np.ndarray:
    return doc_id.astype(np.int64) << 32 | page.astype(np.int64)


def _among(keys: np.ndarray, sorted_keys: np.ndarray) -> np.ndarray:
    """Which of `keys` are in `sorted_keys`: a binary search each, where np.isin would hash both arrays
    (a sixth of a second for half a million decided pages)."""
    if not len(sorted_keys):
        return np.zeros(len(keys), bool)
    at = np.minimum(np.searchsorted(sorted_keys, keys), len(sorted_keys) - 1)
    return sorted_keys[at] == keys


def _exactly(pages: dict, params: dict) -> dict:
    """KEEP_SQL and the model's disagreement, in NumPy with SQL's NULLs, for the pages a curator decided."""
    sigma, area, ink, model = pages["sigma"], pages["picture_area"], pages["ink_tone"], pages["model"]
    with np.errstate(invalid="ignore"):
        by_sigma = sigma > params["threshold"]  # NULL (NaN) counts as no
        inked = ink >= params["ink_tone_min"]
        big = area >= params["picture_area_min"]
        auto = (pages["auto_area"] >= params["picture_area_min"]) & inked
        included = pages["pictures_included"] > 0
    said_no = (~np.isnan(area) & ~big) | (~np.isnan(ink) & ~inked)  # FALSE AND NULL is FALSE
    picture = np.where(big & inked, True, np.where(said_no, False, by_sigma))  # COALESCE(area AND ink, σ)
    suggested = model >= 0
    rule = params["rule"]
    if rule == "sigma":
        ruled, edited = by_sigma, by_sigma
    elif rule == "model":
        ruled, edited = np.where(suggested, model == 1, picture), np.where(suggested, model == 1, auto)
    else:
        ruled, edited = picture, auto
    base = by_sigma if params["base_rule"] == "sigma" else picture
    override = pages["override"]
    keep = np.where(override >= 0, override == 1,
                    np.where(~np.isnan(pages["pictures_included"]), included | edited, ruled))
    return {**{name: pages[name] for name in _BIN_NAMES}, "override": override, "keep": keep.astype(bool),
            "disagrees": (override < 0) & suggested & ((model == 1) != base)}


def _undecided(pages: dict, decided_keys: np.ndarray) -> dict:
    """`pages` less those a curator decided (counted apart; their keys sorted)."""
    stay = ~_among(_page_key(pages["doc_id"], pages["page"]), decided_keys)
    return {name: column[stay] for name, column in pages.items()}


def _at_the_cutoffs(manifest, params: dict, base: tuple) -> dict:
    """The pages in the bins beside the σ cutoff (and the picture cutoff, where the rule reads it), with
    their bins, keys and exact decision, each found through an index; kept in memory while the pages'
    figures and the suggestions (`base`) stay, so an override does not read them again."""
    key = (str(manifest.path), base, tuple(sorted(params.items())))
    with _memo_lock:
        found = _cutoffs.get(key)
    if found is None:
        found = _read_the_cutoffs(manifest, params)
        with _memo_lock:
            _cutoffs[key] = found
            while len(_cutoffs) > TALLIES_KEPT:
                del _cutoffs[next(iter(_cutoffs))]
    return found


_cutoffs: dict[tuple, dict] = {}


def _read_the_cutoffs(manifest, params: dict) -> dict:
    ensure_log10(manifest.conn)
    # Only the pages at each cutoff are guessed wrong, those sigma_cut and area_cut name (with a margin far wider
    # than the float error); any more are read in vain, and there are a page count / bins of them.
    _, s_lo, s_hi = sigma_cut(params["threshold"])
    ranges = {"s_lo": s_lo, "s_hi": s_hi, "a_lo": 1.0, "a_hi": 0.0}
    if params["rule"] != "sigma":
        _, ranges["a_lo"], ranges["a_hi"] = area_cut(params["picture_area_min"])
    cursor = manifest.conn.cursor()
    cursor.row_factory = None
    rows = cursor.execute(
        f"{_BINS_SELECT}, {KEEP_SQL}, COALESCE({_DISAGREES_SQL}, 0), p.doc_id, p.page {_JOINS} "
        f"WHERE {LIVE_DOCUMENT_SQL} AND p.rowid IN ("
        "SELECT rowid FROM pages WHERE sigma >= :s_lo AND sigma < :s_hi "
        "UNION SELECT rowid FROM pages WHERE picture_area >= :a_lo AND picture_area < :a_hi)",
        {**params, **ranges},
    ).fetchall()
    table = np.array(rows, np.int64).reshape(-1, 9)
    one = {name: table[:, i] for i, name in enumerate((*_BIN_NAMES, "keep", "disagrees", "doc_id", "page"))}
    for name in ("failed", "keep", "disagrees"):
        one[name] = one[name].astype(bool)
    one["override"] = np.full(len(table), -1, np.int64)
    return one
