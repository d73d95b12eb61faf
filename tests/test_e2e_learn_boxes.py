"""Learn from my boxes in a real browser: a curator fixes three boxes on Review's Pictures view (a drag on the
page, as in tests/test_e2e_pictures.py), runs Learn from my boxes and sees its progress and outcome, an untouched
picture's box changes in the Pictures view, and Undo learning puts it back."""

import os

import pytest

from curation import Manifest
from server_support import CHROMIUM, go, no_exception, settle, streamlit_server
from test_e2e_pictures import chromium_page, drag  # noqa: F401 (a fixture)
from test_e2e_walkthrough import cli
from test_learn_boxes import legended_pdf

playwright = pytest.importorskip("playwright.sync_api")
pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM),
                                reason="needs Debian's chromium (apt-get install chromium)")

PAGES, FIXED = 5, 3
# Pages the shipped finder finds one picture on. The curator's drag starts under the legend, a corner the finder's
# box (which leaves the legend out) never reaches: a drag from a corner's handle would move that corner instead.
SEEDS = (302, 305, 306, 307, 309)


def card(page, number: int):
    """The card of the picture found first on page `number` (numbered 1 on its page)."""
    return page.locator("[class*='st-key-picture-card-']").filter(has_text=f"#1 · p. {number}/{PAGES}")


def box_of(db, number: int) -> tuple:
    with Manifest(db) as manifest:
        rows = list(manifest.picture_rows(where="x.page = :page AND NOT x.deleted", params={"page": number - 1}))
    return tuple((r["bx0"] / r["width"], r["by0"] / r["height"], r["bx1"] / r["width"], r["by1"] / r["height"])
                 for r in rows)


def test_a_curator_fixes_three_boxes_learns_from_them_and_undoes_it(tmp_path, chromium_page):
    truths = legended_pdf(tmp_path / "archive" / "issue.pdf", SEEDS)
    db = tmp_path / "data" / "manifest.sqlite"
    cli("ingest", tmp_path / "archive", "--db", db, "--workers", 1, "-q", "--pictures", "network")
    for number in range(1, PAGES + 1):
        assert len(box_of(db, number)) == 1, "one picture a page, as the finder sees them"
    untouched = box_of(db, PAGES)
    env = {"CURATION_DB": str(db), "CURATION_ROOTS": str(tmp_path / "archive")}
    with streamlit_server(tmp_path / "streamlit.log", env) as (_, port):
        url, page = f"http://127.0.0.1:{port}", chromium_page
        go(page, url, "review?view=Pictures")
        for number in range(1, FIXED + 1):  # the curator boxes each drawing with its legend
            card(page, number).get_by_role("button", name="Open").click()
            dialog = page.get_by_role("dialog")
            dialog.get_by_text("Centred on this picture").wait_for()
            while not dialog.locator(".st-key-picture-zoom-out button").first.is_disabled():
                dialog.locator(".st-key-picture-zoom-out button").first.click()
                settle(page)
            dialog.get_by_text("Fix this picture's box").click()
            dialog.get_by_text("Drag from one corner of the picture").wait_for()
            settle(page)
            x0, y0, x1, y1 = truths[number - 1]
            drag(page, dialog, (x1, y1), (x0, y0))
            page.get_by_text("Redrew the box of picture").first.wait_for()
            settle(page)
            page.keyboard.press("Escape")
            dialog.wait_for(state="hidden")
            settle(page)
            no_exception(page)
        with Manifest(db) as manifest:
            assert manifest.conn.execute("SELECT COUNT(*) FROM pictures WHERE fx0 IS NOT NULL").fetchone()[0] == FIXED
        before = card(page, PAGES).inner_text()
        page.get_by_role("button", name="Learn from my boxes").first.click()
        page.get_by_text("Learning from your boxes").first.wait_for()  # its live progress
        page.get_by_text("Learned from your boxes").first.wait_for(timeout=240_000)
        page.get_by_text("found the pictures of 2 pages nobody touched again").first.wait_for()
        settle(page)
        no_exception(page)
        learned = box_of(db, PAGES)
        truth = truths[PAGES - 1]
        assert abs(learned[0][3] - truth[3]) < abs(untouched[0][3] - truth[3]) - 0.01  # its legend is in the box now
        go(page, url, "review?view=Pictures")
        after = card(page, PAGES).inner_text()
        assert after != before, "the card shows the box found again (its size)"
        page.get_by_role("button", name="Undo learning").first.click()
        page.get_by_text("Undone:").first.wait_for()
        settle(page)
        no_exception(page)
        assert box_of(db, PAGES) == untouched
        assert card(page, PAGES).inner_text() == before
