"""Review's Pictures view in a real browser (Chromium at 1440 x 900, as a curator's laptop): a dense grid of
the crops, at least six cards a row beside the sidebar, each card's controls inside it, and the large view
where a drag on the page redraws a picture's box (or moves one of its corners); the keys of Review's grids work
on it."""

import os

import pytest

from curation import Manifest
from curation.manifest import picture_views as pv
from server_support import CHROMIUM, go, no_exception, settle, streamlit_server
from test_e2e_walkthrough import cli

playwright = pytest.importorskip("playwright.sync_api")
pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM),
                                reason="needs Debian's chromium (apt-get install chromium)")

CARDS = """() => [...document.querySelectorAll("[class*='st-key-picture-card-']")].map(card => {
    const box = card.getBoundingClientRect(), buttons = [...card.querySelectorAll("button")];
    return {top: Math.round(box.top), height: Math.round(box.height), width: box.width,
            fits: buttons.every(b => b.getBoundingClientRect().right <= box.right + 0.5),
            image: (card.querySelector("img") || {width: 0}).width};
})"""

FIRST_CROPS_SHOWN = """() => {
    const crops = [...document.querySelectorAll("[class*='st-key-picture-card-'] img")].slice(0, 6);
    return crops.length == 6 && crops.every(img => img.complete && img.naturalWidth > 0);
}"""


def test_the_pictures_grid_at_1440_px_holds_six_cards_a_row_and_a_drag_fixes_a_box(tmp_path, archive, chromium_page):
    db = tmp_path / "data" / "manifest.sqlite"
    cli("ingest", archive, "--db", db, "--workers", 1, "-q")
    with Manifest(db) as manifest:  # a picture on every page: the scorer's, or one drawn as a curator would
        for row in manifest.pages():
            if not manifest.pictures(row["doc_id"], row["page"]):
                manifest.add_picture(row["doc_id"], row["page"], (20, 40, row["width"] // 2, row["height"] // 3))
        found = manifest.conn.execute("SELECT COUNT(*) FROM pictures").fetchone()[0]
        first = manifest.conn.execute("SELECT MIN(id) FROM pictures").fetchone()[0]
        manifest.set_auto_captions([(first, "a lady in a promenade dress, full length, " * 4, "tiny")])
        manifest.conn.execute("UPDATE pictures SET legend = ? WHERE id = ?", ("A WET DAY. " * 6, first))
        manifest.conn.commit()  # one card with a long legend and model caption: the row keeps one height
    assert found >= 15
    env = {"CURATION_DB": str(db), "CURATION_ROOTS": str(archive)}
    with streamlit_server(tmp_path / "streamlit.log", env) as (_, port):
        url, page = f"http://127.0.0.1:{port}", chromium_page
        go(page, url, "review?view=Pictures")  # the view switch as the address keeps it
        page.wait_for_function(FIRST_CROPS_SHOWN)
        cards = page.evaluate(CARDS)
        assert len(cards) == min(found, 48)
        first_row = [card for card in cards if card["top"] == cards[0]["top"]]
        assert len(first_row) >= 6
        assert all(card["fits"] for card in cards)  # include / auto / exclude and Open inside the card
        assert len({card["height"] for card in first_row}) == 1  # a row of cards of one height
        assert all(card["image"] >= 0.8 * card["width"] for card in first_row)  # the crop is most of the card
        before = cards[0]["height"]
        page.locator("[class*='st-key-picture-decide-']").first.get_by_role("radio").last.click()  # Exclude
        page.get_by_text("Excluded picture").first.wait_for()  # the toast
        settle(page)
        after = page.evaluate(CARDS)[0]
        assert after["height"] == before and after["fits"]  # the card keeps its height and its controls
        page.keyboard.press("i")  # the keys act on the focused card, the first
        page.get_by_text("Included picture").first.wait_for()
        settle(page)
        with Manifest(db) as manifest:
            assert [row["keep"] for row in manifest.picture_rows(where="x.keep IS NOT NULL")] == [1]
        page.keyboard.press("Enter")  # opens it large
        dialog = page.get_by_role("dialog")
        dialog.get_by_text("Fix this picture's box").click()  # then a drag across the page redraws its box
        dialog.get_by_text("Drag from one corner of the picture").wait_for()
        settle(page)
        drag(page, dialog, (0.1, 0.1), (0.6, 0.5))
        page.get_by_text("Redrew the box of picture").first.wait_for()  # the toast
        settle(page)
        no_exception(page)
        with Manifest(db) as manifest:
            (fixed,) = manifest.picture_rows(where="x.fx0 IS NOT NULL")
        assert fixed["bx0"] == pytest.approx(0.1 * fixed["width"], abs=0.02 * fixed["width"])
        assert fixed["bx1"] == pytest.approx(0.6 * fixed["width"], abs=0.02 * fixed["width"])
        assert fixed["by1"] == pytest.approx(0.5 * fixed["height"], abs=0.02 * fixed["height"])
        # Zoomed in (1.5x, around the picture), a drag from the box's corner moves that corner where it ends.
        region = pv.zoom_region([fixed[k] for k in ("bx0", "by0", "bx1", "by1")], fixed["width"], fixed["height"], 1.5)
        dialog.locator(".st-key-picture-zoom-in button").first.click()
        dialog.get_by_text("1.5×", exact=True).wait_for()
        settle(page)
        dialog.get_by_text("Zoomed 1.5× around this picture", exact=False).wait_for()
        x0, y0, x1, y1 = region
        corner = ((fixed["bx0"] - x0) / (x1 - x0), (fixed["by0"] - y0) / (y1 - y0))  # top left, on screen
        assert 0.05 < min(corner) and max(corner) < 0.5
        drag(page, dialog, corner, (0.02, 0.03))
        page.get_by_text("Redrew the box of picture").nth(1).wait_for()
        settle(page)
        no_exception(page)
    with Manifest(db) as manifest:
        moved = manifest.picture(fixed["id"])
    expected = [x0 + 0.02 * (x1 - x0), y0 + 0.03 * (y1 - y0), fixed["bx1"], fixed["by1"]]  # bottom right stays
    for key, value in zip(("bx0", "by0", "bx1", "by1"), expected):
        assert moved[key] == pytest.approx(value, abs=0.01 * fixed["width"])


def drag(page, dialog, start, end):
    """Drag across the large view's page from `start` to `end` (fractions of the image shown)."""
    image = dialog.frame_locator("iframe").locator("img")
    image.wait_for()
    image.scroll_into_view_if_needed()
    box = image.bounding_box()
    at = lambda point: (box["x"] + point[0] * box["width"], box["y"] + point[1] * box["height"])  # noqa: E731
    page.mouse.move(*at(start))
    page.mouse.down()
    page.mouse.move(*at(end), steps=8)
    page.mouse.up()


@pytest.fixture
def chromium_page():
    from server_support import chromium

    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1440, "height": 900})
        page.set_default_timeout(30_000)
        yield page
