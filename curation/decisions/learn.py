"""Learn from the curator: every override is a label, and a small model on the page features
suggests a decision for every page, with its confidence.

The model never decides by itself: its suggestions are stored beside the pages, the Review page
shows them (and where they disagree with the rule), and the curator chooses whether they become
the decisions.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..manifest.rules import BASE_RULE_SQL

FEATURES = ["sigma", "sigma_content", "ink_tone", "ink_coverage", "picture_share", "picture_area", "picture_count",
            "text_height"]
LOG_FEATURES = ("picture_share", "picture_area", "picture_count")
MIN_LABELS = 10
MIN_PER_CLASS = 2
PRIOR_WEIGHT = 10.0  # the rule's decisions on all pages count as this many overrides


@dataclass(frozen=True)
class Suggestions:
    keep: np.ndarray  # bool per page
    confidence: np.ndarray  # probability of the suggested decision, 0.5..1
    labels: int


def ready(labels: np.ndarray) -> bool:
    """Enough overrides to learn from: MIN_LABELS in all, both decisions among them."""
    positives = int(labels.sum())
    return len(labels) >= MIN_LABELS and MIN_PER_CLASS <= positives <= len(labels) - MIN_PER_CLASS


def suggest(labelled: np.ndarray, labels: np.ndarray, pages: np.ndarray,
            prior: np.ndarray | None = None) -> Suggestions | None:
    """Fit on the labelled feature rows, suggest for every row of `pages`; None until `ready`.

    `prior` is the rule's own decision for every row of `pages`. Together those decisions weigh as
    much as PRIOR_WEIGHT overrides: with a handful of overrides the model keeps to the rule and bends
    only where the curator overruled it, instead of drawing a line through a few points at random."""
    labels = np.asarray(labels, bool)
    if not ready(labels):
        return None
    rows, targets, weights = _clean(labelled), labels, np.ones(len(labels))
    if prior is not None and len(pages):
        rows = np.vstack([rows, _clean(pages)])
        targets = np.concatenate([labels, np.asarray(prior, bool)])
        weights = np.concatenate([weights, np.full(len(pages), PRIOR_WEIGHT / len(pages))])
    # scikit-learn (with SciPy and pandas) costs a second and 100 MB to import: only Learn pays for it, not
    # every process that imports the manifest's views (ingest workers, the CLI).
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import FunctionTransformer, StandardScaler

    model = make_pipeline(FunctionTransformer(_spread), StandardScaler(),
                          LogisticRegression(class_weight="balanced", C=10.0, max_iter=1000))
    model.fit(rows, targets, logisticregression__sample_weight=weights)
    probability = model.predict_proba(_clean(pages))[:, 1]
    keep = probability >= 0.5
    return Suggestions(keep=keep, confidence=np.where(keep, probability, 1 - probability), labels=len(labels))


def _spread(rows: np.ndarray) -> np.ndarray:
    # Picture sizes span decades (0.1 sq in for a stock cut, 50 for a cartoon): on a log scale a line
    # fitted to a handful of labels falls between them instead of at the mean.
    rows = rows.copy()
    for name in LOG_FEATURES:
        column = FEATURES.index(name)
        rows[:, column] = np.log10(rows[:, column] + 1e-2)
    return rows


def _clean(rows: np.ndarray) -> np.ndarray:
    # Failed pages have no features; treat them as blank paper.
    return np.nan_to_num(np.asarray(rows, dtype=np.float64), nan=0.0)


def refresh_suggestions(manifest, progress=None) -> Suggestions | None:
    """Fit on the manifest's overrides and store a suggestion for every scored page.

    Returns None, and clears old suggestions, while there are too few overrides to learn from.
    `progress(percent, what)`, when given, hears each step begin (reading, fitting, storing).
    """
    progress = progress or (lambda percent, what: None)
    progress(0, "reading the pages' features")
    columns = ", ".join(f"p.{name}" for name in FEATURES)
    cursor = manifest.conn.cursor()
    cursor.row_factory = None  # plain tuples, straight into NumPy (NULL becomes nan)
    params = manifest.decision_params()
    params["rule"] = "picture" if params["rule"] == "model" else params["rule"]  # the rule the model stands beside
    rows = cursor.execute(
        f"SELECT p.doc_id, p.page, o.keep, COALESCE({BASE_RULE_SQL}, 0), {columns} FROM pages p "
        "JOIN documents d ON d.id = p.doc_id LEFT JOIN overrides o ON o.doc_id = p.doc_id AND o.page = p.page "
        "WHERE d.status != 'replaced' AND p.status = 'ok' ORDER BY p.doc_id, p.page", params
    ).fetchall()
    data = np.array(rows, dtype=np.float64).reshape(-1, 4 + len(FEATURES))
    labelled = ~np.isnan(data[:, 2])
    labels = data[labelled, 2] > 0
    progress(30, f"fitting the model on {len(labels):,} overrides")
    result = suggest(data[labelled, 4:], labels, data[:, 4:], prior=data[:, 3] > 0)
    progress(60, f"storing the suggestions for {len(data):,} pages")
    keys = data[:, :2].astype(np.int64).tolist()
    manifest.replace_suggestions(
        [] if result is None else
        ((doc_id, page, keep, confidence)
         for (doc_id, page), keep, confidence in zip(keys, result.keep.tolist(), result.confidence.tolist()))
    )
    manifest.set_setting("suggestions_from_overrides", len(labels) if result is not None else 0)
    return result
