"""The learned model as the dashboard shows it: how many overrides it learned from, whether it can learn,
learning, and making its suggestions the decisions (or going back to the rule).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...decisions import learn
from ..rules import DEFAULT_RULE, LIVE_DOCUMENT_SQL, RULES
from ..store import Manifest
from .filters import RULE_LABELS, _BASE_SQL, base_rule, decision_params


@dataclass(frozen=True)
class ModelState:
    """What the Review page says about the model learned from overrides."""

    suggestions: int  # pages with a stored suggestion (0: nothing learned yet)
    learned_from: int  # overrides the stored suggestions were fitted on
    included: int  # overrides now on scored pages: the labels the next fit would use
    excluded: int
    kept: int  # pages the model keeps
    disagrees: int  # pages without an override where the model and the rule differ

    @property
    def labels(self) -> int:
        return self.included + self.excluded

    @property
    def ready(self) -> bool:
        return learn.ready(np.array([True] * self.included + [False] * self.excluded, bool))

    @property
    def stale(self) -> bool:
        """Overrides were added or removed since the model learned (a rough sign: the count moved)."""
        return self.suggestions > 0 and self.labels != self.learned_from


def override_labels(manifest: Manifest) -> tuple[int, int]:
    """Included and excluded overrides on scored pages of live documents: what the model learns from."""
    row = manifest.conn.execute(
        f"SELECT COALESCE(SUM(o.keep = 1), 0), COALESCE(SUM(o.keep = 0), 0) FROM overrides o "
        f"JOIN pages p ON p.doc_id = o.doc_id AND p.page = o.page JOIN documents d ON d.id = o.doc_id "
        f"WHERE {LIVE_DOCUMENT_SQL} AND p.status = 'ok'"
    ).fetchone()
    return int(row[0]), int(row[1])


def learned(manifest: Manifest) -> tuple[int, int]:
    """Pages with a stored suggestion, and how many overrides the model learned them from (cheap)."""
    suggestions = manifest.conn.execute("SELECT COUNT(*) FROM suggestions").fetchone()[0]
    learned_from = int(manifest.get_setting("suggestions_from_overrides", "0") or 0) if suggestions else 0
    return suggestions, learned_from


def model_state(manifest: Manifest, rule: str | None = None) -> ModelState:
    """The stored suggestions against the rule (`rule` or the saved one), and the labels there are now."""
    included, excluded = override_labels(manifest)
    suggestions, learned_from = learned(manifest)
    kept = disagrees = 0
    if suggestions:
        row = manifest.conn.execute(
            f"SELECT COALESCE(SUM(s.keep), 0), COALESCE(SUM(s.keep != COALESCE({_BASE_SQL}, 0) AND o.keep IS NULL), 0) "
            f"FROM suggestions s JOIN pages p ON p.doc_id = s.doc_id AND p.page = s.page "
            f"JOIN documents d ON d.id = p.doc_id LEFT JOIN overrides o ON o.doc_id = p.doc_id AND o.page = p.page "
            f"WHERE {LIVE_DOCUMENT_SQL}",
            decision_params(manifest, rule=rule),
        ).fetchone()
        kept, disagrees = int(row[0]), int(row[1])
    return ModelState(suggestions, learned_from, included, excluded, kept, disagrees)


def learn_blocker(included: int, excluded: int) -> str | None:
    """Why the model cannot learn from these overrides yet, for a person; None when it can."""
    labels = included + excluded
    if labels < learn.MIN_LABELS:
        return (f"The model learns from your overrides: it needs at least {learn.MIN_LABELS}, with both decisions "
                f"among them, and you have made {labels} ({included} included, {excluded} excluded). "
                f"Include or exclude {learn.MIN_LABELS - labels} more page(s).")
    few = "excluded" if excluded < learn.MIN_PER_CLASS else "included" if included < learn.MIN_PER_CLASS else None
    if few is not None:
        have = excluded if few == "excluded" else included
        return (f"Your {labels} overrides are nearly all one decision ({included} included, {excluded} excluded): "
                f"the model needs both, at least {learn.MIN_PER_CLASS} {few} pages, to tell them apart. "
                f"{few[:-1].capitalize()} {learn.MIN_PER_CLASS - have} more.")
    return None


@dataclass(frozen=True)
class LearnOutcome:
    learned: bool
    message: str
    labels: int


def learn_from_overrides(manifest: Manifest) -> LearnOutcome:
    """Fit the model on the overrides and store its suggestions; says what it learned, or why not yet.

    Too few overrides clear the old suggestions (their labels are gone), as `python -m curation learn` does.
    """
    included, excluded = override_labels(manifest)
    result = learn.refresh_suggestions(manifest)
    if result is None:
        return LearnOutcome(False, learn_blocker(included, excluded) or "The model could not learn from these overrides.",
                            included + excluded)
    state = model_state(manifest)
    compared = RULE_LABELS[base_rule(manifest.rule)].lower().replace("σ only", "σ-only rule")
    return LearnOutcome(
        True,
        f"Learned from {result.labels:,} overrides ({included:,} included, {excluded:,} excluded). The model keeps "
        f"{state.kept:,} of {state.suggestions:,} pages and disagrees with the {compared} on {state.disagrees:,} "
        "page(s) you have not decided: see them with the filter **Model disagrees**.",
        result.labels,
    )


def use_model(manifest: Manifest) -> None:
    """Make the model's suggestions the decisions (the rule 'model'), remembering the rule it replaces."""
    if manifest.rule != "model":
        manifest.set_setting("rule_before_model", manifest.rule)
        manifest.rule = "model"


def stop_using_model(manifest: Manifest) -> str:
    """Go back to the rule used before the model decided (the picture rule if none); returns it."""
    previous = manifest.get_setting("rule_before_model", DEFAULT_RULE)
    previous = previous if previous in RULES and previous != "model" else DEFAULT_RULE
    manifest.rule = previous
    return previous
