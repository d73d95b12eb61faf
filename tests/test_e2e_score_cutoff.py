"""Threshold's picture score cutoff in a real browser (Chromium at 1440 x 900): the learned verdict's scores as a
histogram with the cutoff drawn on it beside the area cutoff, the pictures a new score cutoff keeps and drops
before Save, and a caption instead of an empty chart where the pictures carry no score."""

import json
import os

import pytest

from curation import Manifest
from curation.runs.sample import fill_manifest
from curation.scoring.result import PageResult
from server_support import CHROMIUM, go, settle
from test_e2e_afternoon import browser_at, main_text, metric  # noqa: F401  (a fixture)

playwright = pytest.importorskip("playwright.sync_api")
pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM),
                                reason="needs Debian's chromium (apt-get install chromium)")
CHARTS = "[data-testid='stVegaLiteChart']"


def stored_as_learned(manifest, pages: int):
    """Every page as a learned ingest stores it: a sure 9 sq in plate (0.9) and a doubtful 3 sq in cut (0.1)."""
    for number in range(pages):
        entries = [[100, 100, 700, 700, 9.0, None, None, 0.9], [800, 900, 1100, 1200, 3.0, None, None, 0.1]]
        manifest.save_pages(1, [PageResult(page=number, status="ok", sigma=30.0, width=1224, height=1584,
                                           features={"ink_tone": 0.6, "picture_area": 9.0, "picture_count": 1,
                                                     "features_version": 1, "pictures": json.dumps(entries)})])


def test_threshold_draws_the_score_histogram_and_counts_what_a_score_cutoff_keeps_before_save(browser_at):  # noqa: F811
    url, db, folder, page = browser_at
    db.parent.mkdir(parents=True)
    with Manifest(db) as manifest:
        fill_manifest(manifest, 1, 4)
        manifest.conn.execute("UPDATE pages SET picture_area = 9.0, ink_tone = 0.6, features_version = 1")
        for number in range(4):  # the page analysis's pictures: no score
            manifest.set_pictures(1, number, [(100, 100, 700, 700, 9.0)])
    go(page, url, "threshold")
    assert "No picture carries a score" in main_text(page)
    charts = page.locator(CHARTS).count()

    with Manifest(db) as manifest:
        stored_as_learned(manifest, 4)
    go(page, url, "threshold")
    page.locator(CHARTS).nth(charts).wait_for(state="attached")  # one chart more: the scores' (σ's is folded away)
    assert page.locator(CHARTS).count() == charts + 1
    text = main_text(page)
    assert "Picture score" in text and "No picture carries a score" not in text
    assert "4 scored pictures counted, 4 under the cutoff" in text
    assert metric(page, "Pictures kept") == "4" and metric(page, "Pictures left out") == "4"
    cutoff = page.get_by_label("Score cutoff")
    cutoff.fill("0.05")
    cutoff.press("Enter")
    settle(page)
    assert "8 scored pictures counted, 0 under the cutoff" in main_text(page)
    assert metric(page, "Pictures kept") == "8" and metric(page, "Pictures left out") == "0"  # before Save
    with Manifest(db) as manifest:
        assert manifest.picture_score_min == 0.2  # nothing saved yet
    page.get_by_role("button", name="Save", exact=True).click()
    settle(page)
    with Manifest(db) as manifest:
        assert manifest.picture_score_min == 0.05
        assert sum(len(rows) for rows in manifest.kept_pictures().values()) == 8
