"""The Threshold page: σ and picture-size histograms, the suggested σ cutoff (Otsu), the pages at the
edge of the cutoff, and the rule in words.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from ..manifest import aggregates, tallies
from ..manifest.rules import INK_TONE_MIN, KEEP_SQL, LIVE_DOCUMENT_SQL, PAGE_AREA_SQL
from ..manifest.store import Manifest
from .filters import PAGES_FROM, decision_params, filter_counts, has_features


PICTURE_FLOOR = 0.1  # square inches: the picture-area histogram's left edge; pages below it hold no picture


PICTURE_CEILING = 1000.0


SCORE_BINS = 20  # the picture score histogram's bins, 0.05 wide


@dataclass(frozen=True)
class ScoreHistogram:
    """The learned verdict's scores of the pictures it found, binned from 0 to 1, each bin split by whether
    the score cutoff being tried admits them."""
    edges: np.ndarray
    admitted: np.ndarray
    dropped: np.ndarray

    def rows(self) -> list[dict]:
        return [{"start": float(self.edges[i]), "end": float(self.edges[i + 1]), "decision": decision,
                 "pictures": int(counts[i])}
                for i in range(len(self.admitted))
                for decision, counts in (("counted", self.admitted), ("under the cutoff", self.dropped))]


def has_scores(manifest: Manifest) -> bool:
    """Whether any picture carries the learned verdict's score (an index's first row)."""
    return manifest.conn.execute("SELECT 1 FROM pictures WHERE score IS NOT NULL LIMIT 1").fetchone() is not None


def score_histogram(manifest: Manifest, picture_score_min: float, bins: int = SCORE_BINS) -> ScoreHistogram | None:
    """The scores of the pictures the learned verdict found (still found, not deleted, on scored pages of
    live documents), in `bins` equal bins from 0 to 1, each split at `picture_score_min`. None when no picture carries a score (the
    rule-based finder's manifest)."""
    rows = manifest.conn.execute(
        f"SELECT MIN(CAST(x.score * :bins AS INTEGER), :last) AS bin, x.score >= :cutoff AS admitted, COUNT(*) "
        f"FROM pictures x JOIN pages p ON p.doc_id = x.doc_id AND p.page = x.page "
        f"JOIN documents d ON d.id = x.doc_id WHERE x.score IS NOT NULL AND x.rank IS NOT NULL "
        f"AND NOT x.deleted AND p.status = 'ok' AND {LIVE_DOCUMENT_SQL} GROUP BY bin, admitted",
        {"bins": bins, "last": bins - 1, "cutoff": float(picture_score_min)}).fetchall()
    if not rows:
        return None
    admitted, dropped = np.zeros(bins, np.int64), np.zeros(bins, np.int64)
    for row in rows:
        (admitted if row[1] else dropped)[row[0]] += row[2]
    return ScoreHistogram(np.linspace(0, 1, bins + 1), admitted, dropped)


def sigma_range(manifest: Manifest) -> tuple[float, float] | None:
    """The smallest and largest σ of scored pages (indexed), or None when nothing is scored."""
    ends = [manifest.conn.execute(
        f"SELECT p.sigma FROM pages p JOIN documents d ON d.id = p.doc_id "
        f"WHERE {LIVE_DOCUMENT_SQL} AND p.sigma IS NOT NULL ORDER BY p.sigma {direction} LIMIT 1").fetchone()
        for direction in ("ASC", "DESC")]  # each walks the index from its end, not every page
    return None if ends[0] is None else (float(ends[0][0]), float(ends[1][0]))


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
              picture_area_min: float | None = None, picture_score_min: float | None = None) -> Histogram | None:
    """σ of scored pages binned, each bin split by decision. None when nothing is scored.

    Bins are a whole number of tenths wide (the last edge moves up to fit), so they are sums of the kept
    counts (curation.manifest.aggregates), which count at the saved score cutoff; a score cutoff being tried
    moves the pages `moved_by_score` finds."""
    span = span or sigma_range(manifest)
    if span is None:
        return None
    low, high = math.floor(span[0]), math.ceil(span[1])
    high = max(high, low + 1)
    steps = math.ceil((high - low) * aggregates.SIGMA_STEPS / bins - 1e-9)  # fine bins per bin
    params = decision_params(manifest, threshold, rule, picture_area_min, picture_score_min)
    tally = tallies.tally(manifest, at_saved_score(params))
    to_bin = lambda fine: (fine - low * aggregates.SIGMA_STEPS) // steps  # noqa: E731
    total, kept = tally.by_bin("sigma_bin", to_bin, bins)
    moved = moved_by_score(manifest, params)
    has = ~np.isnan(moved.sigma)
    at = np.clip(to_bin(np.floor(moved.sigma[has] * aggregates.SIGMA_STEPS).astype(np.int64)), 0, bins - 1)
    kept += np.bincount(at, moved.kept[has] - moved.kept_saved[has], bins).astype(np.int64)
    edges = low + np.arange(bins + 1) * steps / aggregates.SIGMA_STEPS
    return Histogram(edges, kept, total - kept)


def picture_histogram(manifest: Manifest, threshold: float | None = None, bins: int = 45, *,
                      rule: str | None = None, picture_area_min: float | None = None,
                      picture_score_min: float | None = None) -> Histogram | None:
    """The largest picture's area (square inches) of pages with features, in bins equal on a log scale
    from PICTURE_FLOOR to PICTURE_CEILING, each split by decision; pages below the floor (no picture at
    all) count in the first bin. None when no page has features. The pages' largest pictures are those the
    saved score cutoff admits; a score cutoff being tried moves the pages `moved_by_score` finds."""
    low, high = math.log10(PICTURE_FLOOR), math.log10(PICTURE_CEILING)
    params = decision_params(manifest, threshold, rule, picture_area_min, picture_score_min)
    if aggregates.AREA_BINS % bins == 0:  # whole kept bins a bin: summed from the kept counts
        steps = aggregates.AREA_BINS // bins
        tally = tallies.tally(manifest, at_saved_score(params))
        total, kept = tally.by_bin("area_bin", lambda fine: fine // steps, bins)
    else:
        total, kept = _picture_bins(manifest, params, bins)
    moved = moved_by_score(manifest, params)
    has = ~np.isnan(moved.area_saved)  # a page without figures stays out of this histogram at any score cutoff

    def to_bin(area: np.ndarray) -> np.ndarray:
        return np.clip(np.floor((np.log10(np.maximum(area[has], PICTURE_FLOOR)) - low) * bins / (high - low)),
                       0, bins - 1).astype(np.int64)

    before, after = to_bin(moved.area_saved), to_bin(moved.area)
    total += np.bincount(after, minlength=bins) - np.bincount(before, minlength=bins)
    kept += (np.bincount(after, moved.kept[has], bins)
             - np.bincount(before, moved.kept_saved[has], bins)).astype(np.int64)
    if not total.any():
        return None
    return Histogram(np.logspace(low, high, bins + 1), kept, total - kept)


def _picture_bins(manifest: Manifest, params: dict, bins: int) -> tuple[np.ndarray, np.ndarray]:
    """Pages and kept pages a bin of the largest picture's area at the saved score cutoff, by a scan."""
    low, high = math.log10(PICTURE_FLOOR), math.log10(PICTURE_CEILING)
    aggregates.ensure_log10(manifest.conn)
    rows = manifest.conn.execute(
        f"SELECT MIN(MAX(CAST((log10(MAX(p.picture_area, :floor)) - :low) / :width AS INTEGER), 0), :last) AS bin, "
        f"SUM({KEEP_SQL}) AS kept, COUNT(*) AS pages "
        f"{PAGES_FROM} WHERE {LIVE_DOCUMENT_SQL} AND p.picture_area IS NOT NULL GROUP BY bin",
        {**at_saved_score(params), "floor": PICTURE_FLOOR, "low": low, "width": (high - low) / bins, "last": bins - 1},
    ).fetchall()
    kept, total = np.zeros(bins, np.int64), np.zeros(bins, np.int64)
    for row in rows:
        kept[row["bin"]] = row["kept"]
        total[row["bin"]] = row["pages"]
    return total, kept


def at_saved_score(params: dict) -> dict:
    return {**params, "picture_score_min": params["picture_score_saved"]}


# The pages holding a picture scored between two score cutoffs, through the scores' index, as the settings'
# triggers find them.
SCORED_BETWEEN_SQL = ("SELECT DISTINCT doc_id, page FROM pictures INDEXED BY pictures_score "
                      "WHERE score >= :low AND score < :high")


@dataclass(frozen=True)
class MovedPages:
    """The pages whose largest picture or decision a score cutoff being tried may change, a row each: σ, the
    largest picture and the decision at the saved and at the tried score cutoff (NaN: no figure)."""
    sigma: np.ndarray
    area_saved: np.ndarray
    kept_saved: np.ndarray
    area: np.ndarray
    kept: np.ndarray


NOTHING_MOVED = MovedPages(*(np.zeros(0) for _ in range(5)))


def moved_by_score(manifest: Manifest, params: dict) -> MovedPages:
    """The live scored pages holding a picture scored between the saved and the tried score cutoff (found
    through the scores' index): the only pages whose largest picture and decision the score cutoff changes.
    Threshold's figures and both histograms read them on each move: read once while nothing changed."""
    if params["picture_score_min"] == params["picture_score_saved"]:
        return NOTHING_MOVED
    key = (str(manifest.path), aggregates.version(manifest.conn), tuple(sorted(params.items())))
    with _moved_lock:
        found = _moved.get(key)
    if found is None:
        found = _read_moved(manifest, params)
        with _moved_lock:
            _moved.clear()  # one move at a time: a list of up to every scored page
            _moved[key] = found
    return found


_moved: dict[tuple, MovedPages] = {}
_moved_lock = threading.Lock()


def _read_moved(manifest: Manifest, params: dict) -> MovedPages:
    tried, saved = params["picture_score_min"], params["picture_score_saved"]
    kept_saved = KEEP_SQL.replace(":picture_score_min", ":picture_score_saved")
    rows = manifest.conn.execute(
        f"SELECT p.sigma, p.picture_area, {kept_saved}, ({PAGE_AREA_SQL}), {KEEP_SQL} {PAGES_FROM} "
        f"WHERE {LIVE_DOCUMENT_SQL} AND p.status = 'ok' AND (p.doc_id, p.page) IN ({SCORED_BETWEEN_SQL})",
        {**params, "low": min(tried, saved), "high": max(tried, saved)}).fetchall()
    if not rows:
        return NOTHING_MOVED
    columns = np.array(rows, dtype=float).T  # NULL reads as NaN
    return MovedPages(columns[0], columns[1], np.nan_to_num(columns[2]), columns[3], np.nan_to_num(columns[4]))


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


def square_inches(area: float) -> str:
    """An area as a person writes it: 2 sq in, 0.35 sq in, 48.1 sq in. Cut to the hundredth below, never
    rounded up: cutoffs are kept to hundredths, so a picture shown beside one is never shown on its other side
    (1.97 is not "2", and a picture of 1.996 under a cutoff of 2 reads 1.99)."""
    text = f"{math.floor(area * 100 + 1e-6) / 100:,.2f}".rstrip("0").rstrip(".")
    return f"{text} sq in"


def sigma_beside(sigma: float, cutoff: float) -> str:
    """σ to a tenth, or to as many places as it takes not to read as the cutoff itself when it is not (σ 45.04
    is kept by σ > 45: "45.0" would say otherwise; it reads "45.04")."""
    places = 1
    while places < 4 and sigma != cutoff and round(sigma, places) == round(cutoff, places):
        places += 1
    return f"σ {sigma:.{places}f}"


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
