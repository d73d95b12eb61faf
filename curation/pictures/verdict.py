"""Is this candidate a picture? A small learned head over the page analysis's measures of each candidate,
and the choice of the page's pictures from the scored candidates.

The head is 200 small decision trees (gradient boosting) over the measures, kept as arrays in `verdict.npz`
and trained by `python -m curation.pictures.train` (the recipe, with what it learned from and its
leave-one-source-out figures, is `verdict.json` beside it). Leave one source out, it kept more pictures
right than a logistic head over the measures and the crop's embedding, at a fraction of the cost: the
embedding serves the curator's tools (curation.manifest.picture_embeddings), not the verdict. Candidates
overlap (the same picture read several ways); the best-scoring one of each overlapping group at or above
the cutoff is kept.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..scoring.features import REFERENCE_DPI, PageAnalysis, analyse_page
from . import boxes, embedding, region, text
from .candidates import MEASURES, Candidate, propose, text_over_content

HEAD_FILE = Path(__file__).with_name("verdict.npz")
RECIPE_FILE = Path(__file__).with_name("verdict.json")
OVERLAP = 0.3  # candidates sharing this much of the smaller one's box show the same picture
# Candidates scored down to this are stored too, under the head's cutoff, so that a lower score cutoff
# (the manifest's picture_score_min) shows what it would add: the cutoffs chosen leave one source out went
# down to 0.05 (verdict.json).
STORED_FLOOR = 0.05


@dataclass(frozen=True)
class Head:
    """Gradient-boosted decision trees over a candidate's measures (as scikit-learn's
    HistGradientBoostingClassifier grew them), kept as plain arrays: every tree's nodes one after another."""

    feature: np.ndarray  # per node: the measure it splits on
    threshold: np.ndarray  # per node: at most this goes left
    left: np.ndarray  # per node: its children's indexes (all trees' nodes in one array)
    right: np.ndarray
    leaf: np.ndarray  # per node: a leaf, whose value is added
    value: np.ndarray
    roots: np.ndarray  # each tree's first node
    baseline: float  # the log-odds before the first tree
    cutoff: float
    measures: tuple[str, ...] = MEASURES
    tighten: bool = False  # a kept box is tightened to its non-text ink (curation.pictures.boxes)
    margin: float = 0.0  # then grown by this share of the page's shorter side

    def score(self, inputs: np.ndarray) -> np.ndarray:
        """The probability that each row of inputs (the candidate measures, MEASURES) is a picture."""
        inputs = np.asarray(inputs, np.float64)[:, :len(self.measures)]
        node = np.repeat(self.roots[None, :], len(inputs), axis=0)
        rows = np.arange(len(inputs))[:, None]
        while not self.leaf[node].all():  # one level of every tree a pass
            goes_left = inputs[rows, self.feature[node]] <= self.threshold[node]
            node = np.where(self.leaf[node], node, np.where(goes_left, self.left[node], self.right[node]))
        logits = self.baseline + self.value[node].sum(axis=1)
        return 1 / (1 + np.exp(-np.clip(logits, -50, 50)))

    @classmethod
    def from_trees(cls, model, cutoff: float, tighten: bool = False, margin: float = 0.0) -> "Head":
        """The head of a fitted HistGradientBoostingClassifier (numeric inputs, none missing)."""
        trees = [predictor.nodes for (predictor,) in model._predictors]
        starts = np.cumsum([0] + [len(t) for t in trees[:-1]])
        nodes = np.concatenate(trees)
        shift = np.repeat(starts, [len(t) for t in trees])
        return cls(nodes["feature_idx"].astype(np.int16), nodes["num_threshold"].astype(np.float64),
                   (nodes["left"] + shift).astype(np.int32), (nodes["right"] + shift).astype(np.int32),
                   nodes["is_leaf"].astype(bool), nodes["value"].astype(np.float64), starts.astype(np.int32),
                   float(np.ravel(model._baseline_prediction)[0]), cutoff, MEASURES, tighten, margin)

    def save(self, path: Path = HEAD_FILE) -> None:
        np.savez_compressed(path, **{name: getattr(self, name) for name in _ARRAYS}, baseline=np.float64(self.baseline),
                            cutoff=np.float64(self.cutoff), measures=np.array(self.measures),
                            tighten=np.bool_(self.tighten), margin=np.float64(self.margin))

    @classmethod
    def load(cls, path: Path = HEAD_FILE) -> "Head":
        with np.load(path) as data:
            if "roots" not in data:
                raise ValueError(f"{path} is an older kind of head; train it again (python -m curation.pictures.train)")
            head = cls(*(data[name] for name in _ARRAYS), float(data["baseline"]), float(data["cutoff"]),
                       tuple(str(m) for m in data["measures"]), bool(data.get("tighten", False)),
                       float(data.get("margin", 0.0)))
        if head.measures != MEASURES:
            raise ValueError(f"{path} was trained on other measures; train it again (python -m curation.pictures.train)")
        return head


_ARRAYS = ("feature", "threshold", "left", "right", "leaf", "value", "roots")


@dataclass(frozen=True)
class CheckedPicture:
    box: tuple[int, int, int, int]  # x0, y0, x1, y1 in the page's pixels
    area: float  # square inches
    score: float  # the head's probability that it is a picture


@dataclass(frozen=True)
class PageCandidates:
    """A page's candidates and the head's inputs for each (its measures; then, where asked for, the crop's
    embedding, which the training keeps to compare heads with)."""

    candidates: list[Candidate]
    inputs: np.ndarray
    analysis: PageAnalysis | None = None  # what the candidates were read from, to tighten a kept box
    text: np.ndarray | None = None  # the text mask over the analysis's content

    def picture_box(self, i: int, shape: tuple[int, int], tighten: bool, margin: float) -> tuple[int, int, int, int]:
        """Candidate `i`'s box as a picture's on a page of `shape` (height, width): tightened to its
        non-text ink where asked, then grown by `margin` (curation.pictures.boxes)."""
        box = self.candidates[i].box
        if tighten and self.analysis is not None:
            box = boxes.tighten(self.analysis, self.text, box)
        return boxes.with_margin(box, shape, margin) if margin else box


def page_candidates(gray: np.ndarray, dpi: float = REFERENCE_DPI, embedded: bool = False) -> PageCandidates:
    """Candidates of a grayscale page at `dpi`, with what the head reads of each."""
    width = len(MEASURES) + (embedding.DIMENSIONS if embedded else 0)
    analysed, _ = analyse_page(gray, dpi)
    if analysed is None:
        return PageCandidates([], np.zeros((0, width)))
    content_text = text_over_content(analysed, text.text_map(gray))
    candidates = propose(analysed, content_text)
    measures = np.array([c.vector() for c in candidates]).reshape(len(candidates), len(MEASURES))
    if not embedded:
        return PageCandidates(candidates, measures, analysed, content_text)
    crops = [gray[y0:max(y1, y0 + 1), x0:max(x1, x0 + 1)] for x0, y0, x1, y1 in (c.box for c in candidates)]
    return PageCandidates(candidates, np.hstack([measures, embedding.embed(crops)]), analysed, content_text)


def select(boxes: list, scores: np.ndarray, cutoff: float, overlap: float = OVERLAP) -> list[int]:
    """Indexes of the boxes kept: best first, at least `cutoff`, none overlapping a better one."""
    kept: list[int] = []
    for i in np.argsort(-scores, kind="stable"):
        if scores[i] < cutoff:
            break
        if all(_shared(boxes[i], boxes[k]) < overlap for k in kept):
            kept.append(int(i))
    return kept


def _shared(a, b) -> float:
    """The share of the smaller box that lies in the other."""
    w, h = min(a[2], b[2]) - max(a[0], b[0]), min(a[3], b[3]) - max(a[1], b[1])
    smaller = min((a[2] - a[0]) * (a[3] - a[1]), (b[2] - b[0]) * (b[3] - b[1]))
    return max(0, w) * max(0, h) / smaller if smaller > 0 else 0.0


def check_page(gray: np.ndarray, dpi: float = REFERENCE_DPI, head: Head | None = None,
               cutoff: float | None = None) -> list[CheckedPicture]:
    """The pictures of a grayscale page at `dpi`, checked by the head at `cutoff` (the head's own unless
    given), largest first."""
    head = head or shipped_head()
    found = page_candidates(gray, dpi)
    if not found.candidates:
        return []
    scores = head.score(found.inputs)
    kept = select([c.box for c in found.candidates], scores, head.cutoff if cutoff is None else cutoff)
    checked = []
    for i in kept:
        box = found.picture_box(i, gray.shape, head.tighten, head.margin)
        area = (box[2] - box[0]) * (box[3] - box[1]) / dpi / dpi
        checked.append(CheckedPicture(box, area, float(scores[i])))
    return sorted(checked, key=lambda p: p.area, reverse=True)


_shipped: Head | None = None


def shipped_head() -> Head:
    """The head trained on the labelled real pages, as committed beside this module."""
    global _shipped
    if _shipped is None:
        _shipped = Head.load()
    return _shipped


def check_installed() -> None:
    """Raise ValueError, saying what to install, when the learned verdict cannot run here: before any
    page is read, not as every page's failure."""
    try:
        text.model_path()
        shipped_head()
    except Exception as exc:  # a missing package, model file or head: each says what to install
        raise ValueError(f"the learned picture verdict cannot run here: {exc}") from None


def recipe() -> dict:
    """What the shipped head learned from and its figures (verdict.json)."""
    return json.loads(RECIPE_FILE.read_text(encoding="utf-8"))


def checked_columns(gray: np.ndarray, box_scale: float = 1.0, head: Head | None = None) -> dict:
    """The page's picture columns (as curation.scoring.features writes them) from the checked pictures
    of `gray` (a page at the reference resolution times 1 / `box_scale`): every entry
    [x0, y0, x1, y1, square inches, legend, legend confidence, score], legends not yet read. The entries go
    down to STORED_FLOOR (best first, one of each overlapping group, so those at or above the head's cutoff
    are what it keeps); the page's figures are those of its pictures at or above the head's cutoff (the
    manifest reckons them again at its own score cutoff, curation.manifest.page_figures)."""
    head = head or shipped_head()
    dpi = REFERENCE_DPI / box_scale
    pictures = check_page(gray, dpi, head, cutoff=min(STORED_FLOOR, head.cutoff))
    return picture_columns(pictures, head.cutoff, gray.size / dpi / dpi, box_scale)


def picture_columns(pictures: list, cutoff: float, content: float, box_scale: float) -> dict:
    """The picture columns of a page's scored `pictures` (largest first; each with `box` in the page's pixels,
    `area` in square inches and `score`): every entry [x0, y0, x1, y1 (times `box_scale`), square inches,
    legend, legend confidence, score[, region where the picture has one (curation.pictures.region)]], and the page's figures from those scored at or above `cutoff`, over
    `content` square inches of page."""
    entries = [[*(round(v * box_scale) for v in p.box), round(p.area, 3), None, None, round(p.score, 4),
                *_region_entry(p)] for p in pictures]
    counted = [(p, entry) for p, entry in zip(pictures, entries) if p.score >= cutoff]
    largest = counted[0][1][:4] if counted else [None] * 4
    return {
        "pictures": json.dumps(entries),
        "picture_area": counted[0][0].area if counted else 0.0,
        "picture_count": len(counted),
        "picture_share": min(1.0, sum(p.area for p, _ in counted) / content) if content else 0.0,
        **dict(zip(("picture_x0", "picture_y0", "picture_x1", "picture_y1"), largest)),
    }


def _region_entry(picture) -> list:
    """The picture's stored region (curation.pictures.region.encode), as the last of its entry, where it has one."""
    found = getattr(picture, "region", None)
    return [] if found is None else [region.encode(found)]
