"""Keyboard review in a real browser (Chromium at 1440 x 900): on Review's page grid the arrow keys move a
focus a person sees, `e` excludes the focused page with a toast, `z` undoes it, Enter opens the large view,
→ goes on to the next page there, + zooms, Esc closes it; past a screen's last row the focus goes on to the
next screen; keys typed into a caption stay in the caption."""

import contextlib
import os
import re
import subprocess
import sys
import time

import pytest

from apptest_support import filled_db
from curation import Manifest
from server_support import CHROMIUM, ROOT, chromium, go, no_exception, settle, streamlit_server

playwright = pytest.importorskip("playwright.sync_api")
pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM),
                                reason="needs Debian's chromium (apt-get install chromium)")


@pytest.fixture
def review(tmp_path, archive):
    """Review of the archive (3 PDFs, 15 pages, one screen), ingested from the command line."""
    db = tmp_path / "data" / "manifest.sqlite"
    subprocess.run([sys.executable, "-m", "curation", "ingest", str(archive), "--db", str(db), "--workers", "1",
                    "-q"], cwd=ROOT, check=True, capture_output=True, timeout=300)
    with reviewing(tmp_path, db, archive) as page:
        yield page, db


@contextlib.contextmanager
def reviewing(tmp_path, db, roots):
    env = {"CURATION_DB": str(db), "CURATION_ROOTS": str(roots)}
    with streamlit_server(tmp_path / "streamlit.log", env) as (_, port), chromium() as browser:
        page = browser.new_page(viewport={"width": 1440, "height": 900})
        page.set_default_timeout(30_000)
        go(page, f"http://127.0.0.1:{port}", "review")
        page.wait_for_function(LISTENING)
        yield page


LISTENING = "() => Boolean(window.__curationKeyboards && window.__curationKeyboards['review-pages'])"


# Every card as a person sees it: its text, whether it has the focus's thick outline, and its row.
CARDS = """() => [...document.querySelectorAll("[class*='st-key-review-card-']")].map(card => {
    const style = getComputedStyle(card);
    const box = card.getBoundingClientRect();
    return {text: card.innerText, top: Math.round(box.top), seen: box.top >= -1 && box.bottom <= innerHeight + 1,  // sub-pixel layout
            focused: style.outlineStyle !== "none" && parseFloat(style.outlineWidth) >= 2};
})"""


def cards(page) -> list[dict]:
    return page.evaluate(CARDS)


def focused(page) -> int:
    marked = [n for n, card in enumerate(cards(page)) if card["focused"]]
    assert len(marked) == 1, marked
    return marked[0]


def press(page, key: str, focus: int | None = None):
    """Press `key`; with `focus`, wait until that card has the focus."""
    page.keyboard.press(key)
    settle(page)
    if focus is not None:
        deadline = time.monotonic() + 20
        while focused(page) != focus and time.monotonic() < deadline:
            page.wait_for_timeout(100)
        assert focused(page) == focus
    no_exception(page)


def page_label(card: dict) -> str:
    """"p. 3 of 5 · issue-1.pdf" on a card; the large view says "issue-1.pdf, page 3"."""
    number, name = re.search(r"p\. (\d+) of \d+ · (\S+)", card["text"]).groups()
    return f"{name}, page {number}"


def overrides(db) -> list[tuple]:
    with Manifest(db) as manifest:
        return [(row["doc_id"], row["page"], row["keep"]) for row in manifest.overrides()]


def test_move_exclude_undo_open_next_zoom_and_close_by_keyboard(review):
    page, db = review
    shown = cards(page)
    columns = sum(card["top"] == shown[0]["top"] for card in shown)
    assert len(shown) == 15 and columns >= 5
    assert focused(page) == 0  # the first card has the focus from the start
    page.get_by_text("Keys: ← → or j k move").wait_for()  # the keys are told

    press(page, "ArrowRight", focus=1)
    assert not cards(page)[1 + columns]["seen"]  # the second row is below the fold...
    press(page, "ArrowDown", focus=1 + columns)  # a row down, as the browser lays out the rows
    page.wait_for_function(f"() => ({CARDS})()[{1 + columns}].seen")  # ...and comes into sight with the focus
    press(page, "k", focus=columns)
    press(page, "j", focus=1 + columns)
    press(page, "ArrowUp", focus=1)

    card = cards(page)[1]
    number = re.search(r"p\. (\d+) of", card["text"]).group(1)
    press(page, "e")
    page.get_by_text(f"Excluded page {number}").first.wait_for()  # the toast
    assert "excluded" in cards(page)[1]["text"]
    assert [keep for *_, keep in overrides(db)] == [0]
    page.get_by_role("button", name="Undo").wait_for()  # and the Undo above the pages

    press(page, "z")
    page.get_by_text("Undone").first.wait_for()
    assert overrides(db) == []
    assert "excluded" not in cards(page)[1]["text"] and focused(page) == 1

    press(page, "Enter")
    dialog = page.get_by_role("dialog")
    dialog.get_by_text(page_label(cards(page)[1])).wait_for()  # the focused page, large
    press(page, "ArrowRight", focus=2)
    dialog.get_by_text(page_label(cards(page)[2])).wait_for()  # the next page, in the same large view
    press(page, "ArrowLeft", focus=1)
    dialog.get_by_text(page_label(cards(page)[1])).wait_for()

    box = dialog.locator("[data-testid='stImage'] img").first
    fitted = box.bounding_box()["width"]
    press(page, "+")
    dialog.get_by_text("1.5×").wait_for()
    assert dialog.locator("[data-testid='stImage'] img").first.bounding_box()["width"] > 1.4 * fitted
    dialog.locator("[class*='st-key-review-pages-zoom-in'] button").first.click()  # a button does the same
    dialog.get_by_text("2×").wait_for()
    settle(page)

    dialog.locator("[class*='st-key-review-pages-ArrowRight'] button").first.click()  # next, by mouse
    settle(page)
    dialog.get_by_text(page_label(cards(page)[2])).wait_for()
    assert focused(page) == 2

    press(page, "Escape")
    page.get_by_role("dialog").wait_for(state="detached")
    press(page, "ArrowLeft", focus=1)  # the grid's keys again
    assert overrides(db) == []


def test_keys_typed_into_a_caption_stay_in_the_caption(review):
    page, db = review
    box = page.locator("[class*='st-key-review-card-'] input").first
    box.click()
    page.keyboard.type("engraving")  # holds e, i, a
    page.keyboard.press("ArrowLeft")
    settle(page)
    assert box.input_value() == "engraving"
    assert overrides(db) == [] and focused(page) == 0


def test_past_a_screen_s_edge_the_focus_goes_on_to_the_next_screen_and_back(tmp_path):
    db = filled_db(tmp_path / "data" / "manifest.sqlite", documents=1, pages=45)  # screens of 40 and 5
    with reviewing(tmp_path, db, tmp_path) as page:
        shown = cards(page)
        columns = sum(card["top"] == shown[0]["top"] for card in shown)
        last_row = 39 // columns * columns
        for row in range(columns, last_row + 1, columns):
            press(page, "ArrowDown", focus=row)
        press(page, "ArrowDown")
        page.wait_for_function(f"() => ({CARDS})().length === 5")  # the second screen...
        assert focused(page) == 0  # ...with the focus in the same column of its first row
        press(page, "ArrowUp")
        page.wait_for_function(f"() => ({CARDS})().length === 40")
        assert focused(page) == last_row

        for index in range(last_row + 1, 40):
            press(page, "ArrowRight", focus=index)
        press(page, "Enter")  # the large view of the screen's last page (its PDF is not at hand: a message)
        page.get_by_role("dialog").get_by_text(page_label(cards(page)[39])).wait_for()
        press(page, "ArrowRight")  # next: the first page of the next screen, in the large view
        page.wait_for_function(f"() => ({CARDS})().length === 5")
        page.get_by_role("dialog").get_by_text(page_label(cards(page)[0])).wait_for()
        assert focused(page) == 0
        no_exception(page)


def test_after_a_click_on_a_filter_the_keys_still_move_the_cards(review):
    page, db = review
    filters = page.locator(".st-key-decision")
    filters.get_by_role("radio", name="Kept").click()
    settle(page)
    filters.get_by_role("radio", name="All pages").click()  # the browser's focus is on the filter's first option
    settle(page)
    assert page.evaluate("document.activeElement.innerText") == "All pages"
    address = page.url
    press(page, "ArrowRight", focus=1)  # the cards move, not the focus along the filter's buttons
    press(page, "ArrowRight", focus=2)
    press(page, "Enter")  # opens the card, does not switch the filter
    page.get_by_role("dialog").get_by_text(page_label(cards(page)[2])).wait_for()
    assert page.url == address
    press(page, "Escape")
    page.get_by_role("dialog").wait_for(state="detached")
    page.get_by_text("Outline the pictures").click()  # a toggle clicked: the keys still move the cards
    settle(page)
    press(page, "ArrowLeft", focus=1)
    page.locator(".st-key-sort").scroll_into_view_if_needed()  # a list opened while scrolling closes at once
    page.wait_for_timeout(300)
    page.locator(".st-key-sort").get_by_role("button", name="Open").click()  # a select open: its keys...
    page.get_by_role("option").nth(1).click()
    settle(page)
    start = focused(page)
    press(page, "ArrowRight", focus=start + 1)  # ...an option chosen: the cards' again
    page.locator("[class*='st-key-review-card-'] input").first.click()  # typing in a text box keeps its keys
    page.keyboard.type("a")
    page.keyboard.press("ArrowLeft")
    settle(page)
    assert focused(page) == start + 1 and overrides(db) == []


CARD_SAYS = """([index, words]) => {
    const card = document.querySelectorAll("[class*='st-key-review-card-']")[index];
    return Boolean(card) && card.innerText.includes(words);
}"""


def test_a_decision_in_the_large_view_shows_on_its_card_once_the_view_closes(review):
    page, db = review
    press(page, "ArrowRight", focus=1)
    assert "excluded" not in cards(page)[1]["text"]
    press(page, "Enter")
    dialog = page.get_by_role("dialog")
    dialog.get_by_text(page_label(cards(page)[1])).wait_for()
    press(page, "e")  # only the large view runs again: it says so at once
    dialog.get_by_text("excluded").first.wait_for()  # its badge
    press(page, "Escape")
    dialog.wait_for(state="detached")
    page.wait_for_function(CARD_SAYS, arg=[1, "excluded"])  # the grid behind it ran again
    assert [keep for *_, keep in overrides(db)] == [0]
    press(page, "z", focus=1)  # the grid's z undoes what the large view did
    page.wait_for_function(f"() => !({CARD_SAYS})([1, 'excluded'])")
    assert overrides(db) == []
    press(page, "Enter")  # nothing changed in it this time: closing leaves the grid as it is, keys and all
    dialog.get_by_text(page_label(cards(page)[1])).wait_for()
    press(page, "Escape")
    dialog.wait_for(state="detached")
    press(page, "ArrowRight", focus=2)


def test_keys_pressed_while_the_screen_still_loads_are_each_done_once_in_order(review):
    """Keys come faster than the script runs while the screen loads (Streamlit then keeps only the latest value
    the listener sent): → → e must still exclude the third card, once, never the first one twice."""
    page, db = review
    for key in ("ArrowRight", "ArrowRight", "e"):  # at once, the first screen perhaps still loading
        page.keyboard.press(key)
    page.get_by_text("Excluded page").first.wait_for()
    settle(page)
    no_exception(page)
    assert focused(page) == 2
    assert "excluded" in cards(page)[2]["text"] and "excluded" not in cards(page)[0]["text"]
    assert len(overrides(db)) == 1
    assert page.locator("[data-testid='stToast']").count() == 1
