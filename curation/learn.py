"""Learn from the curator: every override is a label, and a small model on the page features
suggests a decision for every page, with its confidence.

The model never decides by itself: its suggestions are stored beside the pages, the Review page
shows them (and where they disagree with the rule), and the curator chooses whether they become
the decisions.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

FEATURES = ["sigma", "sigma_content", "ink_tone", "ink_coverage", "picture_share"]
MIN_LABELS = 10
MIN_PER_CLASS = 2


@dataclass(frozen=True)
class Suggestions:
    keep: np.ndarray  # bool per page
    confidence: np.ndarray  # probability of the suggested decision, 0.5..1
    labels: int


def ready(labels: np.ndarray) -> bool:
    """Enough overrides to learn from: MIN_LABELS in all, both decisions among them."""
    positives = int(labels.sum())
    return len(labels) >= MIN_LABELS and MIN_PER_CLASS <= positives <= len(labels) - MIN_PER_CLASS


def suggest(labelled: np.ndarray, labels: np.ndarray, pages: np.ndarray) -> Suggestions | None:
    """Fit on the labelled feature rows, suggest for every row of `pages`; None until `ready`."""
    labels = np.asarray(labels, bool)
    if not ready(labels):
        return None
    model = make_pipeline(StandardScaler(), LogisticRegression(class_weight="balanced", C=1.0, max_iter=1000))
    model.fit(_clean(labelled), labels)
    probability = model.predict_proba(_clean(pages))[:, 1]
    keep = probability >= 0.5
    return Suggestions(keep=keep, confidence=np.where(keep, probability, 1 - probability), labels=len(labels))


def _clean(rows: np.ndarray) -> np.ndarray:
    # Failed pages have no features; treat them as blank paper.
    return np.nan_to_num(np.asarray(rows, dtype=np.float64), nan=0.0)
