"""A model of one manifest's pictures, learned from its curator's picture decisions (include, exclude,
delete, add) on the pictures' embeddings, starting from the shipped verdict.

The shipped opinion of a picture is the prior: the verdict's score where the learned verdict found the
picture (`pictures.score`, against the verdict's cutoff), else a logistic regression on the embedding alone
trained by the verdict's recipe (`prior.npz`, against its own cutoff). The model learns a correction on the
standardised embedding, held near zero (an L2 pull of PRIOR_STRENGTH): a handful of decisions bend the
shipped verdict where the curator overruled it, as the page learner bends the rule (curation.decisions.
learn), instead of drawing a line through a few points at random. Include and add mean "a picture I want",
exclude and delete "not one"; the two are weighed equally however many of each there are.

The model is a few thousand numbers kept in the manifest's settings; suggestions are computed when shown,
for a screen's pictures by their ids, for "least sure first" over every embedding at once (a product).
"""

from __future__ import annotations

import base64
import hashlib
import json
from dataclasses import dataclass

import numpy as np

from ..manifest import picture_embeddings
from ..manifest.history import now
from ..manifest.rules import LIVE_DOCUMENT_SQL
from ..pictures.prior import Prior, logit, shipped_prior
from .picture_similarity import Embeddings

SETTING = "picture_model"  # the learned model, in the manifest's settings (bookkeeping, not in the history)
# How hard the correction is pulled to none, in decisions' worth: chosen leave one source out
# (bench/bench_picture_learning.py).
PRIOR_STRENGTH = 1.0
MIN_DECISIONS = 4
FOLDS = 10  # agreement is measured leaving out each decision (up to 2 * FOLDS of them), else a tenth at a time


@dataclass(frozen=True)
class PictureModel:
    """The correction learned on top of the prior, and what it learned from."""

    correction: np.ndarray  # on the standardised embedding
    bias: float
    decisions: int
    agreement: dict  # {"shipped": [agreed, of], "learned": [agreed, of]} on the curator's decisions
    learned_at: str = ""

    @property
    def version(self) -> str:
        return hashlib.sha1(self.correction.tobytes() + str(self.bias).encode()).hexdigest()[:12]

    def logits(self, prior: Prior, vectors: np.ndarray, scores: np.ndarray | None = None) -> np.ndarray:
        vectors = np.asarray(vectors, np.float64)
        return prior.logits(vectors, scores) + ((vectors - prior.mean) / prior.scale) @ self.correction + self.bias

    def to_json(self) -> str:
        return json.dumps({"correction": base64.b64encode(self.correction.astype("<f4").tobytes()).decode(),
                           "bias": self.bias, "decisions": self.decisions, "agreement": self.agreement,
                           "learned_at": self.learned_at})

    @classmethod
    def from_json(cls, text: str) -> PictureModel:
        data = json.loads(text)
        return cls(np.frombuffer(base64.b64decode(data["correction"]), "<f4").astype(np.float64), float(data["bias"]),
                   int(data["decisions"]), data["agreement"], data.get("learned_at", ""))


def fit(vectors: np.ndarray, labels: np.ndarray, offsets: np.ndarray, prior: Prior,
        strength: float = PRIOR_STRENGTH) -> tuple[np.ndarray, float]:
    """The correction (on the standardised embedding) and bias that, added to the prior's `offsets`, best
    explain `labels` (True: a picture the curator wants), pulled towards none by `strength`."""
    from scipy.optimize import minimize

    z = (np.asarray(vectors, np.float64) - prior.mean) / prior.scale
    signs = np.where(labels, 1.0, -1.0)
    positives = int(np.sum(labels))
    weights = np.ones(len(labels))
    if 0 < positives < len(labels):  # each decision's side weighs half, however many of each
        weights = np.where(labels, len(labels) / (2 * positives), len(labels) / (2 * (len(labels) - positives)))

    def loss(params):
        correction, bias = params[:-1], params[-1]
        margin = signs * (offsets + z @ correction + bias)
        value = np.sum(weights * np.logaddexp(0, -margin)) + strength / 2 * (correction @ correction + bias * bias)
        pull = -weights * signs / (1 + np.exp(np.clip(margin, -50, 50)))
        return value, np.append(z.T @ pull + strength * correction, pull.sum() + strength * bias)

    found = minimize(loss, np.zeros(z.shape[1] + 1), jac=True, method="L-BFGS-B", options={"maxiter": 500})
    return found.x[:-1], float(found.x[-1])


def held_out_agreement(vectors: np.ndarray, labels: np.ndarray, offsets: np.ndarray, prior: Prior,
                       strength: float = PRIOR_STRENGTH) -> int:
    """How many decisions a model that did not learn from them agrees with (each left out in turn, or a
    tenth at a time past 2 * FOLDS decisions)."""
    folds = np.arange(len(labels)) % (len(labels) if len(labels) <= 2 * FOLDS else FOLDS)
    agreed = 0
    for fold in np.unique(folds):
        out = folds == fold
        correction, bias = fit(vectors[~out], labels[~out], offsets[~out], prior, strength)
        z = (vectors[out] - prior.mean) / prior.scale
        agreed += int(np.sum((offsets[out] + z @ correction + bias >= 0) == labels[out]))
    return agreed


# -- the manifest's ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Decisions:
    ids: np.ndarray
    labels: np.ndarray  # True: include or add; False: exclude or delete
    vectors: np.ndarray
    scores: np.ndarray  # the head's score, NaN where it did not find the picture
    without_embedding: int  # decided pictures not embedded yet (added lately, a box redrawn): left out


def decisions(manifest) -> Decisions:
    """The curator's picture decisions with the embeddings they are learned from (through the index of the
    pictures a person touched)."""
    rows = manifest.conn.execute(
        f"SELECT x.id, x.keep, x.added, x.deleted, x.score FROM pictures x "
        f"WHERE (x.keep IS NOT NULL OR x.added OR x.deleted) AND x.doc_id IN "
        f"(SELECT d.id FROM documents d WHERE {LIVE_DOCUMENT_SQL}) ORDER BY x.id").fetchall()
    label = {row["id"]: not row["deleted"] and (row["keep"] == 1 or (row["keep"] is None and bool(row["added"])))
             for row in rows}
    score = {row["id"]: np.nan if row["score"] is None else row["score"] for row in rows}
    ids, vectors = picture_embeddings.read(manifest.conn, list(label))
    return Decisions(ids, np.array([label[int(i)] for i in ids], bool), vectors.astype(np.float64),
                     np.array([score[int(i)] for i in ids], np.float64), len(rows) - len(ids))


def stored(manifest) -> PictureModel | None:
    text = manifest.get_setting(SETTING)
    try:
        return PictureModel.from_json(text) if text else None
    except (ValueError, KeyError, TypeError):  # a model from another version: learned again when asked
        return None


@dataclass(frozen=True)
class LearnOutcome:
    learned: bool
    message: str
    model: PictureModel | None = None


def learn(manifest, embeddings: Embeddings | None = None, strength: float = PRIOR_STRENGTH) -> LearnOutcome:
    """Learn from the manifest's picture decisions and keep the model; says how its agreement with the
    curator changed (the shipped verdict's, the model's on decisions it did not learn from, last time's), and,
    given the manifest's `embeddings`, how many suggestions changed."""
    found = decisions(manifest)
    skipped = (f" ({found.without_embedding:,} decided picture(s) are not embedded yet and wait for the picture "
               "job: `python -m curation embed`)") if found.without_embedding else ""
    if len(found.labels) < MIN_DECISIONS:
        return LearnOutcome(False, f"The picture model learns from your picture decisions (include, exclude, delete, "
                                   f"add) on embedded pictures: it needs at least {MIN_DECISIONS}, and there are "
                                   f"{len(found.labels)}{skipped}.")
    prior = shipped_prior()
    offsets = prior.logits(found.vectors, found.scores)
    before = stored(manifest)
    correction, bias = fit(found.vectors, found.labels, offsets, prior, strength)
    n = len(found.labels)
    agreement = {"shipped": [int(np.sum((offsets >= 0) == found.labels)), n],
                 "learned": [held_out_agreement(found.vectors, found.labels, offsets, prior, strength), n]}
    model = PictureModel(correction, bias, n, agreement, now())
    with manifest.transaction():
        manifest.set_setting(SETTING, model.to_json())
    included = int(found.labels.sum())
    message = (f"Learned from {n:,} picture decisions ({included:,} include or add, {n - included:,} exclude or "
               f"delete){skipped}. Agreement with your decisions: the shipped verdict {_share(agreement['shipped'])}; "
               f"the learned model {_share(agreement['learned'])}, each decision predicted by a model that did not "
               "learn from it")
    if before is not None:
        message += f" (last time {_share(before.agreement['learned'])})"
    message += "."
    if embeddings is not None and len(embeddings):
        scores = picture_scores(manifest, embeddings.ids)
        old = (before.logits(prior, _rows(embeddings), scores) if before is not None
               else prior.logits(_rows(embeddings), scores)) >= 0
        new = model.logits(prior, _rows(embeddings), scores) >= 0
        undecided = ~np.isin(embeddings.ids, found.ids)
        message += (f" It suggests keeping {int(new.sum()):,} of {len(new):,} embedded pictures; on the pictures "
                    f"you have not decided, {int((old != new)[undecided].sum()):,} suggestion(s) changed.")
    return LearnOutcome(True, message, model)


def _share(pair) -> str:
    agreed, of = pair
    return f"{agreed:,} of {of:,} ({agreed / of:.0%})" if of else "none"


def _rows(embeddings: Embeddings) -> np.ndarray:
    return embeddings.vectors.astype(np.float64)


def picture_scores(manifest, ids: np.ndarray) -> np.ndarray:
    """The head's score of each picture of `ids` (ascending), NaN where it has none: a pass over the pictures
    that have one, kept with the embeddings by the caller."""
    scores = np.full(len(ids), np.nan)
    for picture_id, score in manifest.conn.execute("SELECT id, score FROM pictures WHERE score IS NOT NULL"):
        at = int(np.searchsorted(ids, picture_id))
        if at < len(ids) and ids[at] == picture_id:
            scores[at] = score
    return scores


def logits_of_all(manifest, model: PictureModel | None, embeddings: Embeddings) -> np.ndarray:
    """The model's logit of every embedded picture (the prior's when none is learned), a product at a time."""
    prior = shipped_prior()
    out = embeddings.products(prior.weights) + prior.bias
    if model is not None:
        direction = model.correction / prior.scale
        out += embeddings.products(direction) - float((prior.mean / prior.scale) @ model.correction) + model.bias
    scores = picture_scores(manifest, embeddings.ids)
    found = ~np.isnan(scores)
    if found.any():  # the head's own score where it found the picture, in place of the embedding-only prior
        plain = embeddings.products(prior.weights)[found] + prior.bias
        out[found] += logit(scores[found]) - logit(prior.verdict_cutoff) - plain
    return out


def least_sure_first(logits: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """Picture ids, the suggestions nearest an even chance first (ties by id)."""
    return ids[np.lexsort((ids, np.abs(logits)))]


@dataclass(frozen=True)
class Suggestion:
    keep: bool
    confidence: float  # the probability of the suggestion, 0.5..1


def suggestions(manifest, model: PictureModel | None, ids: list[int]) -> dict[int, Suggestion]:
    """The suggestion for each of a screen's pictures that has an embedding, read by id."""
    found, vectors = picture_embeddings.read(manifest.conn, ids)
    if not len(found):
        return {}
    scores = dict(manifest.conn.execute(
        f"SELECT id, score FROM pictures WHERE id IN ({', '.join(str(int(i)) for i in found)})").fetchall())
    prior = shipped_prior()
    given = np.array([np.nan if scores.get(int(i)) is None else scores[int(i)] for i in found])
    logits = model.logits(prior, vectors, given) if model is not None else prior.logits(vectors, given)
    probability = 1 / (1 + np.exp(-np.clip(logits, -50, 50)))
    return {int(i): Suggestion(bool(p >= 0.5), float(max(p, 1 - p))) for i, p in zip(found, probability)}
