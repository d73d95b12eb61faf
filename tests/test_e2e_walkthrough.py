"""The walkthrough's fixes in a real browser (Chromium at 1440 x 900, as a curator's laptop): one page
numbering on Review, the Export preview and in the ZIP; a bulk caption that asks before it touches a typed
caption and shows on every card at once; a review grid whose cards fit their controls; "At the edge"
thumbnails large enough to judge; and no flash of Streamlit's own page list on first load."""

import csv
import io
import os
import subprocess
import sys
import time
import zipfile

import pytest

from curation import Manifest
from server_support import CHROMIUM, ROOT, chromium, go, no_exception, settle, streamlit_server

playwright = pytest.importorskip("playwright.sync_api")
pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM),
                                reason="needs Debian's chromium (apt-get install chromium)")


def cli(*args):
    result = subprocess.run([sys.executable, "-m", "curation", *map(str, args)], cwd=ROOT, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.fixture
def ingested(tmp_path, archive):
    """The archive (3 PDFs, 15 pages) ingested from the command line."""
    db = tmp_path / "data" / "manifest.sqlite"
    cli("ingest", archive, "--db", db, "--workers", 1, "-q")
    return db, archive


@pytest.fixture
def dashboard(tmp_path, ingested):
    db, archive = ingested
    env = {"CURATION_DB": str(db), "CURATION_ROOTS": str(archive)}
    with streamlit_server(tmp_path / "streamlit.log", env) as (_, port), chromium() as browser:
        page = browser.new_page(viewport={"width": 1440, "height": 900})
        page.set_default_timeout(30_000)
        yield f"http://127.0.0.1:{port}", db, page


def test_one_page_number_on_review_in_the_export_preview_and_in_the_zip(dashboard, tmp_path):
    url, db, page = dashboard
    cli("settings", "--rule", "sigma", "--threshold", 1000, "--db", db)  # nothing kept by the rule...
    cli("override", "issue-1.pdf", 3, "include", "--db", db)  # ...but page 3 of issue-1.pdf, by its number
    with Manifest(db) as manifest:
        assert [tuple(row)[1:3] for row in manifest.overrides()] == [(2, 1)]  # stored 0-based

    go(page, url, "review?decision=overridden")
    main = page.locator("[data-testid='stMain']")
    assert "p. 3 of 5 · issue-1.pdf" in main.inner_text()

    go(page, url, "export")
    page.get_by_text("issue-1.pdf, page 3").first.wait_for()  # the preview's caption

    out = tmp_path / "lora.zip"
    cli("export", "--db", db, "--out", out, "--workers", 1, "--quiet")
    with zipfile.ZipFile(out) as z:
        [image] = [name for name in z.namelist() if name.endswith(".jpg")]
        [row] = csv.DictReader(io.StringIO(z.read("manifest.csv").decode()))
    assert image.endswith("-p0003.jpg") and row["page"] == "3"


def caption_boxes(page):
    return page.locator("[class*='st-key-review-card-'] input")


def test_a_bulk_caption_asks_before_a_typed_caption_keeps_it_and_shows_on_every_card(dashboard):
    url, db, page = dashboard
    go(page, url, "review")
    typed = caption_boxes(page).first
    typed.fill("a lady in a walking dress")
    typed.press("Enter")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with Manifest(db) as manifest:
            if manifest.captions():
                break
        time.sleep(0.2)
    settle(page)

    page.get_by_role("button", name="Caption all").click()
    dialog = page.get_by_role("dialog")
    dialog.get_by_label("Caption", exact=True).fill("fashion plate, engraving")
    dialog.get_by_label("Caption", exact=True).press("Control+Enter")
    settle(page)
    overwrite = dialog.get_by_role("checkbox", name="Also overwrite the 1 captions already written")
    assert not overwrite.is_checked()  # asked, and off unless ticked
    assert "Write this caption on 14 of the 15 pages" in dialog.inner_text()
    assert "1 page with a caption keeps it" in dialog.inner_text()
    dialog.get_by_role("button", name="Caption 14 pages").click()
    page.get_by_role("dialog").wait_for(state="detached")
    settle(page)
    no_exception(page)

    with Manifest(db) as manifest:
        assert sorted(set(manifest.captions().values())) == ["a lady in a walking dress", "fashion plate, engraving"]
    shown = [box.input_value() for box in caption_boxes(page).all()]  # no reload: what the cards show now
    assert len(shown) == 15 and shown.count("fashion plate, engraving") == 14
    assert "a lady in a walking dress" in shown


CARD_GEOMETRY = """() => [...document.querySelectorAll("[class*='st-key-review-card-']")].map(card => {
    const box = card.getBoundingClientRect(), buttons = [...card.querySelectorAll("button")];
    const img = card.querySelector("img");
    return {top: Math.round(box.top), height: Math.round(box.height), width: box.width,
            fits: buttons.every(b => b.getBoundingClientRect().right <= box.right + 0.5 && b.scrollWidth <= b.clientWidth + 1),
            image: img ? img.getBoundingClientRect().width : 0};
})"""


def test_the_grid_at_1440_px_is_dense_and_a_card_keeps_its_height_when_overridden(dashboard):
    url, db, page = dashboard
    go(page, url, "review")
    page.wait_for_function("""() => { const imgs = [...document.querySelectorAll("[data-testid='stMain'] img")];
                                     return imgs.length && imgs.every(img => img.complete && img.naturalWidth); }""")
    cards = page.evaluate(CARD_GEOMETRY)  # measured once every thumbnail has loaded, as a person sees it
    first_row = [card for card in cards if card["top"] == cards[0]["top"]]
    assert len(first_row) >= 5  # four a row before
    assert all(card["fits"] for card in cards)  # Include / Auto / Exclude inside the card, none clipped
    assert all(card["image"] >= 0.8 * card["width"] for card in cards)
    before = cards[0]["height"]
    page.locator("[class*='st-key-review-card-']").first.get_by_role("button", name="Exclude").click()
    page.get_by_text("Excluded page").first.wait_for()  # the toast
    settle(page)
    no_exception(page)
    assert page.evaluate(CARD_GEOMETRY)[0]["height"] == before
    with Manifest(db) as manifest:
        assert [row["keep"] for row in manifest.overrides()] == [0]


def test_at_the_edge_thumbnails_are_large_enough_to_judge(dashboard):
    url, db, page = dashboard
    go(page, url, "threshold")
    page.get_by_role("heading", name="At the edge").wait_for()
    page.locator("[data-testid='stMain'] img").first.wait_for()  # a busy machine draws the strips after the heading
    settle(page)
    widths = page.evaluate("""() => [...document.querySelectorAll("[data-testid='stMain'] img")]
                              .map(img => img.getBoundingClientRect().width)""")
    assert widths and min(widths) >= 160


def test_streamlit_s_own_page_list_never_shows(dashboard):
    url, db, page = dashboard
    page.add_init_script("""window.sidebarTexts = [];
        new MutationObserver(() => {
            const sidebar = document.querySelector("[data-testid='stSidebar']");
            if (sidebar) window.sidebarTexts.push(sidebar.innerText);
        }).observe(document, {subtree: true, childList: true, characterData: true});""")
    page.goto(f"{url}/")
    settle(page)
    seen = page.evaluate("window.sidebarTexts")
    assert seen and "Vet scanner" in seen[-1] and "Threshold" in seen[-1]
    assert not [text for text in seen if "common" in text.split() or "dashboard" in text.split()
                or "auth" in text.split()]  # the files of pages/, listed before dashboard.py has run
