"""The judge of one archive, learned from its curator's picture decisions: `learn --boxes --judge` (not the default:
on the real pages measured it was never kept, docs/picture-finder.md).

Within one archive (one periodical's layout) the finder's wrong boxes repeat: blocks of handwriting, a seal, the
masthead's letters, an ornament. The global judge (curation.pictures.picture_judge) had too few of them across
sources to learn from; a curator's decisions on a part of an archive's pages are exactly those. So:

1. What it learns from (`decisions`): each picture a curator decided, on pages read as ingest reads them (MAX_PAGES
   at most, drawn from the seed where there are more). A picture: a found picture included, kept or redrawn (also
   measured at the redrawn box), a box a curator drew, a box given through `boxes --from` that counts. Not a
   picture: a found picture deleted or excluded (also one `boxes --from` removed because no given box matches it),
   a given box that does not count.
2. Each is measured as the judge measures a box (picture_judge.MEASURES: the finder's cells in use and the page
   analysis's ink map), and a regularised logistic head (picture_judge.fit) is learned.
3. The check, leave one page out: each page's found pictures judged by a head learned from the other pages'
   decisions, at a cutoff chosen on the other pages' held-out probabilities (the one with the most right
   decisions there). Against the finder alone (the found pictures' stored scores at the manifest's score cutoff),
   on the same found pictures: the judge is kept only with more right decisions (a wrong box left out or a
   picture kept, each one), by more than chance (`better`). The judge kept is learned from every decision, its cutoff chosen on every page's
   held-out probabilities.
4. Where kept (curation.runs.learn_boxes stores it, curation.manifest.finders), the pages no curator touched are
   found again with it: a picture it judges not a picture stays in the manifest under the score cutoff, not
   counted, and Review says "judged not a picture (score 0.08)". Its score is Head.score: the chosen cutoff falls
   on the manifest's score cutoff.

Its cost beside what ingest computes anyway: the measures, about a millisecond a picture.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..manifest.rules import LIVE_DOCUMENT_SQL
from ..manifest.store import Manifest
from ..pictures import picture_judge
from .jobs import plural

MIN_PAGES = 2  # the check leaves one page out: at least two pages with decisions
MIN_EACH = 3  # pictures and not-pictures each, found by the finder: fewer teach a head nothing it can check
MAX_PAGES = 120  # pages read at most: each costs a reading and the finder's cells (about half a second on a core)
MIN_GAIN = 2  # boxes decided right beyond the finder alone, at the least
SURE = 1.64  # ... and beyond chance: one time in twenty a judge no better than the finder would pass
CUTOFFS = tuple(round(c, 2) for c in np.arange(0.05, 0.96, 0.05))
STRENGTH = 1.0  # the logistic head's inverse regularisation (scikit-learn's C): few decisions, a firm prior

DECIDED_SQL = (
    "SELECT x.doc_id, x.page, d.path, x.x0, x.y0, x.x1, x.y1, x.fx0, x.fy0, x.fx1, x.fy1, x.keep, x.deleted, x.added, "
    "x.rank, x.score, COALESCE(p.boxed, 0) AS boxed FROM pictures x "
    "JOIN pages p ON p.doc_id = x.doc_id AND p.page = x.page JOIN documents d ON d.id = x.doc_id "
    f"WHERE {LIVE_DOCUMENT_SQL} AND p.status = 'ok' "
    "AND (x.keep IS NOT NULL OR x.deleted OR x.added OR x.fx0 IS NOT NULL OR p.boxed = 1) "
    "ORDER BY x.doc_id, x.page, x.number")


@dataclass(frozen=True)
class Decision:
    """One picture a curator decided: where the finder put it (None: a curator drew it), where the curator put it
    (None: not redrawn), whether it is a picture, and the score it is stored with."""

    doc_id: int
    page: int
    path: str
    found: tuple[float, float, float, float] | None
    drawn: tuple[float, float, float, float] | None
    picture: bool
    score: float | None


def decision(row) -> Decision | None:
    """A picture row's decision, or None where a curator decided nothing about it."""
    if row["added"] and row["deleted"]:
        return None  # a box a curator drew and took back
    not_picture = bool(row["deleted"]) or row["keep"] == 0
    picture = not not_picture and (row["keep"] == 1 or row["fx0"] is not None or bool(row["added"]) or bool(row["boxed"]))
    if not (picture or not_picture):
        return None
    found = None if row["added"] or row["rank"] is None else (row["x0"], row["y0"], row["x1"], row["y1"])
    drawn = ((row["fx0"], row["fy0"], row["fx1"], row["fy1"]) if row["fx0"] is not None
             else (row["x0"], row["y0"], row["x1"], row["y1"]) if row["added"] else None)
    if found is None and drawn is None:
        return None
    return Decision(row["doc_id"], row["page"], row["path"], found, drawn, picture, row["score"])


def decisions(manifest: Manifest, seed: int) -> list[Decision]:
    """The decisions the judge learns from, on MAX_PAGES pages at most (drawn from `seed` where there are more)."""
    decided = [d for d in map(decision, manifest.conn.execute(DECIDED_SQL)) if d is not None]
    pages = sorted({(d.doc_id, d.page) for d in decided})
    if len(pages) > MAX_PAGES:
        chosen = {pages[i] for i in np.random.default_rng(seed).permutation(len(pages))[:MAX_PAGES]}
        decided = [d for d in decided if (d.doc_id, d.page) in chosen]
    return decided


@dataclass(frozen=True)
class Readiness:
    """What the judge would learn from: pages with decisions, and the found pictures decided either way."""

    pages: int
    pictures: int  # found pictures a curator kept, included or redrew (and boxes given that count)
    not_pictures: int  # found pictures a curator deleted or excluded

    @property
    def why_not(self) -> str | None:
        if self.pages < MIN_PAGES:
            return (f"{plural(self.pages, 'page')} with pictures you decided; at least {MIN_PAGES} are needed (it "
                    "learns from the others and checks on each)")
        if self.not_pictures < MIN_EACH:
            return (f"{self.not_pictures:,} found box{'' if self.not_pictures == 1 else 'es'} you deleted or excluded; "
                    f"at least {MIN_EACH} are needed to learn what is not a picture here")
        if self.pictures < MIN_EACH:
            return (f"{plural(self.pictures, 'found picture')} you kept, included or redrew; at least {MIN_EACH} "
                    "are needed to learn what is a picture here")
        return None

    @property
    def summary(self) -> str:
        if self.why_not:
            return f"The judge has too little to learn from: {self.why_not}."
        return (f"The judge learns from {plural(self.pictures, 'picture')} you kept and "
                f"{self.not_pictures:,} {'box' if self.not_pictures == 1 else 'boxes'} you deleted or excluded, on "
                f"{plural(self.pages, 'page')}; it is kept only if it decides them better than the finder alone, "
                "each page judged by what it learned from the others.")


def readiness_of(decided: list[Decision]) -> Readiness:
    found = [d for d in decided if d.found is not None]
    return Readiness(len({(d.doc_id, d.page) for d in decided}), sum(d.picture for d in found),
                     sum(not d.picture for d in found))


def readiness(manifest: Manifest, seed: int) -> Readiness:
    return readiness_of(decisions(manifest, seed))


@dataclass
class Examples:
    """The decisions measured: a row of MEASURES each, its page, whether it is a picture, whether the finder found
    it there (a found box: checked; a box a curator drew: learned from only), and its stored score."""

    measured: list[np.ndarray] = field(default_factory=list)
    page: list[int] = field(default_factory=list)
    picture: list[bool] = field(default_factory=list)
    found: list[bool] = field(default_factory=list)
    score: list[float] = field(default_factory=list)

    def add(self, measured: np.ndarray, page: int, picture: bool, found: bool, score: float | None) -> None:
        self.measured.append(measured)
        self.page.append(page)
        self.picture.append(picture)
        self.found.append(found)
        self.score.append(np.nan if score is None else float(score))

    def arrays(self) -> tuple[np.ndarray, ...]:
        return (np.array(self.measured).reshape(-1, len(picture_judge.MEASURES)), np.array(self.page),
                np.array(self.picture, bool), np.array(self.found, bool), np.array(self.score))


def measure_page(examples: Examples, index: int, page_decisions: list[Decision], gray: np.ndarray, factor: float,
                 cells: np.ndarray, dpi: float) -> None:
    """Each decision of one page measured on its `gray` (reference pixels / `factor` a pixel), with the finder's
    `cells` over it: a found picture at the finder's box, and at the curator's where it was redrawn or drawn."""
    from ..scoring.features import analyse_page

    analysis, _ = analyse_page(gray, dpi)
    for d in page_decisions:
        for box, found in ((d.found, True), (d.drawn, False)):
            if box is not None:
                at = [v / factor for v in box]
                examples.add(picture_judge.measures(gray, cells, at, dpi, analysis), index, d.picture, found, d.score)


@dataclass
class Outcome:
    """The judge learned (None where not kept), why, and the check's figures."""

    head: picture_judge.Head | None
    message: str
    figures: dict = field(default_factory=dict)


def tally(picture: np.ndarray, counted: np.ndarray) -> dict:
    """Right decisions, precision and recall of `counted` over found boxes whose truth is `picture`."""
    kept = int(counted.sum())
    right = int((picture & counted).sum())
    return {"right": right + int((~picture & ~counted).sum()), "precision": right / kept if kept else None,
            "recall": right / int(picture.sum()) if picture.any() else None, "kept": kept,
            "wrong_kept": kept - right}


def out_of_page(measured: np.ndarray, page: np.ndarray, picture: np.ndarray, found: np.ndarray) -> np.ndarray:
    """Each found box's probability from a head learned from the other pages' decisions (0.5 where those hold
    one kind only)."""
    probability = np.full(len(page), np.nan)
    for held in np.unique(page[found]):
        head = picture_judge.fit(measured[page != held], picture[page != held], strength=STRENGTH)
        at = found & (page == held)
        probability[at] = 0.5 if head is None else head.probability(measured[at])
    return probability


def best_cutoff(truth: np.ndarray, probability: np.ndarray) -> float:
    """The cutoff with the most right decisions over found boxes whose truth is `truth` (the one nearest 0.5 of
    those alike)."""
    return max(CUTOFFS, key=lambda c: (tally(truth, probability >= c)["right"], -abs(c - 0.5)))


def better(gained: int, lost: int) -> bool:
    """The judge decides right more often than the finder alone by more than chance: the boxes it gets right where
    the finder did not, less the other way round, at least MIN_GAIN and at least SURE standard deviations of that
    difference where neither is better (the square root of both together: McNemar's)."""
    return gained - lost >= max(MIN_GAIN, SURE * np.sqrt(gained + lost))


def learned(examples: Examples, score_min: float) -> Outcome:
    """The judge learned from `examples`, kept only where it decides the found boxes better than the finder alone
    leave one page out; `score_min` is the manifest's score cutoff (the finder alone counts a found box at or above
    it, and the judge's cutoff is moved onto it)."""
    measured, page, picture, found, score = examples.arrays()
    probability = out_of_page(measured, page, picture, found)
    truth, held, on_page = picture[found], probability[found], page[found]
    cutoff = best_cutoff(truth, held)
    counted = np.zeros(len(truth), bool)
    for one in np.unique(on_page):  # each page's cutoff chosen on the other pages: its own truth is not read
        at = on_page == one
        counted[at] = held[at] >= best_cutoff(truth[~at], held[~at])
    by_finder = np.nan_to_num(score[found], nan=1.0) >= score_min
    finder_alone, judged = tally(truth, by_finder), tally(truth, counted)
    gained = int(((counted == truth) & (by_finder != truth)).sum())  # right where the finder alone was wrong
    lost = int(((counted != truth) & (by_finder == truth)).sum())
    figures = {"pages": int(len(np.unique(page))), "pictures": int(truth.sum()), "not_pictures": int((~truth).sum()),
               "drawn": int((~found).sum()), "cutoff": cutoff, "finder": finder_alone, "judge": judged,
               "gained": gained, "lost": lost}
    said = (f"{judged['right']} of {len(truth)} found boxes decided right against the finder alone's "
            f"{finder_alone['right']}, each page judged by what it learned from the others "
            f"(wrong boxes kept {finder_alone['wrong_kept']} → {judged['wrong_kept']}, pictures kept "
            f"{finder_alone['kept'] - finder_alone['wrong_kept']} → {judged['kept'] - judged['wrong_kept']} of "
            f"{int(truth.sum())})")
    if not better(gained, lost):
        return Outcome(None, f"kept no judge: {said}, not more than chance", figures)
    head = picture_judge.fit(measured, picture, cutoff, STRENGTH)
    stored = min(0.95, max(0.05, score_min))  # a cutoff of 0 or 1 has no logit to move onto
    head = picture_judge.Head(head.mean, head.scale, head.coef, head.intercept, cutoff, stored)
    return Outcome(head, f"learned a judge: {said}", figures)
