"""The picture model's prior: the logistic regression on a picture's embedding alone that the verdict's recipe
trains beside the verdict (curation.pictures.train, `prior.npz`), against its own cutoff; where the verdict
scored a picture, its score against the verdict's cutoff. The model learned from a manifest's decisions starts
from it (curation.decisions.picture_model)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .verdict import shipped_head

PRIOR_FILE = Path(__file__).with_name("prior.npz")


def logit(p):
    p = np.clip(np.asarray(p, np.float64), 1e-6, 1 - 1e-6)
    return np.log(p / (1 - p))


@dataclass(frozen=True)
class Prior:
    """The shipped logistic regression on the embedding alone, against its cutoff:
    logit = embedding @ weights + bias; where the verdict scored a picture, its score against its cutoff."""

    mean: np.ndarray
    scale: np.ndarray
    weights: np.ndarray  # on the raw embedding (the regression's on the standardised one, divided by the scale)
    bias: float  # less the logit of the cutoff: at the cutoff, 0
    cutoff: float  # the embedding-only regression's
    verdict_cutoff: float  # the verdict's, which its scores are measured against

    @classmethod
    def of_regression(cls, mean, scale, coef, intercept: float, cutoff: float, verdict_cutoff: float) -> Prior:
        """From a regression on standardised embeddings ((vector - mean) / scale)."""
        return cls(mean, scale, coef / scale, float(intercept - (mean / scale) @ coef - logit(cutoff)), cutoff,
                   verdict_cutoff)

    def save(self, path: Path = PRIOR_FILE) -> None:
        np.savez_compressed(path, **{name: np.asarray(getattr(self, name), np.float32 if name in
                                                      ("mean", "scale", "weights") else np.float64)
                                     for name in ("mean", "scale", "weights", "bias", "cutoff", "verdict_cutoff")})

    @classmethod
    def load(cls, path: Path = PRIOR_FILE) -> Prior:
        with np.load(path) as data:
            return cls(*(data[name].astype(np.float64) for name in ("mean", "scale", "weights")),
                       float(data["bias"]), float(data["cutoff"]), float(data["verdict_cutoff"]))

    def logits(self, vectors: np.ndarray, scores: np.ndarray | None = None) -> np.ndarray:
        """The prior's logit of each embedding; the head's own score where one is given (not NaN)."""
        out = np.asarray(vectors, np.float64) @ self.weights + self.bias
        if scores is not None:
            scores = np.asarray(scores, np.float64)
            found = ~np.isnan(scores)
            out[found] = logit(scores[found]) - logit(self.verdict_cutoff)
        return out


_shipped: Prior | None = None


def shipped_prior() -> Prior:
    """The prior trained with the shipped verdict (`prior.npz` beside this module), measured against the
    verdict's own cutoff where it scored a picture."""
    global _shipped
    if _shipped is None:
        _shipped = Prior.load()
        if abs(_shipped.verdict_cutoff - shipped_head().cutoff) > 1e-9:
            raise ValueError(f"{PRIOR_FILE} was trained with another verdict; train both again "
                             "(python -m curation.pictures.train)")
    return _shipped
