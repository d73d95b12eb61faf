"""A picture's kind suggested from its own look (engraving, woodcut, halftone, ...), or none where unsure.

The suggestion reads the picture's network input (embedding.fit_on_paper: its gray crop fitted to 224 x 224 on
white paper), as the picture job holds it beside the embedding: a few measures of its look (`look_measures`:
how much ink, how much of it mid-grey, how sharp, how thick its strokes, how much hatching, how straight its
lines) and, where the shipped model was trained with it, the embedding. A multinomial logistic regression over
them (`KindModel`, kept as arrays in `kind.npz`, trained by `python -m curation.pictures.kind_train`; its
recipe and leave-one-source-out figures are `kind.json` beside it) gives each kind a probability; a picture
whose best kind is less probable than the model's cutoff gets no suggestion, and its caption's `{kind}` is the
curator's class word (curation.export.captions). The curator's kind always wins over the suggestion
(curation.captions.best.kind_of).

A halftone screen's dots cannot be counted here: at the reference 144 dpi a newspaper's 65-133 lines per inch
are at or past what the page's pixels hold, and the input is shrunk further. A screen reads as its tone: many
mid-greys and soft edges.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

# What a picture is, for the caption's `{kind}`: the curator's word, else the suggestion from its look (none where
# it is unsure: then `{kind}` is the class word).
KINDS = ("engraving", "woodcut", "halftone", "photograph", "drawing", "cartoon", "map", "diagram")
KIND_FILE = Path(__file__).with_name("kind.npz")
RECIPE_FILE = Path(__file__).with_name("kind.json")
LOOKS = ("ink", "mid_tones", "edges", "stroke", "hatching", "straight", "contours", "contrast")
FLAT_SPREAD = 24  # grey levels between ink and paper under which a crop is blank or flat: nothing to read
INPUTS = ("look", "look+embedding")  # what a model reads: the look measures, or the embedding too


def look_measures(pixels: np.ndarray) -> np.ndarray | None:
    """The LOOKS of a network input (a gray square, the picture on white), None for a blank or flat one."""
    gray = pixels.astype(np.float32)
    ink_level, paper = np.percentile(gray, (2, 95))
    spread = float(paper - ink_level)
    if spread < FLAT_SPREAD:
        return None
    levels = ((gray - ink_level) / spread).astype(np.float32)
    ink = levels < 0.5
    soft = cv2.GaussianBlur(levels, (0, 0), 1.0)  # a fine screen's dots merge into their tone, lines stay lines
    strokes = cv2.distanceTransform(ink.astype(np.uint8), cv2.DIST_L2, 3)
    density = cv2.blur(ink.astype(np.float32), (9, 9))  # hatching: ink and paper side by side in fine lines
    outlines = cv2.Canny(pixels, 50, 150)
    return np.array([
        ink.mean(),
        ((levels > 0.2) & (levels < 0.8)).mean(),
        np.abs(cv2.Laplacian(soft, cv2.CV_32F)).mean(),
        strokes[ink].mean() if ink.any() else 0.0,
        ((density > 0.25) & (density < 0.75)).mean(),
        _straight_share(outlines),
        outlines.mean() / 255,
        spread / 255,
    ], np.float64)


def _straight_share(outlines: np.ndarray) -> float:
    """How much of the outline lies on straight segments (a diagram, a map's frame): their summed length over
    the outline's pixels."""
    found = cv2.HoughLinesP(outlines, 1, np.pi / 180, 40, minLineLength=30, maxLineGap=3)
    if found is None:
        return 0.0
    ends = found.reshape(-1, 4).astype(np.float64)
    return float(np.hypot(ends[:, 2] - ends[:, 0], ends[:, 3] - ends[:, 1]).sum() / max(np.count_nonzero(outlines), 1))


@dataclass(frozen=True)
class KindModel:
    """A multinomial logistic regression over standardised inputs, kept as arrays."""

    classes: tuple[str, ...]
    mean: np.ndarray
    scale: np.ndarray
    coef: np.ndarray  # a row per class
    intercept: np.ndarray
    cutoff: float  # the best kind's probability under which nothing is suggested
    inputs: str = "look"  # one of INPUTS

    def rows(self, pixels: list[np.ndarray], vectors: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """The model's input rows, and which pictures have them (a blank crop, or no embedding where the model
        reads it, has none)."""
        looks = [look_measures(p) for p in pixels]
        readable = np.array([look is not None for look in looks], bool)
        width = len(LOOKS)
        rows = np.array([look if look is not None else np.zeros(width) for look in looks]).reshape(-1, width)
        if self.inputs == "look+embedding":
            if vectors is None:
                return np.zeros((len(pixels), len(self.mean))), np.zeros(len(pixels), bool)
            rows = np.hstack([rows, np.asarray(vectors, np.float64).reshape(len(pixels), -1)])
        return rows, readable

    def probabilities(self, rows: np.ndarray) -> np.ndarray:
        """Each row's probability of each of `classes`."""
        logits = ((np.asarray(rows, np.float64) - self.mean) / self.scale) @ self.coef.T + self.intercept
        logits -= logits.max(axis=1, keepdims=True)
        odds = np.exp(logits)
        return odds / odds.sum(axis=1, keepdims=True)

    def suggest(self, pixels: list[np.ndarray], vectors: np.ndarray | None = None) -> list[str | None]:
        """Each picture's kind, None where the model is unsure (or the crop is blank)."""
        if not pixels:
            return []
        rows, readable = self.rows(pixels, vectors)
        chances = self.probabilities(rows)
        best = chances.argmax(axis=1)
        return [self.classes[b] if ok and chances[i, b] >= self.cutoff else None
                for i, (b, ok) in enumerate(zip(best, readable))]

    def save(self, path: Path = KIND_FILE) -> None:
        np.savez_compressed(path, classes=np.array(self.classes), mean=self.mean.astype(np.float32),
                            scale=self.scale.astype(np.float32), coef=self.coef.astype(np.float32),
                            intercept=self.intercept.astype(np.float32), cutoff=np.float64(self.cutoff),
                            inputs=np.array(self.inputs))

    @classmethod
    def load(cls, path: Path = KIND_FILE) -> KindModel:
        with np.load(path) as data:
            return cls(tuple(str(c) for c in data["classes"]), data["mean"].astype(np.float64),
                       data["scale"].astype(np.float64), data["coef"].astype(np.float64),
                       data["intercept"].astype(np.float64), float(data["cutoff"]), str(data["inputs"]))


@functools.cache
def shipped_model() -> KindModel:
    return KindModel.load()


def suggest_kinds(pixels: list[np.ndarray], vectors: np.ndarray | None = None) -> list[str | None]:
    """The shipped model's suggestion for each picture's network input (and its embedding, where it has one),
    None where it is unsure."""
    return shipped_model().suggest(pixels, vectors)
