"""Threshold page: figures follow the cutoff live, Save stores it, Suggest explains itself."""

import pytest

from apptest_support import filled_db, page, ran, texts
from curation import Manifest


@pytest.fixture
def db(tmp_path, monkeypatch):
    path = tmp_path / "data" / "manifest.sqlite"
    monkeypatch.setenv("CURATION_DB", str(path))
    return path


def metrics(at):
    return {m.label: m.value for m in at.metric}


def test_figures_follow_the_slider_and_save_stores_it(db):
    filled_db(db, documents=4, pages=50)
    with Manifest(db) as manifest:
        at_45, at_30 = manifest.summary(45), manifest.summary(30)
    at = ran(page("pages/threshold.py"))
    assert metrics(at)["Kept"] == f"{at_45['kept']:,}"
    assert at.number_input[0].value == 45.0
    at.slider(key="threshold_slider").set_value(30.0)
    ran(at)
    assert metrics(at)["Kept"] == f"{at_30['kept']:,}"
    assert at.number_input[0].value == 30.0  # the number box follows the slider
    assert "Not saved" in texts(at)
    with Manifest(db) as manifest:
        assert manifest.threshold == 45
    next(b for b in at.button if b.label == "Save threshold").click()
    ran(at)
    with Manifest(db) as manifest:
        assert manifest.threshold == 30
    assert "Saved: σ > 30" in texts(at)


def test_the_number_box_moves_the_slider(db):
    filled_db(db, documents=1, pages=40)
    at = ran(page("pages/threshold.py"))
    at.number_input[0].set_value(52.5)
    ran(at)
    assert at.slider(key="threshold_slider").value == 52.5
    next(b for b in at.button if b.label == "Back to saved").click()
    ran(at)
    assert at.slider(key="threshold_slider").value == 45.0


def test_suggest_proposes_a_cutoff_and_says_how(db):
    filled_db(db, documents=4, pages=100)
    at = ran(page("pages/threshold.py"))
    next(b for b in at.button if b.label == "Suggest").click()
    ran(at)
    assert "Otsu" in at.info[0].value
    suggested = at.slider(key="threshold_slider").value
    assert 30 < suggested < 55 and f"σ > {suggested:g}" in at.info[0].value


def test_histogram_options_and_borderline_strips(db):
    filled_db(db, documents=2, pages=30)
    at = ran(page("pages/threshold.py"))
    assert len(at.get("vega_lite_chart")) == 1
    assert len(at.get("image")) == 16  # eight pages each side of the cutoff
    at.slider(key="threshold_bins").set_value(20)
    at.toggle(key="threshold_log").set_value(True)
    ran(at)
    assert "Just below" in texts(at)


def test_without_scored_pages_the_page_says_so(db):
    Manifest(db).close()
    at = ran(page("pages/threshold.py"))
    assert "No page is scored yet" in at.info[0].value


def test_without_a_manifest_the_page_says_how_to_get_one(db):
    at = ran(page("pages/threshold.py"))
    assert "no manifest" in at.info[0].value
