"""The learned model as the dashboard shows it: how many overrides it learned from, whether it can learn,
learning, and making its suggestions the decisions (or going back to the rule).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..decisions import learn
from ..manifest import aggregates, tallies
from ..manifest.rules import DEFAULT_RULE, RULES
from ..manifest.store import Manifest
from . import cutoff_counts
from .filters import RULE_LABELS, base_rule, decision_params


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
    """Included and excluded overrides on scored pages of live documents: what the model learns from (from
    the decided pages the counts keep: no pass over the overrides)."""
    pages = tallies.decided(manifest)
    labelled = pages["ok"] & (pages["override"] >= 0)
    return int((labelled & (pages["override"] == 1)).sum()), int((labelled & (pages["override"] == 0)).sum())


def learned(manifest: Manifest) -> tuple[int, int]:
    """Pages of live documents with a stored suggestion, and how many overrides the model learned them from
    (from the kept counts: cheap)."""
    found = aggregates.bins(manifest)
    suggestions = int(found.pages[found.model >= 0].sum())
    learned_from = int(manifest.get_setting("suggestions_from_overrides", "0") or 0) if suggestions else 0
    return suggestions, learned_from


def model_state(manifest: Manifest, rule: str | None = None) -> ModelState:
    """The stored suggestions against the rule (`rule` or the saved one), and the labels there are now."""
    included, excluded = override_labels(manifest)
    suggestions, learned_from = learned(manifest)
    kept = disagrees = 0
    if suggestions:
        found = aggregates.bins(manifest)
        kept = int(found.pages[found.model == 1].sum())
        disagrees = tallies.tally(manifest, decision_params(manifest, rule=rule)).counts("disagrees")["pages"]
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


def learn_from_overrides(manifest: Manifest, progress=None) -> LearnOutcome:
    """Fit the model on the overrides and store its suggestions; says what it learned, or why not yet.

    Too few overrides clear the old suggestions (their labels are gone). `progress(percent, what)` hears each
    step; the last counts the pages by the new suggestions, so the dashboard finds them counted.
    """
    included, excluded = override_labels(manifest)
    result = learn.refresh_suggestions(manifest, progress)
    if result is None:
        return LearnOutcome(False, learn_blocker(included, excluded) or "The model could not learn from these overrides.",
                            included + excluded)
    if progress:
        progress(90, "counting the pages by the new suggestions")
    state = model_state(manifest)
    if progress:
        progress(95, "counting the pictures the model keeps at every cutoff")
    cutoff_counts.counted_after_job(manifest)
    compared = RULE_LABELS[base_rule(manifest.rule)].lower().replace("σ only", "σ-only rule")
    return LearnOutcome(
        True,
        f"Learned from {result.labels:,} overrides ({included:,} included, {excluded:,} excluded). The model keeps "
        f"{state.kept:,} of {state.suggestions:,} pages and disagrees with the {compared} on {state.disagrees:,} "
        "page(s) you have not decided: see them with the filter **Model disagrees**.",
        result.labels,
    )


LEARN_JOB = "learn"  # the job kind of `python -m curation learn`, which the dashboard launches


def learn_job(manifest: Manifest) -> LearnOutcome:
    """Learn from the overrides as a job of the manifest: its progress in percent and the step in hand
    (the job's message) while it runs, what it learned (or why not) as its message when it ends ("done"
    when it learned, "failed" when it could not). Raises JobRunning while another learn job runs."""
    job_id = manifest.start_job(LEARN_JOB)
    try:
        outcome = learn_from_overrides(
            manifest, lambda percent, what: manifest.update_job(job_id, done=percent, total=100, message=what))
    except BaseException as exc:
        manifest.finish_job(job_id, "failed", f"learning failed: {exc}")
        raise
    manifest.update_job(job_id, done=100, total=100)
    manifest.finish_job(job_id, "done" if outcome.learned else "failed", outcome.message)
    return outcome


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
