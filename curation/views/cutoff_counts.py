"""The pictures a decision being tried on Threshold keeps, at any σ and area cutoff on the sliders' grids, as a
lookup rather than a query, and Threshold's picture figures built on it (`picture_figures`).

A picture's decision (rules.EXPORTED_SQL) reads the σ cutoff only as `p.sigma > :threshold` and the area cutoff
only as `X >= :picture_area_min` for a few areas X (its own, its page's largest, its edited page's largest left
to the rule), in AND, OR and COALESCE, never negated. Under one rule and score cutoff it is therefore
`a <= key AND (not needs_sigma OR σ > t)`: a key in square inches (NULL: never kept) and whether σ counts (`key_sql`
spells it out, overrides, picture edits and the model's suggestions included). One scan counts the pictures by
(σ cell, key cell) on the sliders' grids (σ in tenths, the area in hundredths of a square inch up to the number
input's 1,000), after which any cutoff on the grid is a sum of a suffix: microseconds.

A rule's table has two parts: every picture the scoring found as the rule alone decides it (counted again only
when the pages' counter moves, i.e. a scoring, or the saved score cutoff, or for the model a new fit: seconds at a
million pictures), and the pages curators decided, as decided minus as the rule alone (after a person's recorded
change only the changed documents are counted again). Every rule's parts are counted where they change, in the
job that changes them (ingest, rescore, learn, a bulk action: `counted_after_job`), or by the counting job the
Threshold page launches where they are missing (`python -m curation cutoffs`, `count_job`), and stored in the
manifest (`cutoff_parts`, a row a rule and part, with the state it was counted at), where every process reads
them; this process keeps the latest in memory. A script run on a large manifest never scans (`count=False`): it
reads the stored parts, follows the curators' recorded changes of a few documents, and otherwise leaves the
counting to the job; meanwhile a move under the saved rule is counted from the pictures between the two
cutoffs. A cutoff off the grid returns None (the caller counts another way).

A score cutoff being tried moves the count by the pictures of the pages holding a picture scored between the
saved and the tried cutoff (their admission and their page's largest picture are all it changes), found through
the scores' index, as the settings' triggers find them; the pages' kept count moves the same way (`pages_kept`).
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass

import numpy as np

from ..manifest import aggregates, picture_decisions, tallies
from ..manifest.aggregates import _snapshot
from ..manifest.rules import EXPORTED_SQL, LIVE_DOCUMENT_SQL
from ..manifest.store import Manifest
from . import picture_views
from .cutoff_keys import AREA_GRID, AREA_TOP, KEY_BITS, SIGMA_BITS, SIGMA_GRID, SIGMA_TOP, cells_sql, key_sql
from .filters import decision_params
from .threshold import SCORED_BETWEEN_SQL, moved_by_score

@dataclass(frozen=True)
class Table:
    """Kept pictures by cutoff: `by_area[k]`, the pictures σ does not decide whose key is at least the k-th
    area cutoff; `both`, the others' (σ cell, key cell, count)."""

    by_area: np.ndarray  # suffix sums over key cells: kept at area cutoff k is by_area[k + 1]
    both: np.ndarray  # rows of (s_cell, k_cell, pictures)
    pictures: int  # every picture counted (not deleted, on pages scored 'ok' of live documents)

    def kept(self, sigma_step: int, area_step: int) -> int:
        sigma_cells, key_cells, counts = self.both.T if len(self.both) else (np.zeros(0),) * 3
        return int(self.by_area[area_step + 1]) + int(
            counts[(key_cells > area_step) & (sigma_cells > sigma_step)].sum())


def grid_step(value: float, per_unit: int, top: int | None = None) -> int | None:
    """The grid step a cutoff is on (the slider's and number input's values), or None when it is between steps."""
    step = round(value * per_unit)
    if step < 0 or (top is not None and step > top) or step / per_unit != value:
        return None
    return step


def _cells(manifest, rule: str, part: str, docs: str = "") -> np.ndarray:
    """cells_sql's rows (document, packed cells, pictures) as an array of 32-bit integers, read a part at a time:
    the curators' part is a row a picture at worst, and a million rows as Python tuples take 200 MB at once."""
    cursor = manifest.conn.execute(cells_sql(rule, part, docs), manifest.decision_params(rule=rule))
    parts = [np.array(rows, dtype=np.int32).reshape(-1, 3) for rows in iter(lambda: cursor.fetchmany(READ_ROWS), [])]
    return np.concatenate(parts) if parts else np.zeros((0, 3), np.int32)


def _as_table(rows: np.ndarray) -> Table:
    # The curators' part has a row per document and cell: summed by cell, the table keeps a row per cell (at 4 M
    # pages σ only's would otherwise hold a million rows, 23 MB, and each count would read them all).
    code, inverse = np.unique(rows[:, 1], return_inverse=True)
    counts = np.bincount(inverse.ravel(), weights=rows[:, 2], minlength=len(code)).round().astype(np.int64)
    needs, key_cells = code >> (SIGMA_BITS + KEY_BITS), code & ((1 << KEY_BITS) - 1)
    sigma_cells = (code >> KEY_BITS) & ((1 << SIGMA_BITS) - 1)
    alone = needs == 0
    cells = np.bincount(key_cells[alone], weights=counts[alone], minlength=AREA_TOP + 2).astype(np.int64)
    suffix = np.concatenate([np.cumsum(cells[::-1])[::-1], [0]])
    both = np.stack([sigma_cells[~alone], key_cells[~alone], counts[~alone]], axis=1).astype(np.int64)
    return Table(suffix, both[both[:, 2] != 0], int(counts.sum()))


_parts: dict[tuple, np.ndarray] = {}
_counting: dict[tuple, threading.Lock] = {}
_tables: dict[tuple, Table] = {}  # the last table of each manifest and rule, put together from its parts
_lock = threading.Lock()
READ_ROWS = 50_000  # rows turned into an array at a time (_cells)
KEPT_PARTS = 12  # each rule's two parts, for two manifests or states: small arrays (rows of distinct cells)


def _part(manifest, rule: str, part: str, now: tuple, count: bool = True) -> np.ndarray | None:
    """A part's cells for the manifest as it is `now`: from this process's memory, or as the counting job stored
    it in the manifest; for the curators' part after their recorded changes, that of the other documents and those
    they changed counted again (their decided pages: milliseconds a document); else, with `count`, one pass, and
    without it None (a scan is the job's: a script run never makes one)."""
    key = (str(manifest.path), rule, part, now)
    with _lock:
        counting = _counting.setdefault(key[:3], threading.Lock())
    with counting:  # one count of a part at a time: a second reader waits for it
        with _lock:
            found = _parts.get(key)
            earlier = next((k for k in _parts if k[:3] == key[:3] and k[3][:-2] == now[:-2]), None) \
                if part == "decided" else None
            earlier_rows = _parts.get(earlier) if earlier else None
        if found is not None:
            return found
        since = earlier[3] if earlier else None
        stored = _stored_state(manifest, rule, part)
        if stored == now or (earlier is None and part == "decided" and stored is not None and stored[:-2] == now[:-2]):
            earlier_rows, since = _stored_cells(manifest, rule, part, stored), stored
            if earlier_rows is not None and stored == now:
                _keep(key, earlier_rows)
                return earlier_rows
        made = None if earlier_rows is None else _followed(manifest, rule, earlier_rows, since, now,
                                                           None if count else FOLLOW_DOCS)
        if made is None and not count:
            return None
        made = _cells(manifest, rule, part) if made is None else made
        _keep(key, made)
    return made


FOLLOW_DOCS = 200  # documents a script run counts again after curators' changes (about 0.1 s at 4 M pages); more: the job


def _keep(key: tuple, made: np.ndarray) -> None:
    with _lock:
        for old in [k for k in _parts if k[:3] == key[:3]]:
            del _parts[old]
        while len(_parts) >= KEPT_PARTS:
            del _parts[next(iter(_parts))]
        _parts[key] = made


def _followed(manifest, rule: str, rows: np.ndarray, before: tuple, now: tuple,
              limit: int | None = None) -> np.ndarray | None:
    """The curators' part `rows`, counted at the state `before` (state(): its last two are the curators' counter and
    the history's last change), brought up to the state `now`: the documents the history changed in between counted
    again. The same rows where the curators' counter stayed (a setting's change is in the history too); None where
    it moved and no document's change was recorded (a writer that does not record: count them all), or where more
    than `limit` documents changed."""
    if before[-2] == now[-2]:
        return rows
    docs = [row[0] for row in manifest.conn.execute(
        "SELECT DISTINCT doc_id FROM history_changes WHERE rowid > ? AND rowid <= ? AND doc_id IS NOT NULL",
        (before[-1], now[-1]))]
    if not docs or (limit is not None and len(docs) > limit):
        return None
    fresh = _cells(manifest, rule, "decided", ", ".join(str(int(doc)) for doc in docs))
    return np.concatenate([rows[~np.isin(rows[:, 0], docs)], fresh])


# -- the parts as the counting job stores them in the manifest (cutoff_parts: a row a rule and part) -------------


def _stored_state(manifest, rule: str, part: str) -> tuple | None:
    row = manifest.conn.execute("SELECT state FROM cutoff_parts WHERE rule = ? AND part = ?", (rule, part)).fetchone()
    return None if row is None else tuple(json.loads(row[0]))


def _stored_cells(manifest, rule: str, part: str, counted_at: tuple) -> np.ndarray | None:
    """The stored cells, None where the job stored another state since `counted_at` was read."""
    row = manifest.conn.execute("SELECT state, cells FROM cutoff_parts WHERE rule = ? AND part = ?",
                                (rule, part)).fetchone()
    if row is None or tuple(json.loads(row[0])) != counted_at:
        return None
    return np.frombuffer(row[1], np.int32).reshape(-1, 3).copy()


def _store(manifest, rule: str, part: str, now: tuple, cells: np.ndarray) -> None:
    with manifest.transaction():
        manifest.conn.execute("INSERT OR REPLACE INTO cutoff_parts (rule, part, state, cells) VALUES (?, ?, ?, ?)",
                              (rule, part, json.dumps(list(now)), np.ascontiguousarray(cells, np.int32).tobytes()))


RULES = ("picture", "sigma", "model")


def stored_current(manifest, rules=RULES) -> bool:
    """Whether the manifest holds every rule's parts as counted for the pages, pictures, suggestions and saved
    score cutoff as they are (the curators' part may lag behind their recorded changes: a reader follows them)."""
    for rule in rules:
        found, _ = state(manifest, rule)
        decided = _stored_state(manifest, rule, "decided")
        if _stored_state(manifest, rule, "rule") != found or decided is None or decided[:-2] != found:
            return False
    return True


def needs_count(manifest, rules=RULES) -> bool:
    """Whether a rule's table would take a scan to make (the counting job's to do); the others are made."""
    return any(table(manifest, rule, count=False) is None for rule in rules)


def count_and_store(manifest, rules=RULES, progress=None) -> None:
    """Count every rule's two parts for the manifest as it is and store them (what is already stored for this state
    is kept; the curators' part follows their changes), so that any process finds them: the jobs that change the
    pages, the pictures, the suggestions or many decisions call it before they end, and `python -m curation
    cutoffs` is it as a job. Each part is counted in one read of the manifest, its state read in the same one.
    `progress(done, total)` hears each part."""
    done = 0
    for rule in rules:
        for part in ("rule", "decided"):
            with _snapshot(manifest.conn):
                found, decided = state(manifest, rule)
                now = found if part == "rule" else decided
                cells = _part(manifest, rule, part, now)
            if _stored_state(manifest, rule, part) != now:
                _store(manifest, rule, part, now, cells)
            done += 1
            if progress:
                progress(done, 2 * len(rules))


COUNT_JOB = "cutoffs"  # the job kind of `python -m curation cutoffs`, which the Threshold page launches
COUNT_IN_RUN = 60_000  # pictures a script run counts itself (about 0.1 s a rule); more: the job counts them


def small(manifest) -> bool:
    """Whether the manifest's pictures are few enough for a script run to count a rule's table itself."""
    return (manifest.conn.execute("SELECT COALESCE(MAX(id), 0) FROM pictures").fetchone()[0] <= COUNT_IN_RUN)


def count_job(manifest) -> None:
    """count_and_store as a job of the manifest, its progress in parts counted. Raises JobRunning while another
    one runs."""
    job_id = manifest.start_job(COUNT_JOB)
    what = "counting the pictures each rule keeps at every cutoff"
    manifest.update_job(job_id, done=0, total=2 * len(RULES), message=what)
    try:
        count_and_store(manifest, progress=lambda done, total: manifest.update_job(job_id, done=done, total=total,
                                                                                   message=what))
    except BaseException as exc:
        manifest.finish_job(job_id, "failed", f"counting the pictures failed: {exc}")
        raise
    manifest.finish_job(job_id, "done", "every rule's pictures counted at every cutoff")


def counted_after_job(manifest) -> None:
    """For the jobs that change the pages, pictures, suggestions or many decisions: the tables counted for what
    they leave, before they end; a failure here leaves the counting to the Threshold page's job."""
    try:
        count_and_store(manifest)
    except Exception:  # noqa: BLE001 (busy, read-only, full: the page's job counts them later)
        pass


def state(manifest, rule: str) -> tuple[tuple, tuple]:
    """What each part depends on besides its rule. The rule's part: the pages' figures and documents' status
    (their change counter, which also moves with every page scored: a scoring writes the page's row again, with
    its pictures), the saved score cutoff, and under the model its suggestions. The curators' part: that, and
    what curators decided (their change counter and every person's change in the history). Not the jobs'
    progress: a decide job catching up after a rule switch changes neither."""
    pages, suggestions, decided = aggregates.version(manifest.conn)
    last = manifest.conn.execute("SELECT COALESCE(MAX(rowid), 0) FROM history_changes").fetchone()[0]
    found = (pages, suggestions if rule == "model" else None, manifest.picture_score_min)
    return found, (*found, decided, last)


def table(manifest, rule: str, count: bool = True) -> Table | None:
    """The rule's table for the manifest as it is now: the rule's part (one scan of every picture, kept until the
    pages' figures, the pictures or the suggestions change) and the curators' part (the pages they decided,
    read again after each of their changes), from this process's memory or as the counting job stored them.
    Without `count`, None where a part would take a scan (a script run leaves that to the job)."""
    found, decided = state(manifest, rule)
    key = (str(manifest.path), rule, decided)
    with _lock:
        made = _tables.get(key)
    if made is None:
        parts = [_part(manifest, rule, "rule", found, count), _part(manifest, rule, "decided", decided, count)]
        if any(part is None for part in parts):
            return None
        made = _as_table(np.concatenate(parts))
        with _lock:
            for old in [k for k in _tables if k[:2] == key[:2]]:
                del _tables[old]
            while len(_tables) >= KEPT_PARTS // 2:  # about 1.6 MB each (a count for every area cutoff)
                del _tables[next(iter(_tables))]
            _tables[key] = made
    return made


def figures(manifest: Manifest, threshold: float | None, saved: float | None = None, *, rule: str | None = None,
            picture_area_min: float | None = None, picture_score_min: float | None = None) -> dict:
    """The threshold page's figures for the decision being tried, and what the saved one keeps, from the kept counts.

    The saved side is the saved rule and picture cutoff at σ `saved`; without `saved` both sides are
    the decision being tried. A score cutoff being tried moves the kept pages by those holding a picture
    scored between it and the saved one (pages_kept). Counts agree with Manifest.summary():
    failed pages count as rejected (they cannot be exported).
    """
    params = decision_params(manifest, threshold, rule, picture_area_min)
    now = tallies.tally(manifest, params).counts()
    kept = now["kept"] if picture_score_min is None else pages_kept(
        manifest, {**params, "picture_score_min": float(picture_score_min)}, now["kept"])
    result = {"pages": now["pages"], "kept": kept, "kept_saved": kept, "overrides": now["overridden"],
              "failed": now["failed"]}
    if saved is not None:
        result["kept_saved"] = tallies.tally(manifest, decision_params(manifest, saved)).counts()["kept"]
    result["rejected"] = result["pages"] - result["kept"]
    result["rejected_saved"] = result["pages"] - result["kept_saved"]
    result["removed_share"] = result["rejected"] / result["pages"] if result["pages"] else 0.0
    result["removed_share_saved"] = result["rejected_saved"] / result["pages"] if result["pages"] else 0.0
    return result


def pictures_kept(manifest, params: dict, count: bool = True) -> int | None:
    """The pictures the decision `params` (views.decision_params) exports, from the rule's table and, for a score
    cutoff being tried, the pages between the two score cutoffs; None off the sliders' grids, or (not `count`)
    where the rule's table would take a scan to make."""
    sigma_step = grid_step(params["threshold"], SIGMA_GRID, SIGMA_TOP)
    area_step = grid_step(params["picture_area_min"], AREA_GRID, AREA_TOP)
    if sigma_step is None or area_step is None:
        return None
    found = table(manifest, params["rule"], count)
    if found is None:
        return None
    return found.kept(sigma_step, area_step) + _pictures_moved_by_score(manifest, params)


def pages_kept(manifest, params: dict, kept_at_saved_score: int) -> int:
    """The pages `params` keeps, from their count at the saved score cutoff (the kept counts'), moved by the pages
    holding a picture scored between the saved and the tried score cutoff."""
    moved = moved_by_score(manifest, params)
    return kept_at_saved_score + int(moved.kept.sum() - moved.kept_saved.sum())


def _pictures_moved_by_score(manifest, params: dict) -> int:
    """Σ exported at the tried score cutoff − at the saved one, over the pictures of the pages holding a picture
    scored between the two: the only ones whose decision the score cutoff changes."""
    tried, saved = params["picture_score_min"], params["picture_score_saved"]
    if tried == saved:
        return 0
    exported = f"NOT x.deleted AND {EXPORTED_SQL}"
    at_saved = exported.replace(":picture_score_min", ":picture_score_saved")
    return manifest.conn.execute(
        f"SELECT COALESCE(SUM(COALESCE({exported}, 0) - COALESCE({at_saved}, 0)), 0) "
        "FROM pictures x JOIN pages p ON p.doc_id = x.doc_id AND p.page = x.page "
        "JOIN documents d ON d.id = p.doc_id LEFT JOIN overrides o ON o.doc_id = p.doc_id AND o.page = p.page "
        f"WHERE {LIVE_DOCUMENT_SQL} AND p.status = 'ok' AND (p.doc_id, p.page) IN ({SCORED_BETWEEN_SQL})",
        {**params, "low": min(tried, saved), "high": max(tried, saved)}).fetchone()[0]


# -- Threshold's picture figures: the decision being tried against the saved one --------------------------------


def picture_figures(manifest, threshold: float | None, saved_threshold: float | None = None, *,
                    rule: str | None = None, picture_area_min: float | None = None,
                    picture_score_min: float | None = None, count: bool = True) -> dict[str, int | None]:
    """The pictures the decision being tried exports ("kept") and leaves out ("excluded"), and the same under
    the saved decision ("kept_saved", "excluded_saved"): a cutoff can drop pictures without changing a page.
    Without `count` (a script run on a large manifest) no picture is scanned: a side whose rule's table is not
    counted yet, and that the pictures between two cutoffs cannot give, is None (the counting job's to make)."""
    saved = _kept_and_excluded(manifest, decision_params(manifest, saved_threshold), count=count)
    now = _kept_and_excluded(manifest, decision_params(manifest, threshold, rule, picture_area_min, picture_score_min),
                             saved if saved_threshold in (None, manifest.threshold) else None, count)
    return {"kept": now["kept"], "excluded": now["excluded"], "kept_saved": saved["kept"],
            "excluded_saved": saved["excluded"]}


UNKNOWN = {"kept": None, "excluded": None, "all": None, "deleted": None}


def _kept_and_excluded(manifest, params: dict, saved: dict | None = None, count: bool = True) -> dict:
    """Under the saved settings the stored counts; on the sliders' grids a lookup in the rule's table (counted
    here if need be, with `count`); else the `saved` counts moved by the pictures between the cutoffs, if they
    can be; else, with `count`, a scan; without it, UNKNOWN."""
    if picture_decisions.is_saved(manifest, params):
        return picture_views._stored_counts(manifest, None)
    if (kept := pictures_kept(manifest, params, count)) is not None:
        return {"kept": kept, "excluded": table(manifest, params["rule"]).pictures - kept}
    if saved is not None and saved["kept"] is not None and (kept := _kept_by_moved_cutoffs(
            manifest, saved["kept"], params, None if count else MOVED_IN_RUN)) is not None:
        return {"kept": kept, "excluded": saved["all"] - kept - saved["deleted"]}
    if not count:
        return UNKNOWN
    return picture_views.scanned_counts(manifest, params["threshold"], rule=params["rule"],
                                        picture_area_min=params["picture_area_min"],
                                        picture_score_min=params["picture_score_min"])


MOVED_IN_RUN = 20_000  # pictures between two cutoffs a script run counts (about 0.1 s); more: the rule's table


MOVABLE_CUTOFFS = ("threshold", "picture_area_min")  # where a move changes only the pictures an index finds


def _kept_by_moved_cutoffs(manifest, kept_saved: int, draft: dict, limit: int | None = None) -> int | None:
    """The pictures `draft` keeps, where it differs from the saved settings only in the σ or area cutoff and
    the stored decisions are current: the saved count moved by the pictures between the two cutoffs (found
    through their indexes, as the settings' triggers find them, and driving the count), not a scan of every
    picture. None where that does not hold, or where more than `limit` pictures lie between the cutoffs."""
    stored = manifest.decision_params()
    moved = [name for name in MOVABLE_CUTOFFS if draft[name] != stored[name]]
    if (not moved or any(draft[name] != stored[name] for name in stored if name not in MOVABLE_CUTOFFS)
            or not picture_decisions.is_saved(manifest, stored)):
        return None
    ids = " UNION ".join(
        "SELECT x.id AS id FROM pictures x" + (" JOIN pages p ON p.doc_id = x.doc_id AND p.page = x.page"
                                               if re.search(r"\bp\.", where) else "") + f" WHERE {where}"
        for name in moved for where in picture_decisions.pictures_that_can_change(name, f":saved_{name}", f":{name}"))
    params = {**draft, **{f"saved_{name}": stored[name] for name in moved}}
    if limit is not None and manifest.conn.execute(  # counted through the same indexes, up to the limit
            f"SELECT COUNT(*) FROM (SELECT 1 FROM ({ids.replace(' UNION ', ' UNION ALL ')}) LIMIT {int(limit) + 1})",
            params).fetchone()[0] > limit:
        return None
    kept, kept_before = picture_views.DECISION_SQL["kept"], "NOT x.deleted AND x.exported = 1"
    joins = picture_views.from_sql(kept).replace("FROM pictures x", f"FROM ({ids}) AS moved JOIN pictures x "
                                                 "ON x.id = moved.id", 1)
    return kept_saved + manifest.conn.execute(
        f"SELECT COALESCE(SUM(COALESCE({kept}, 0) - COALESCE({kept_before}, 0)), 0) {joins} "
        f"WHERE {picture_views.BASE_SQL}", params).fetchone()[0]
