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
# The rule's decisions weigh PRIOR_WEIGHT overrides in all, however many pages carry them: this many pages,
# evenly spaced, carry that weight as well as four million do, without four million rows in the fit.
PRIOR_ROWS = 200_000
PART_ROWS = 100_000  # pages read, and suggested for, at a time: a manifest's pages are never all Python objects


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
    model = _fitted(labelled, labels, pages, prior)
    probability = np.concatenate([model.predict_proba(_clean(pages[at:at + PART_ROWS]))[:, 1]
                                  for at in range(0, len(pages), PART_ROWS)] or [np.zeros(0)])
    keep = probability >= 0.5
    return Suggestions(keep=keep, confidence=np.where(keep, probability, 1 - probability), labels=len(labels))


def _fitted(labelled: np.ndarray, labels: np.ndarray, pages: np.ndarray, prior: np.ndarray | None):
    rows, targets, weights = _clean(labelled), labels, np.ones(len(labels))
    if prior is not None and len(pages):
        carried = np.unique(np.linspace(0, len(pages) - 1, min(len(pages), PRIOR_ROWS)).round().astype(np.int64))
        rows = np.vstack([rows, _clean(pages[carried])])
        targets = np.concatenate([labels, np.asarray(prior, bool)[carried]])
        weights = np.concatenate([weights, np.full(len(carried), PRIOR_WEIGHT / len(carried))])
    # scikit-learn (with SciPy and pandas) costs a second and 100 MB to import: only Learn pays for it, not
    # every process that imports the manifest's views (ingest workers, the CLI).
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import FunctionTransformer, StandardScaler

    model = make_pipeline(FunctionTransformer(_spread), StandardScaler(),
                          LogisticRegression(class_weight="balanced", C=10.0, max_iter=1000))
    return model.fit(rows, targets, logisticregression__sample_weight=weights)


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
    cursor.row_factory = None  # plain tuples, straight into NumPy
    params = manifest.decision_params()
    params["rule"] = "picture" if params["rule"] == "model" else params["rule"]  # the rule the model stands beside
    cursor.execute(
        f"SELECT p.doc_id, p.page, o.keep, COALESCE({BASE_RULE_SQL}, 0), {columns} FROM pages p "
        "JOIN documents d ON d.id = p.doc_id LEFT JOIN overrides o ON o.doc_id = p.doc_id AND o.page = p.page "
        "WHERE d.status != 'replaced' AND p.status = 'ok' ORDER BY p.doc_id, p.page", params)
    # A part at a time, each column in its own type: four million pages as Python tuples would take gigabytes.
    keys, override, rule, features = [], [], [], []
    for rows in iter(lambda: cursor.fetchmany(PART_ROWS), []):
        part = np.array(rows, dtype=np.float64).reshape(-1, 4 + len(FEATURES))  # NULL becomes nan
        keys.append(part[:, :2].astype(np.int64))
        override.append(part[:, 2])
        rule.append(part[:, 3] > 0)
        features.append(part[:, 4:].astype(np.float32))
    keys = np.concatenate(keys or [np.zeros((0, 2), np.int64)])
    override = np.concatenate(override or [np.zeros(0)])
    rule = np.concatenate(rule or [np.zeros(0, bool)])
    features = np.concatenate(features or [np.zeros((0, len(FEATURES)), np.float32)])
    labelled = ~np.isnan(override)
    labels = override[labelled] > 0
    progress(30, f"fitting the model on {len(labels):,} overrides")
    result = suggest(features[labelled], labels, features, prior=rule)
    progress(60, f"storing the suggestions for {len(keys):,} pages")
    manifest.replace_suggestions([] if result is None else _suggested(keys, result))
    manifest.set_setting("suggestions_from_overrides", len(labels) if result is not None else 0)
    return result


def _suggested(keys: np.ndarray, result: Suggestions):
    for at in range(0, len(keys), PART_ROWS):
        part = slice(at, at + PART_ROWS)
        yield from zip(keys[part, 0].tolist(), keys[part, 1].tolist(), result.keep[part].tolist(),
                       result.confidence[part].tolist())
