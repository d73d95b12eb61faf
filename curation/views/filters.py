"""The decision being looked at, the page filters of Review and their counts: what every page of the
dashboard reads first, summed from the pages counted in bins (curation.manifest.aggregates) or, for one
document, nearness and near-duplicates, as single queries through indexes.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from ..manifest import aggregates, picture_decisions, tallies
from ..manifest.rules import DISAGREES_SQL, KEEP_SQL, LIVE_DOCUMENT_SQL, RULES
from ..manifest.store import Manifest


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


def decision_params(manifest: Manifest, threshold: float | None = None, rule: str | None = None,
                    picture_area_min: float | None = None, picture_score_min: float | None = None) -> dict:
    """What KEEP_SQL and the filters bind: the saved rule and cutoffs, or the ones being tried."""
    if rule is not None and rule not in RULES:
        raise ValueError(f"unknown rule {rule!r}; one of {', '.join(RULES)}")
    params = manifest.decision_params(threshold, rule)
    if picture_area_min is not None:
        params["picture_area_min"] = float(picture_area_min)
    if picture_score_min is not None:
        params["picture_score_min"] = float(picture_score_min)
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

    def sql(self, walk: str | None = None) -> tuple[str, dict]:
        """The filter's condition and parameters. `walk`, the column a screen is read in the order of: a
        nearness on another column is then only checked on each page of that walk, not looked up in its own
        index (which would read every near page and sort them all for one screen)."""
        if self.decision not in DECISION_SQL:
            raise ValueError(f"unknown decision filter {self.decision!r}")
        conditions, params = [], {}
        if self.decision == "near":
            if self.near_on not in NEAR_SQL:
                raise ValueError(f"cannot measure nearness on {self.near_on!r}")
            near = NEAR_SQL[self.near_on]
            conditions.append(near if walk in (None, self.near_on) else near.replace("p.", "+p.", 1))
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


def _where(flt: PageFilter, walk: str | None = None) -> tuple[str, dict]:
    condition, params = flt.sql(walk)
    return f"WHERE {LIVE_DOCUMENT_SQL}" + (f" AND ({condition})" if condition else ""), params


def filter_counts(manifest: Manifest, threshold: float | None, flt: PageFilter = PageFilter(), *,
                  rule: str | None = None, picture_area_min: float | None = None) -> dict:
    """How many pages the filter holds, and of those how many are kept and overridden (included, excluded).

    The whole manifest by a decision is summed from the kept counts (curation.manifest.aggregates); one
    document, nearness and near-duplicates are read through their indexes."""
    bound = decision_params(manifest, threshold, rule, picture_area_min)
    if flt.doc_id is None and flt.page is None and flt.decision in BINNED_DECISIONS:
        counts = tallies.tally(manifest, bound).counts(flt.decision)
        return {key: counts[key] for key in COUNTED}
    if flt.doc_id is None and flt.page is None and flt.decision == "near":
        return _near_counts(manifest, bound, flt)
    where, params = _where(flt)
    pages_from = PAGES_FROM
    if flt.decision == "duplicates":  # from the few pages in a group, not past every page
        pages_from = PAGES_FROM.replace("FROM pages p JOIN", "FROM duplicates dg0 CROSS JOIN pages p "
                                        "ON p.doc_id = dg0.doc_id AND p.page = dg0.page JOIN", 1)
    row = manifest.conn.execute(
        f"SELECT COUNT(*) AS pages, COALESCE(SUM({KEEP_SQL}), 0) AS kept, "
        f"COALESCE(SUM(o.keep IS NOT NULL), 0) AS overridden, COALESCE(SUM(o.keep = 1), 0) AS included, "
        f"COALESCE(SUM(o.keep = 0), 0) AS excluded {pages_from} {where}",
        {**bound, **params},
    ).fetchone()
    return {**dict(row), "rejected": row["pages"] - row["kept"]}


BINNED_DECISIONS = ("all", "kept", "rejected", "overridden", "disagrees", "failed")
COUNTED = ("pages", "kept", "overridden", "included", "excluded", "rejected")
NEAR_COLUMNS = {"sigma": ("sigma", aggregates.SIGMA_BIN_SQL), "picture_area": ("area", aggregates.AREA_BIN_SQL)}


def near_range(flt: PageFilter, bound: dict) -> tuple[float, float]:
    """The values of flt.near_on that "near the cutoff" takes, both ends included (as NEAR_SQL)."""
    if flt.near_on == "sigma":
        return bound["threshold"] - flt.near, bound["threshold"] + flt.near
    return bound["picture_area_min"] / flt.near, bound["picture_area_min"] * flt.near


def _near_counts(manifest: Manifest, bound: dict, flt: PageFilter) -> dict:
    """The whole manifest near the cutoff: the bins wholly inside the range summed from the kept counts, the
    pages of the two bins it cuts through counted one by one (through the column's index)."""
    low, high = near_range(flt, bound)
    first, last = aggregates.bins_within(flt.near_on, low, high)
    tally = tallies.tally(manifest, bound)
    fine = getattr(tally, f"{NEAR_COLUMNS[flt.near_on][0]}_bin")
    counts = tally.counts((fine >= first) & (fine <= last))
    column, bin_sql = f"p.{flt.near_on}", NEAR_COLUMNS[flt.near_on][1]
    aggregates.ensure_log10(manifest.conn)
    row = manifest.conn.execute(
        f"SELECT COUNT(*), COALESCE(SUM({KEEP_SQL}), 0), COALESCE(SUM(o.keep IS NOT NULL), 0), "
        f"COALESCE(SUM(o.keep = 1), 0), COALESCE(SUM(o.keep = 0), 0) {PAGES_FROM} WHERE {LIVE_DOCUMENT_SQL} "
        f"AND {column} BETWEEN :low AND :high AND NOT ({bin_sql} BETWEEN :first AND :last) AND p.rowid IN ("
        f"SELECT rowid FROM pages WHERE {flt.near_on} BETWEEN :low AND :inner_low "
        f"UNION SELECT rowid FROM pages WHERE {flt.near_on} BETWEEN :inner_high AND :high)",
        {**bound, "low": low, "high": high, "first": first, "last": last, **_inner(flt.near_on, first, last, low, high)},
    ).fetchone()
    edges = dict(zip(("pages", "kept", "overridden", "included", "excluded"), map(int, row)))
    total = {key: counts[key] + edges[key] for key in edges}
    return {**total, "rejected": total["pages"] - total["kept"]}


def _inner(column: str, first: int, last: int, low: float, high: float) -> dict:
    """Where the bins wholly inside [low, high] begin and end, a little widened (a value on an edge may
    land in either bin): the pages outside them are read one by one. No such bins: the whole range."""
    if first > last:
        return {"inner_low": high, "inner_high": high * 2 + 1}  # the second range empty (high ≥ 0)
    if column == "sigma":
        start, end = first / aggregates.SIGMA_STEPS, (last + 1) / aggregates.SIGMA_STEPS
    else:
        edge = lambda n: 10 ** (math.log10(aggregates.AREA_FLOOR) + n / aggregates.AREA_STEPS)  # noqa: E731
        start, end = edge(first), edge(last + 1)
    return {"inner_low": start * (1 + 1e-6), "inner_high": end * (1 - 1e-6)}


def page_count(manifest: Manifest) -> int:
    """Pages of live documents, from the kept counts: cheap enough for every script run."""
    return int(aggregates.bins(manifest).pages.sum())


def override_count(manifest: Manifest) -> int:
    """Overrides on pages of live documents, as summary() counts them."""
    return manifest.conn.execute(
        f"SELECT COUNT(*) FROM overrides o JOIN documents d ON d.id = o.doc_id WHERE {LIVE_DOCUMENT_SQL}"
    ).fetchone()[0]


def picture_override_count(manifest: Manifest) -> int:
    """Pictures of live documents a curator included, excluded, added or redrew (Review's Overridden
    pictures), from the stored per-document counts."""
    return int(picture_decisions.counts(manifest)["overridden"])


def unfeatured_count(manifest: Manifest) -> int:
    """Scored pages without picture features (scored before they existed): σ decides them."""
    found = aggregates.bins(manifest)
    return int(found.pages[found.ok & np.isin(found.kind, aggregates.UNFEATURED_KINDS)].sum())


def has_features(manifest: Manifest) -> bool:
    """Whether any scored page has picture features (by the picture_area index)."""
    return manifest.conn.execute(
        "SELECT EXISTS (SELECT 1 FROM pages WHERE picture_area IS NOT NULL)").fetchone()[0] == 1


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
