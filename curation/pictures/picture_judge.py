"""Is a found picture one a curator would export? The judge of each picture the finder keeps.

The finder finds nearly every picture, and with them blocks of handwriting, a seal with the writing round it, bare
paper, a masthead's letters. The judge reads what is at hand when a picture is found (the page analysis's ink map,
which the finder fitted the box on, and the finder's cells) and measures the box (MEASURES): how sure the cells are
over it, its size, shape and place on the page, how much ink it holds and how dark, and how much of that ink is in
pieces the size of letters, in lines with paper between them, as type and handwriting are. A logistic head over the
measures gives the probability that the box is a picture; at or above its cutoff the picture counts.

The head is learned by `python -m curation.pictures.picture_judge_train` from the finder's own boxes on the measure's
pages, each found by heads that learned from none of its source; where it is shipped, picture_judge.json holds the
head, what it learned from and its leave-one-source-out figures. None is shipped: on the measure it did not beat the
finder alone (docs/picture-finder.md), and pictures are stored with their cells' certainty (`cells_stored`). About a
millisecond a picture: the ink map is the analysis's own.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path

import cv2
import numpy as np

from ..scoring.features import REFERENCE_DPI, PageAnalysis, analyse_page

HEAD_FILE = Path(__file__).with_name("picture_judge.json")
MEASURES = ("score", "cell_mean", "cell_share", "log_area", "log_aspect", "page_share", "edge_margin",
            "ink_share", "darkness", "letter_share", "letters_per_sq_in", "long_share", "empty_rows",
            "ring_ink")
LETTER_IN = (0.03, 0.3)  # inches: the height of a piece of ink that may be a letter, or a handwritten stroke
LONG_IN = 0.5  # inches: a piece of ink this long on a side is a picture's stroke, hatching or fill, not a letter
RING_IN = 0.25  # inches: the paper around a box measured as its surroundings
# Where the judge's cutoff falls on the scores it stores: the manifest's default picture score cutoff
# (curation.manifest.rules.DEFAULT_PICTURE_SCORE_MIN), so a new manifest counts what the recipe counted.
STORED_CUTOFF = 0.2


@dataclass(frozen=True)
class Head:
    """A logistic head over the measures, standardised first (the recipe's scikit-learn fit, kept as numbers)."""

    mean: np.ndarray
    scale: np.ndarray
    coef: np.ndarray
    intercept: float
    cutoff: float  # the recipe's: a box this probable or more is a picture
    stored_cutoff: float = STORED_CUTOFF

    def probability(self, measured: np.ndarray) -> np.ndarray:
        """The probability that each row of `measured` (MEASURES) is a picture."""
        return 1 / (1 + np.exp(-np.clip(self._logit(measured), -50, 50)))

    def score(self, measured: np.ndarray) -> np.ndarray:
        """The score a picture is stored with: the probability moved so that the recipe's cutoff falls on
        `stored_cutoff`, the manifest's default picture score cutoff, which a curator moves on Threshold."""
        shift = np.log(self.stored_cutoff / (1 - self.stored_cutoff)) - np.log(self.cutoff / (1 - self.cutoff))
        return 1 / (1 + np.exp(-np.clip(self._logit(measured) + shift, -50, 50)))

    def _logit(self, measured: np.ndarray) -> np.ndarray:
        z = (np.asarray(measured, np.float64).reshape(-1, len(MEASURES)) - self.mean) / self.scale
        return z @ self.coef + self.intercept

    def as_dict(self) -> dict:
        return {"measures": list(MEASURES), "mean": self.mean.tolist(), "scale": self.scale.tolist(),
                "coef": self.coef.tolist(), "intercept": self.intercept, "cutoff": self.cutoff,
                "stored_cutoff": self.stored_cutoff}

    @classmethod
    def from_dict(cls, data: dict) -> "Head":
        if tuple(data["measures"]) != MEASURES:
            raise ValueError("the judge's head was learned on other measures: train it again "
                             "(python -m curation.pictures.picture_judge_train)")
        return cls(np.array(data["mean"]), np.array(data["scale"]), np.array(data["coef"]),
                   float(data["intercept"]), float(data["cutoff"]), float(data.get("stored_cutoff", STORED_CUTOFF)))


def fit(inputs: np.ndarray, labels: np.ndarray, cutoff: float = 0.5, strength: float = 1.0) -> Head | None:
    """A logistic head over `inputs` (rows of MEASURES) and `labels` (True: a picture), standardised, the two kinds
    weighed alike, regularised by `strength` (scikit-learn's C: few boxes, so a firm prior); None without both."""
    from sklearn.linear_model import LogisticRegression

    labels = np.asarray(labels, bool)
    if len(set(labels.tolist())) < 2:
        return None
    inputs = np.asarray(inputs, np.float64)
    mean, scale = inputs.mean(axis=0), inputs.std(axis=0) + 1e-9
    model = LogisticRegression(C=strength, class_weight="balanced", max_iter=5000)
    model.fit((inputs - mean) / scale, labels)
    return Head(mean, scale, model.coef_[0].astype(np.float64), float(model.intercept_[0]), cutoff)


def measures(gray: np.ndarray, cells: np.ndarray, box, dpi: float = REFERENCE_DPI,
             analysis: PageAnalysis | None = None) -> np.ndarray:
    """MEASURES of the picture `box` (x0, y0, x1, y1 in `gray`'s pixels; `gray` the page at `dpi`), with the
    finder's `cells` over the page ((rows, columns), or (heads, rows, columns), their mean taken)."""
    h, w = gray.shape
    x0, y0, x1, y1 = (int(v) for v in box)
    bw, bh = max(1, x1 - x0), max(1, y1 - y0)
    grid = cells.mean(axis=0) if cells.ndim == 3 else cells
    gy, gx = grid.shape
    over = grid[min(gy - 1, y0 * gy // h):max(1, -(-y1 * gy // h)), min(gx - 1, x0 * gx // w):max(1, -(-x1 * gx // w))]
    area = bw * bh / dpi / dpi
    margin = min(x0, y0, w - x1, h - y1) / min(h, w)
    if analysis is None:
        analysis, _ = analyse_page(gray, dpi)
    ink = _ink_measures(analysis, (x0, y0, x1, y1)) if analysis is not None else (0.0,) * 7
    return np.array([float(over.max()), float(over.mean()), float((over >= 0.5).mean()), np.log(max(area, 1e-3)),
                     np.log(bw / bh), bw * bh / (w * h), margin, *ink])


def _ink_measures(analysis: PageAnalysis, box) -> tuple[float, ...]:
    """The box's ink on the analysis's map: its share of the box, how dark it is, the share of it in pieces of a
    letter's height and their count a square inch, the share in long pieces, the share of the box's rows
    without ink (the paper between lines of type), and the ink's share of the ring of paper around the box."""
    left, top = analysis.offset
    s, dpi = analysis.scale, analysis.dpi
    ah, aw = analysis.ink.shape
    ax0, ay0 = max(0, round((box[0] - left) / s)), max(0, round((box[1] - top) / s))
    ax1, ay1 = min(aw, round((box[2] - left) / s)), min(ah, round((box[3] - top) / s))
    if ax1 - ax0 < 2 or ay1 - ay0 < 2:
        return (0.0,) * 7
    strength = analysis.ink[ay0:ay1, ax0:ax1]
    ink = (strength >= analysis.threshold).astype(np.uint8)
    share = float(ink.mean())
    darkness = float(strength[ink > 0].mean()) / 255 if share else 0.0
    count, _, stats, _ = cv2.connectedComponentsWithStats(ink, connectivity=8)
    stats = stats[1:]
    tall, wide, pixels = stats[:, cv2.CC_STAT_HEIGHT] / dpi, stats[:, cv2.CC_STAT_WIDTH] / dpi, stats[:, cv2.CC_STAT_AREA]
    total = max(1, int(pixels.sum()))
    letters = (tall >= LETTER_IN[0]) & (tall <= LETTER_IN[1]) & (wide <= 2 * LETTER_IN[1])
    long_pieces = np.maximum(tall, wide) >= LONG_IN
    square_inches = ink.size / dpi / dpi
    empty_rows = float((ink.mean(axis=1) < 0.01).mean())
    reach = max(1, round(RING_IN * dpi))
    rx0, ry0, rx1, ry1 = max(0, ax0 - reach), max(0, ay0 - reach), min(aw, ax1 + reach), min(ah, ay1 + reach)
    ring = (analysis.ink[ry0:ry1, rx0:rx1] >= analysis.threshold)
    ring_pixels = ring.size - ink.size
    ring_ink = float(ring.sum() - ink.sum()) / ring_pixels if ring_pixels > 0 else 0.0
    return (share, darkness, float(pixels[letters].sum()) / total, float(letters.sum()) / square_inches,
            float(pixels[long_pieces].sum()) / total, empty_rows, ring_ink)


def judged(pictures: list, gray: np.ndarray, cells: np.ndarray, dpi: float = REFERENCE_DPI,
           head: Head | None = None, cells_cutoff: float | None = None) -> list:
    """The finder's `pictures` (finder.FoundPicture) each with the score it is stored with: at or above
    STORED_CUTOFF it is a picture. The judge's (Head.score) where one is shipped; else the cells' certainty moved
    so that the finder's own cutoff (`cells_cutoff`, its settings') falls on STORED_CUTOFF (cells_stored)."""
    head = head or shipped_head()
    if head is None or not pictures:
        return pictures if cells_cutoff is None else [replace(p, score=cells_stored(p.score, cells_cutoff))
                                                      for p in pictures]
    analysis, _ = analyse_page(gray, dpi)
    scores = head.score(np.array([measures(gray, cells, p.box, dpi, analysis) for p in pictures]))
    return [replace(p, score=float(s)) for p, s in zip(pictures, scores)]


def cells_stored(score: float, cutoff: float) -> float:
    """The cells' certainty `score` as stored, moved (piecewise linearly, in order) so that the finder's `cutoff`
    falls on STORED_CUTOFF: the manifest counts what the finder's recipe counted and measured (its settings'
    cutoff was chosen leave one source out), and a picture under it stays in the manifest, not counted."""
    if score >= cutoff:
        return STORED_CUTOFF + (1 - STORED_CUTOFF) * (score - cutoff) / max(1e-9, 1 - cutoff)
    return STORED_CUTOFF * score / max(1e-9, cutoff)


_HEAD: Head | None = None


def shipped_head() -> Head | None:
    """The shipped judge (picture_judge.json), or None where none is shipped."""
    global _HEAD
    if _HEAD is None and HEAD_FILE.exists():
        _HEAD = Head.from_dict(json.loads(HEAD_FILE.read_text(encoding="utf-8"))["head"])
    return _HEAD
