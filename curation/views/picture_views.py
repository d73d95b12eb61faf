"""What Review's Pictures view shows: pictures with their decision, filtered, sorted and paged, computed in SQL
and tested without Streamlit (the bulk actions on a view: curation.views.picture_bulk); their crops and the
page with its boxes are drawn by curation.views.picture_images (its names are this module's too, for the view).

Paging is by key, not OFFSET: a screen is the pictures after the last one of the screen before in the sort's
order (every sort's key tells any two pictures apart, so the order is total), so the thousandth screen costs
what the first does.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..decisions.picture_kinds import with_learned_kinds
from ..manifest import history, picture_decisions
from .picture_images import (CROP_SIDE, OUTLINE_COLOUR, OUTLINE_MIN_WIDTH, SELECTED_COLOUR, box_from_clicks,  # noqa: F401
                             CORNER_GRAB, box_of_corners, crop, crops, dragged_box, fit_region, numbered_outline,
                             mask_words, page_point, screen_crops, with_mask, zoom_region, zoomed)
from ..manifest.pictures import PictureError  # noqa: F401 (the view's callers use it)
from ..pictures.kind import KINDS  # noqa: F401 (the view's callers use it)
from ..manifest.page_rows import scoring_stamp
from ..manifest.rules import EXPORTED_SQL, LIVE_DOCUMENT_SQL, PICTURE_AREA_SQL
from ..manifest.store import Manifest, now
from .filters import decision_params
from .threshold import square_inches

FROM_SQL = "FROM pictures x JOIN pages p ON p.doc_id = x.doc_id AND p.page = x.page JOIN documents d ON d.id = x.doc_id"
# Joined only when a query reads them (by alias): every join costs a lookup per picture.
JOINS = {"o": "LEFT JOIN overrides o ON o.doc_id = x.doc_id AND o.page = x.page",
         "g": "LEFT JOIN duplicates g ON g.doc_id = x.doc_id AND g.page = x.page"}
BASE_SQL = f"{LIVE_DOCUMENT_SQL} AND p.status = 'ok'"
LIVE_DOCUMENTS = f"SELECT d.id FROM documents d WHERE {LIVE_DOCUMENT_SQL}"
DECISIONS = {
    "all": "All pictures",
    "kept": "Kept",
    "excluded": "Excluded",
    "overridden": "Overridden",
    "duplicates": "Near-duplicates",
    "gone": "Not found any more",
    "deleted": "Deleted",
}
DECISION_HELP = ("Overridden: included, excluded, added or redrawn by a curator. Not found any more: the last "
                 "scoring no longer finds the picture, kept because a curator worked on it. Deleted pictures "
                 "show dim under All pictures, and alone under Deleted.")
DECISION_SQL = {
    "all": "1",  # deleted ones too, shown dim: a curator sees what was deleted where it was
    "kept": f"NOT x.deleted AND {EXPORTED_SQL}",
    "excluded": f"NOT x.deleted AND NOT {EXPORTED_SQL}",
    "overridden": "NOT x.deleted AND (x.keep IS NOT NULL OR x.added OR x.fx0 IS NOT NULL)",
    # Driven from the duplicate groups (a few thousand pages), by the pictures' ids: CROSS JOIN keeps the groups
    # outside (the planner would walk every picture and look each one up in the groups).
    "duplicates": "NOT x.deleted AND x.id IN (SELECT xg.id FROM duplicates dg CROSS JOIN pictures xg "
                  "ON xg.doc_id = dg.doc_id AND xg.page = dg.page)",
    "gone": "NOT x.deleted AND x.rank IS NULL AND NOT x.added",
    "deleted": "x.deleted",
}
# Kept and excluded as stored under the saved settings (picture_decisions): an index walk, not a decision
# evaluated for every picture.
STORED_SQL = {"kept": "NOT x.deleted AND x.exported = 1", "excluded": "NOT x.deleted AND x.exported = 0"}
# How far a picture is from the rule's cut: its size against the picture cutoff, as a factor (1 on it, 2 half
# or twice the cutoff); under σ only, its page's σ from the cutoff. An added picture is sure.
UNSURE_SQL = (f"CASE WHEN x.added THEN 1e9 ELSE MAX({PICTURE_AREA_SQL} / :picture_area_min, "
              f":picture_area_min / MAX({PICTURE_AREA_SQL}, 1e-6)) END")
UNSURE_SIGMA_SQL = "CASE WHEN x.added THEN 1e9 ELSE ABS(COALESCE(p.sigma, 1e9) - :threshold) END"
# Each sort is a list of terms that tell every two pictures apart (the picture's id ends those that do not),
# so a screen's key is unique, all ascending or, with DESCENDING, all descending. Document and page walks the
# index of (doc_id, page, number), largest first the index of the size (pictures.INDEXES): their screens take
# milliseconds however deep; the others sort (see _first_of_most).
SORTS = {
    "page": ("Document and page", ["x.doc_id", "x.page", "x.number"]),
    "size": ("Largest first", [PICTURE_AREA_SQL, "x.id"]),
    "unsure": ("Least sure first", [UNSURE_SQL, "x.id"]),
    "duplicates": ("Near-duplicates together", ["COALESCE(g.group_id, 9e18)", "x.doc_id", "x.page", "x.number"]),  # NO_GROUP
}
DESCENDING = {"size"}
INDEXED = {"page", "size"}


@dataclass(frozen=True)
class PictureFilter:
    """Which pictures a screen shows: by decision, optionally one document."""

    decision: str = "all"
    doc_id: int | None = None

    def sql(self, stored: bool = False) -> tuple[str, dict]:
        """The filter as SQL; `stored`: read the decisions stored under the saved settings."""
        if self.decision not in DECISION_SQL:
            raise ValueError(f"unknown picture filter {self.decision!r}")
        decision = STORED_SQL.get(self.decision) if stored else None
        conditions, params = [BASE_SQL, decision or DECISION_SQL[self.decision]], {}
        if self.doc_id is not None:
            conditions.append("x.doc_id = :doc_id")
            params["doc_id"] = int(self.doc_id)
        return " AND ".join(f"({c})" for c in conditions), params


def from_sql(*sql: str) -> str:
    """FROM_SQL with the joins that `sql` (conditions, terms) reads."""
    text = " ".join(sql)
    return " ".join([FROM_SQL, *(join for alias, join in JOINS.items() if re.search(rf"\b{alias}\.", text))])


def sort_terms(sort: str, rule: str) -> list[str]:
    """The sort's terms; least sure first measures what `rule` cuts on."""
    return [UNSURE_SIGMA_SQL, "x.id"] if sort == "unsure" and rule == "sigma" else SORTS[sort][1]


def _order(sort: str, terms: list[str]) -> str:
    return ", ".join(f"{term} DESC" if sort in DESCENDING else term for term in terms)


def bound(manifest: Manifest, threshold: float | None, flt: PictureFilter,
           rule: str | None = None) -> tuple[str, dict]:
    decision = decision_params(manifest, threshold, rule)
    where, params = flt.sql(stored=picture_decisions.is_saved(manifest, decision))
    return where, {**decision, **params}


# -- counts -----------------------------------------------------------------------------------


COUNTED = [name for name in DECISION_SQL if name != "excluded"]  # excluded: neither kept nor deleted


def filter_counts(manifest: Manifest, threshold: float | None, doc_id: int | None = None, *,
                  rule: str | None = None, picture_area_min: float | None = None,
                  picture_score_min: float | None = None) -> dict[str, int]:
    """How many pictures each decision filter holds (of one document, or all): under the saved settings read
    from the stored counts (milliseconds), else in one scan."""
    cutoffs = {"picture_area_min": picture_area_min, "picture_score_min": picture_score_min}
    if picture_decisions.is_saved(manifest, decision_params(manifest, threshold, rule, **cutoffs)):
        return _stored_counts(manifest, doc_id)
    return scanned_counts(manifest, threshold, doc_id, rule=rule, **cutoffs)


def scanned_counts(manifest: Manifest, threshold: float | None, doc_id: int | None = None, *,
                   rule: str | None = None, picture_area_min: float | None = None,
                   picture_score_min: float | None = None) -> dict[str, int]:
    """filter_counts by evaluating every picture's decision (rules.EXPORTED_SQL), in one scan."""
    where, params = BASE_SQL, decision_params(manifest, threshold, rule, picture_area_min, picture_score_min)
    if doc_id is not None:
        where, params["doc_id"] = f"{where} AND x.doc_id = :doc_id", int(doc_id)
    sums = ", ".join(f"COALESCE(SUM({DECISION_SQL[name]}), 0)" for name in COUNTED)
    return _with_excluded(manifest.conn.execute(f"SELECT {sums} {from_sql(sums)} WHERE {where}", params).fetchone())


def document_counts(manifest: Manifest, threshold: float | None, doc_ids: Iterable[int] | None = None, *,
                    rule: str | None = None) -> dict[int, dict[str, int]]:
    """filter_counts of each document (of `doc_ids`, or of every one), in one scan; a document without a
    picture counts none."""
    where, params = BASE_SQL, decision_params(manifest, threshold, rule)
    wanted = None if doc_ids is None else sorted({int(d) for d in doc_ids})
    if wanted is not None:
        where += f" AND x.doc_id IN ({', '.join(map(str, wanted))})"
    sums = ", ".join(f"COALESCE(SUM({DECISION_SQL[name]}), 0)" for name in COUNTED)
    counts = {row[0]: _with_excluded(row[1:]) for row in manifest.conn.execute(
        f"SELECT x.doc_id, {sums} {from_sql(sums)} WHERE {where} GROUP BY x.doc_id", params)}
    return {**{doc: _with_excluded([0] * len(COUNTED)) for doc in wanted or ()}, **counts}


def _stored_counts(manifest: Manifest, doc_id: int | None) -> dict[str, int]:
    stored = picture_decisions.counts(manifest, doc_id)
    mine, params = ("AND x.doc_id = :doc_id", {"doc_id": int(doc_id)}) if doc_id is not None else ("", {})
    duplicates = manifest.conn.execute(  # driven from the groups' pages, a few thousand
        f"SELECT COUNT(*) FROM duplicates g CROSS JOIN pictures x ON x.doc_id = g.doc_id AND x.page = g.page "
        f"WHERE x.exported IS NOT NULL AND NOT x.deleted AND x.doc_id IN ({LIVE_DOCUMENTS}) {mine}",
        params).fetchone()[0]
    return _with_excluded([stored["pictures"] + stored["deleted"], stored["kept"], stored["overridden"], duplicates,
                           stored["gone"], stored["deleted"]])


def _with_excluded(values: Sequence[int]) -> dict[str, int]:
    counts = dict(zip(COUNTED, values))
    return {**counts, "excluded": counts["all"] - counts["kept"] - counts["deleted"]}


class CountKeeper:
    """The filter counts at cutoffs other than the saved ones (whose counts are stored), kept between script
    runs and brought up to date cheaply: a scan of every picture
    (a second at 250,000) only when the decision or the scoring changed; after a person's changes, only the
    documents they touched are counted again (milliseconds), read from the history. One per manifest,
    shared by the sessions that show it."""

    def __init__(self):
        self._lock = threading.Lock()
        self._key, self._action, self._documents = None, None, {}

    def counts(self, manifest: Manifest, threshold: float | None, doc_id: int | None = None, *,
               rule: str | None = None) -> dict[str, int]:
        params = decision_params(manifest, threshold, rule)
        if picture_decisions.is_saved(manifest, params):  # the stored counts: nothing to keep
            return filter_counts(manifest, threshold, doc_id, rule=rule)
        key = (str(manifest.path), params["threshold"], params["rule"], params["picture_area_min"],
               params["picture_score_min"],
               scoring_stamp(manifest))
        last = history.latest_id(manifest.conn)  # before counting
        with self._lock:
            if key != self._key:
                self._documents = document_counts(manifest, threshold, rule=rule)
            elif last != self._action:
                touched = [row[0] for row in manifest.conn.execute(
                    "SELECT DISTINCT doc_id FROM history_changes WHERE action_id > ? AND doc_id IS NOT NULL",
                    (self._action,))]
                if touched:
                    self._documents = {**self._documents, **document_counts(manifest, threshold, touched, rule=rule)}
            self._key, self._action, documents = key, last, self._documents
        if doc_id is not None:
            return documents.get(int(doc_id)) or _with_excluded([0] * len(COUNTED))
        return {name: sum(counts[name] for counts in documents.values()) for name in DECISION_SQL}


def override_counts(manifest: Manifest, threshold: float | None, flt: PictureFilter, *,
                    rule: str | None = None, extra: str = "") -> dict[str, int]:
    """Of the filter's pictures (and `extra`, SQL on x) that a bulk action changes (every one but the
    deleted): how many, how many a curator included and excluded, and how many have a typed caption."""
    where, params = bound(manifest, threshold, flt, rule)
    row = manifest.conn.execute(
        f"SELECT COUNT(*) AS pictures, COALESCE(SUM(x.keep = 1), 0) AS included, "
        f"COALESCE(SUM(x.keep = 0), 0) AS excluded, COALESCE(SUM(x.caption IS NOT NULL), 0) AS captioned "
        f"{from_sql(where)} WHERE {where} AND NOT x.deleted {extra}", params).fetchone()
    return dict(row)


# -- one screen -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Screen:
    rows: list[dict]  # as Manifest.picture_rows gives them, plus duplicate_group and kind_learned (picture_kinds)
    next_after: tuple | None  # the key to pass as `after` for the next screen; None: this is the last


def screen(manifest: Manifest, threshold: float | None, flt: PictureFilter = PictureFilter(), sort: str = "page",
           after: Sequence | None = None, limit: int = 48, *, rule: str | None = None) -> Screen:
    """The `limit` pictures after key `after` (None: from the start) in `sort`'s order, with their decision.

    Two steps: the screen's ids and keys by the filter and the sort alone, then those pictures in full."""
    terms = sort_terms(sort, decision_params(manifest, threshold, rule)["rule"])
    if after is not None and len(after) != len(terms):
        raise ValueError("a screen's key does not fit this sort")
    where, params = bound(manifest, threshold, flt, rule)
    past, after_params = "", {}
    if after is not None:
        past = (f" AND ({', '.join(terms)}) {'<' if sort in DESCENDING else '>'} "
                f"({', '.join(f':after{i}' for i in range(len(terms)))})")
        after_params = {f"after{i}": value for i, value in enumerate(after)}
    params.update(after_params)
    if sort == "duplicates":
        keys = _duplicates_first(manifest, where, params, after, limit + 1)
    elif sort == "unsure" and terms[0] == UNSURE_SQL and flt.decision in MOST:
        keys = _nearest_the_cutoff(manifest, where, params, after, limit + 1)
    else:
        keys = None if sort in INDEXED else _first_of_most(manifest, terms, flt, params, past, where, limit + 1)
    if keys is None:
        keys = manifest.conn.execute(
            f"SELECT {', '.join(terms)}, x.id {from_sql(where, *terms)} WHERE {where}{past} "
            f"ORDER BY {_order(sort, terms)} LIMIT {int(limit) + 1}", params).fetchall()
    more = len(keys) > limit
    keys = [tuple(key) for key in keys[:limit]]
    ids = [key[-1] for key in keys]
    if not ids:
        return Screen([], None)
    found = {row["id"]: dict(row) for row in manifest.picture_rows(
        threshold, where=f"x.id IN ({', '.join(map(str, ids))})", rule=rule)}
    groups = dict(manifest.conn.execute(
        f"SELECT x.id, g.group_id FROM pictures x JOIN duplicates g ON g.doc_id = x.doc_id AND g.page = x.page "
        f"WHERE x.id IN ({', '.join(map(str, ids))})").fetchall())
    rows = [{**found[i], "duplicate_group": groups.get(i)} for i in ids if i in found]
    return Screen(with_learned_kinds(manifest, rows), keys[-1][:-1] if more else None)


def ordered_screen(manifest: Manifest, threshold: float | None, flt: PictureFilter, order: Sequence[int],
                   after: Sequence | None = None, limit: int = 48, *, rule: str | None = None) -> Screen:
    """A screen of the filter's pictures in an order computed outside SQL (`order`: picture ids, as More like
    this or a learned model sorts them), keyed by the position in `order`: the ids after the key are read a
    growing batch at a time, by id, until the screen is full."""
    where, params = bound(manifest, threshold, flt, rule)
    start = 0 if after is None else int(after[0]) + 1
    taken: list[tuple[int, int]] = []
    batch = 2 * (limit + 1)
    while start < len(order) and len(taken) <= limit:
        ids = [int(i) for i in order[start:start + batch]]
        shown = {row[0] for row in manifest.conn.execute(
            f"SELECT x.id {from_sql(where)} WHERE {where} AND x.id IN ({', '.join(map(str, ids))})", params)}
        taken += [(start + n, i) for n, i in enumerate(ids) if i in shown]
        start, batch = start + len(ids), min(batch * 2, 50_000)
    more = len(taken) > limit
    taken = taken[:limit]
    if not taken:
        return Screen([], None)
    found = {row["id"]: dict(row) for row in manifest.picture_rows(
        threshold, where=f"x.id IN ({', '.join(str(i) for _, i in taken)})", rule=rule)}
    rows = [{**found[i], "duplicate_group": None} for _, i in taken if i in found]
    return Screen(with_learned_kinds(manifest, rows), (taken[-1][0],) if more else None)


NO_GROUP = 9e18  # the group key of a picture on no near-duplicate page: after every group


def _duplicates_first(manifest: Manifest, where: str, params: dict, after: Sequence | None, count: int) -> list:
    """The first `count` keys of the view near-duplicates together: the pictures of the groups' pages, group by
    group (read from the groups, a few thousand pages), then the others in document order through the index
    of (doc_id, page, number), past each picture on a group's page. No sort of every picture."""
    conn, keys = manifest.conn, []
    # Group by group from the index of the groups (the planner would read every page of the view, then sort).
    joined = from_sql(where).replace("FROM pictures x", "FROM duplicates g INDEXED BY duplicates_group "
                                     "CROSS JOIN pictures x", 1)
    if after is None or after[0] < NO_GROUP:
        past = "" if after is None else " AND (g.group_id, x.doc_id, x.page, x.number) > (:after0, :after1, :after2, :after3)"
        keys = conn.execute(
            f"SELECT g.group_id, x.doc_id, x.page, x.number, x.id {joined} WHERE x.doc_id = g.doc_id "
            f"AND x.page = g.page AND {where}{past} ORDER BY g.group_id, x.doc_id, x.page, x.number "
            f"LIMIT {int(count)}", params).fetchall()
        past = ""
    else:
        past = " AND (x.doc_id, x.page, x.number) > (:after1, :after2, :after3)"
    if len(keys) < count:
        keys += conn.execute(
            f"SELECT {NO_GROUP!r}, x.doc_id, x.page, x.number, x.id {from_sql(where)} WHERE {where}{past} AND NOT EXISTS "
            f"(SELECT 1 FROM duplicates g WHERE g.doc_id = x.doc_id AND g.page = x.page) "
            f"ORDER BY x.doc_id, x.page, x.number LIMIT {int(count) - len(keys)}", params).fetchall()
    return keys


def _nearest_the_cutoff(manifest: Manifest, where: str, params: dict, after: Sequence | None, count: int) -> list:
    """The first `count` keys of the view least sure first under the picture rule: the pictures from the
    cutoff up and from the cutoff down, each through the index of the size, then the added ones (sure),
    merged. Each walk is in UNSURE_SQL's order, ties by id, so the merge is too."""
    area, past = PICTURE_AREA_SQL, ""
    up = down = ""
    if after is not None:
        past = f" AND ({UNSURE_SQL}, x.id) > (:after0, :after1)"
        # What the key leaves on either side of the cutoff, loosely (the exact test is `past`), for the index.
        up = f" AND {area} >= :after0 * :picture_area_min * (1 - 1e-9)"
        down = f" AND {area} <= :picture_area_min / :after0 * (1 + 1e-9)"
    joined = from_sql(where)
    walks = ((joined, f"NOT x.added AND {area} >= :picture_area_min{up}", f"{area}, x.id"),
             (joined, f"NOT x.added AND {area} < :picture_area_min{down}", f"{area} DESC, x.id"),
             # the planner would walk every kept or excluded picture for the few added ones
             (joined.replace("FROM pictures x", "FROM pictures x INDEXED BY pictures_added", 1), "x.added", "x.id"))
    keys = []
    for source, condition, order in walks:
        keys += manifest.conn.execute(
            f"SELECT {UNSURE_SQL}, x.id, x.id {source} WHERE {where} AND {condition}{past} "
            f"ORDER BY {order} LIMIT {int(count)}", params).fetchall()
    return sorted(keys, key=lambda key: (key[0], key[1]))[:count]


# Filters that hold most pictures, and sorts no index serves: a few screens' worth of the first pictures in
# the sort's order, taken without the joins the decision needs, nearly always hold the screen (a fifth of
# the time at 250,000 pictures).
MOST = ("all", "kept", "excluded")
CANDIDATES = 4  # screens' worth


def _first_of_most(manifest: Manifest, terms: list[str], flt: PictureFilter, params: dict, past: str, where: str,
                   count: int) -> list | None:
    """The first `count` keys of the view from the first pictures in the sort's order; None when they do not
    hold that many of the view and more pictures are left (then the view is sorted as a whole)."""
    if flt.decision not in MOST:
        return None
    joins = ("JOIN pages p ON p.doc_id = x.doc_id AND p.page = x.page" if re.search(r"\bp\.", " ".join(terms))
             else "") + (" " + JOINS["g"] if re.search(r"\bg\.", " ".join(terms)) else "")
    mine = " AND x.doc_id = :doc_id" if flt.doc_id is not None else ""
    taken = CANDIDATES * count
    candidates = manifest.conn.execute(
        f"SELECT {', '.join(terms)}, x.id FROM pictures x {joins} WHERE 1{mine}{past} "
        f"ORDER BY {', '.join(terms)} LIMIT {taken}", params).fetchall()
    if not candidates:
        return []
    shown = {row[0] for row in manifest.conn.execute(
        f"SELECT x.id {from_sql(where)} WHERE {where} AND x.id IN ({', '.join(str(c[-1]) for c in candidates)})",
        params)}
    keys = [candidate for candidate in candidates if candidate[-1] in shown][:count]
    return keys if len(keys) == count or len(candidates) < taken else None


def page_boxes(manifest: Manifest, doc_id: int, page: int) -> list[dict]:
    """Every picture of one page with its number and box as the curator left it (deleted ones too, marked),
    for the large view."""
    return [dict(row) for row in manifest.picture_rows(
        where="x.doc_id = :doc_id AND x.page = :page", params={"doc_id": doc_id, "page": page},
        order="x.number")]


def status_words(row: dict, *, badge: bool = False) -> str:
    """What a card says beside its decision, one line: deleted, its page excluded, not found any more,
    added, redrawn, judged not a picture (its score under the score cutoff: the judge's, curation.pictures.
    picture_judge, or the learned verdict's). With `badge`, "deleted" is left to the decision badge beside it."""
    words = []
    if row["deleted"]:
        words += [] if badge else ["deleted"]
    elif row["picture_decided_by"] == "page":
        words.append("page excluded by a curator")
    if row["rank"] is None and not row["added"]:
        words.append("not found by the last scoring")
    if row["added"]:
        words.append("added by a curator")
    if row["fx0"] is not None:
        words.append("box redrawn")
    if row.get("under_score") and row["picture_decided_by"] == "threshold":
        words.append(f"judged not a picture (score {row['score']:.2f})")
    return " · ".join(words)


def decision_change(before: dict, after: dict) -> str | None:
    """What a redrawn box did to the picture's decision, for a person ("excluded now: its box is 1.3 sq in, under
    the picture cutoff"); None when the decision stayed. A box made small can drop a picture silently otherwise."""
    old, new = decision_of(before), decision_of(after)
    if old == new:
        return None
    size = square_inches(after["box_area"])
    why = " (under the picture cutoff)" if after["picture_decided_by"] == "threshold" and new == "excluded" else ""
    return f"{new} now, no longer {old}: its box is {size}{why}"


def box_change(manifest: Manifest, picture_id: int, box: Sequence[int]) -> str | None:
    """What saving `box` as the picture's box would do to its decision (decision_change's words), tried in a
    savepoint and rolled back: nothing is saved and nothing recorded. PictureError for a box that is no box."""
    from ..manifest.pictures import refresh_pages, write_box

    before = dict(manifest.picture(picture_id))
    checked = manifest._checked_box(before["doc_id"], before["page"], box)
    manifest.conn.execute("SAVEPOINT box_trial")
    try:
        write_box(manifest.conn, picture_id, checked)
        refresh_pages(manifest.conn, [(before["doc_id"], before["page"])])
        after = dict(manifest.picture(picture_id))
    finally:
        manifest.conn.execute("ROLLBACK TO box_trial")
        manifest.conn.execute("RELEASE box_trial")
    return decision_change(before, after)


def decision_of(row: dict) -> str:
    """The card's state, its border's colour: deleted, kept (exported) or excluded."""
    if row["deleted"]:
        return "deleted"
    return "kept" if row["keep_picture"] and row["page_keep"] else "excluded"
