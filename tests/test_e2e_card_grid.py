"""Review's grid of cards (one component of plain-HTML cards) in a real browser, Chromium at 1440 x 900: a click on a
card's control decides it, a click on a card moves the focus there, a click on its picture opens it large; after
a click on a filter the arrows move the cards; text from a file is shown as written, never as HTML; a redrawn
screen redraws only the cards that changed."""

import os

import pytest

from curation import Manifest
from server_support import CHROMIUM, no_exception, settle
from test_e2e_keyboard import cards, focused, page_label, press, review  # noqa: F401 (review: the fixture)

playwright = pytest.importorskip("playwright.sync_api")
pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM),
                                reason="needs Debian's chromium (apt-get install chromium)")

CARD = "[class*='st-key-review-card-']"


def overrides(db) -> list[tuple[int, int, int]]:
    with Manifest(db) as manifest:
        return [(row["doc_id"], row["page"], row["keep"]) for row in manifest.overrides()]


def test_a_click_on_a_cards_control_decides_it_and_a_click_on_the_card_moves_the_focus(review):  # noqa: F811
    page, db = review
    third = page.locator(CARD).nth(2)
    third.get_by_role("button", name="Exclude").click()
    page.get_by_text("Excluded page").first.wait_for()  # the toast
    settle(page)
    no_exception(page)
    assert [keep for _, _, keep in overrides(db)] == [0]
    assert "excluded" in cards(page)[2]["text"]  # the card says so, where it was
    assert third.get_by_role("button", name="Exclude").get_attribute("aria-pressed") == "true"
    third.locator(".cg-line").first.click()  # a click on the card's words: the focus moves there
    deadline_focus(page, 2)
    press(page, "i")  # the keys act on the card clicked
    page.get_by_text("Included page").first.wait_for()
    settle(page)
    assert [keep for _, _, keep in overrides(db)] == [1]
    page.locator(CARD).nth(4).locator("img").click()  # a click on a card's picture opens it large
    page.get_by_role("dialog").get_by_text(page_label(cards(page)[4])).wait_for()
    deadline_focus(page, 4)  # the focus with it
    press(page, "Escape")
    page.get_by_role("dialog").wait_for(state="detached")
    press(page, "ArrowRight", focus=5)  # the keys go on from the card opened


def deadline_focus(page, index: int):
    page.wait_for_function(f"""() => {{
        const card = document.querySelectorAll("{CARD}")[{index}];
        const style = card && getComputedStyle(card);
        return Boolean(style) && style.outlineStyle !== "none" && parseFloat(style.outlineWidth) >= 2;
    }}""")


def test_after_a_filter_click_the_arrows_move_the_cards_and_a_decision_redraws_one_card(review):  # noqa: F811
    page, db = review
    filters = page.locator(".st-key-decision")
    filters.get_by_role("radio", name="Kept").click()
    settle(page)
    filters.get_by_role("radio", name="All pages").click()  # the browser's focus is on the filter's option
    settle(page)
    press(page, "ArrowRight", focus=1)  # the cards move, not the focus along the filter's buttons
    press(page, "ArrowDown")
    below = focused(page)
    assert below > 1 and cards(page)[below]["top"] > cards(page)[1]["top"]  # a row down
    # Mark every card's element: a decision draws its own card again, the others stay as they were.
    page.evaluate(f"""() => document.querySelectorAll("{CARD}").forEach((card, n) => card.dataset.mark = n)""")
    press(page, "e")
    page.get_by_text("Excluded page").first.wait_for()
    settle(page)
    marks = page.evaluate(f"""() => [...document.querySelectorAll("{CARD}")].map(card => card.dataset.mark || null)""")
    assert marks[below] is None  # redrawn
    assert sum(mark is not None for mark in marks) == len(marks) - 1  # the others are the very same elements
    assert "excluded" in cards(page)[below]["text"]


def test_text_from_a_file_is_shown_as_written_on_a_card(review):  # noqa: F811
    page, db = review
    with Manifest(db) as manifest:
        row = next(manifest.pages())
        manifest.set_caption(row["doc_id"], row["page"], '<img src=x onerror="window.__owned=1"> <b>bold</b>')
    page.reload()
    settle(page)
    boxes = page.locator(f"{CARD} input")
    values = [boxes.nth(n).input_value() for n in range(boxes.count())]
    assert '<img src=x onerror="window.__owned=1"> <b>bold</b>' in values  # in its box, as typed
    assert page.evaluate("window.__owned") is None  # never HTML
    assert page.locator(f"{CARD} b", has_text="bold").count() == 0
