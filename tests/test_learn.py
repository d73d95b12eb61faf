"""Learning from overrides: a label per override, a suggestion and confidence per page."""

import numpy as np
import pytest
from click.testing import CliRunner

from curation import Manifest, ingest
from curation.cli import cli
from curation.decisions import learn
from curation.decisions.learn import FEATURES, ready, refresh_suggestions, suggest
from curation.scoring.result import PageResult

from conftest import small_specs
from curation.sources.synthetic import write_pdf


def synthetic_rows(n, rng):
    """Feature rows shaped like the corpus: illustrations have a large picture share."""
    illustration = rng.random(n) < 0.3
    rows = np.zeros((n, len(FEATURES)))
    rows[:, FEATURES.index("sigma")] = rng.normal(45, 12, n)
    rows[:, FEATURES.index("sigma_content")] = rng.normal(40, 10, n)
    rows[:, FEATURES.index("ink_tone")] = rng.uniform(0.3, 0.8, n)
    rows[:, FEATURES.index("ink_coverage")] = rng.uniform(0.1, 0.4, n)
    rows[:, FEATURES.index("picture_share")] = np.where(illustration, rng.uniform(0.07, 0.6, n), rng.uniform(0, 0.005, n))
    rows[:, FEATURES.index("picture_area")] = np.where(illustration, rng.uniform(3, 60, n), rng.uniform(0, 1.5, n))
    rows[:, FEATURES.index("picture_count")] = np.where(illustration, rng.integers(1, 4, n), rng.integers(0, 3, n))
    rows[:, FEATURES.index("text_height")] = rng.uniform(0.05, 0.1, n)
    return rows, illustration


def test_not_ready_until_ten_labels_with_both_decisions():
    assert not ready(np.array([True, False] * 4))
    assert not ready(np.array([True] * 12))
    assert ready(np.array([True, True] + [False] * 8))


def test_twenty_labels_agree_with_the_truth_on_the_rest():
    rng = np.random.default_rng(1)
    rows, truth = synthetic_rows(2000, rng)
    picked = np.concatenate([np.flatnonzero(truth)[:6], np.flatnonzero(~truth)[:14]])
    result = suggest(rows[picked], truth[picked], rows)
    assert (result.keep == truth).mean() >= 0.98
    assert ((result.confidence >= 0.5) & (result.confidence <= 1)).all()


def test_the_model_learns_from_the_page_analysis_not_only_from_sigma():
    assert {"picture_area", "picture_count", "text_height"} <= set(FEATURES)
    rng = np.random.default_rng(2)
    rows, truth = synthetic_rows(600, rng)
    rows[:, FEATURES.index("picture_share")] = 0  # only the picture area tells the pictures apart
    picked = np.concatenate([np.flatnonzero(truth)[:5], np.flatnonzero(~truth)[:10]])
    assert (suggest(rows[picked], truth[picked], rows).keep == truth).mean() >= 0.97


def test_the_rule_is_a_prior_that_overrides_bend():
    """With the rule's decisions beside them, a few overrides that agree with the rule leave it as it is,
    and overrides that disagree on a kind of page move the model there."""
    rng = np.random.default_rng(3)
    rows, truth = synthetic_rows(600, rng)
    area = rows[:, FEATURES.index("picture_area")]
    rule = area >= 2  # the rule as it stands
    agree = np.concatenate([np.flatnonzero(rule)[:4], np.flatnonzero(~rule)[:6]])
    assert (suggest(rows[agree], rule[agree], rows, prior=rule).keep == rule).mean() >= 0.98
    # A curator who wants only large pictures overrules the small ones the rule keeps.
    wants = area >= 20
    small = np.flatnonzero(rule & ~wants)[:12]
    picked = np.concatenate([small, np.flatnonzero(wants)[:6], np.flatnonzero(~rule)[:4]])
    learned = suggest(rows[picked], wants[picked], rows, prior=rule).keep
    assert (rule == wants).mean() < 0.93 and (learned == wants).mean() > 0.96


def test_refresh_stores_a_suggestion_per_page_and_clears_them_when_overrides_go(manifest, tmp_path):
    write_pdf(tmp_path / "a.pdf", small_specs(24, seed=5))
    ingest(manifest, [tmp_path / "a.pdf"], workers=1)
    rows = list(manifest.pages())
    truth = {(r["doc_id"], r["page"]): r["picture_share"] >= 0.03 for r in rows}
    assert 2 <= sum(truth.values()) <= len(rows) - 2
    labelled = sorted(rows, key=lambda r: truth[(r["doc_id"], r["page"])])[:5] + \
        sorted(rows, key=lambda r: truth[(r["doc_id"], r["page"])])[-7:]
    for r in labelled:
        manifest.set_override(r["doc_id"], r["page"], truth[(r["doc_id"], r["page"])])
    result = refresh_suggestions(manifest)
    assert result is not None and result.labels == 12
    stored = {(r["doc_id"], r["page"]): r["suggestion"] for r in manifest.pages()}
    assert None not in stored.values() and len(stored) == 24

    manifest.rule = "model"  # the curator's choice: suggestions become the decisions
    unlabelled = [r for r in manifest.pages() if r["override"] is None]
    assert all(r["keep"] == r["suggestion"] for r in unlabelled)

    for r in labelled[:8]:
        manifest.set_override(r["doc_id"], r["page"], None)
    assert refresh_suggestions(manifest) is None
    assert manifest.conn.execute("SELECT COUNT(*) FROM suggestions").fetchone()[0] == 0


def test_learn_command_explains_what_it_needs(tmp_path, archive):
    db = tmp_path / "m.sqlite"
    with Manifest(db) as m:
        ingest(m, [archive], workers=1)
    result = CliRunner().invoke(cli, ["learn", "--db", str(db)])
    assert result.exit_code == 1
    assert "10 are needed" in result.output


def test_the_rules_decisions_carried_by_a_sample_of_pages_suggest_what_all_of_them_do(monkeypatch):
    rng = np.random.default_rng(11)
    rows = rng.random((6000, len(FEATURES)))
    rule = rows[:, 0] + 0.2 * rows[:, 1] > 0.6
    picked = rng.choice(len(rows), 40, replace=False)
    wants = rule.copy()
    wants[rows[:, 2] > 0.9] = False  # the curator also drops one corner the rule keeps
    everything = suggest(rows[picked], wants[picked], rows, prior=rule)
    monkeypatch.setattr(learn, "PRIOR_ROWS", 600)
    monkeypatch.setattr(learn, "PART_ROWS", 700)  # suggested a part at a time, too
    sampled = suggest(rows[picked], wants[picked], rows, prior=rule)
    assert len(sampled.keep) == len(rows)
    assert (sampled.keep == everything.keep).mean() >= 0.99
    assert np.abs(sampled.confidence - everything.confidence).mean() < 0.01
