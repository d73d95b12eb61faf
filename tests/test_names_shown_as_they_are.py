"""A name from a file cannot reorder the dashboard's own words nor pass for another name: every invisible or
reordering character it holds is shown as its code point (⟨U+202E⟩), and a name written right to left is
isolated from the words around it (pages/components/escaping.py), in Markdown, in tables, in select boxes, in
toasts and on cards."""

import os
import re
import sys
import unicodedata

import pandas as pd
import pytest

from apptest_support import filled_db, grid_event, page, ran, shown
from curation import Manifest
from pages.components.escaping import code_span, escape_markdown, pictured, pictured_table
from server_support import CHROMIUM, chromium, settle, streamlit_server
from test_app_pictures import ENGRAVING, STOCK_CUT, db, pictures_view  # noqa: F401  (db: a fixture)

OVERRIDE = "\u202e"  # RIGHT-TO-LEFT OVERRIDE: what follows it is drawn backwards, to the paragraph's end
ZERO_WIDTH = "\u200b"
REVERSED_NAME = f"bill{OVERRIDE}fdp.exe"  # reads "billexe.pdf" where the override works
# Every character that must never reach the screen as itself: what reorders text, and what shows nothing.
INVISIBLE_OR_REORDERING = re.compile("[\u00ad\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]")


def test_every_format_character_is_shown_as_its_code_point():
    hidden = [chr(code) for code in range(sys.maxunicode + 1) if unicodedata.category(chr(code)) == "Cf"]
    for char in hidden + ["\u034f", "\u115f", "\u1160", "\u3164", "\uffa0"]:
        assert pictured(f"a{char}b") == f"a⟨U+{ord(char):04X}⟩b", hex(ord(char))
    assert pictured(REVERSED_NAME) == "bill⟨U+202E⟩fdp.exe"
    assert pictured("issue.pdf") != pictured(f"iss{ZERO_WIDTH}ue.pdf")


def test_right_to_left_text_is_isolated_and_left_to_right_text_left_as_it_is():
    for name in ("גליון 3.pdf", "عدد ٣.pdf", "عدد.pdf"):
        assert pictured(name) == f"\u2068{name}\u2069"  # first-strong isolate ... pop directional isolate
    for name in ("issue-1.pdf", "Ausgabe für Mädchen.pdf", "номер.pdf", "号.pdf", "x\r\ry"):
        assert "\u2068" not in pictured(name)
    assert pictured("עם\u202eשם") == "\u2068עם⟨U+202E⟩שם\u2069"  # the isolates balance: no control left inside


@pytest.mark.parametrize("render", [escape_markdown, code_span, pictured])
def test_every_way_of_showing_a_name_shows_what_reorders_or_hides(render):
    body = render(f"{REVERSED_NAME} and iss{ZERO_WIDTH}ue")
    assert not INVISIBLE_OR_REORDERING.search(body.replace("\u2060", "")), ascii(body)  # escape_markdown's own joiner
    assert "⟨U+202E⟩" in shown(body) and "⟨U+200B⟩" in shown(body)


def test_a_tables_cells_column_names_and_index_are_shown_as_they_are():
    frame = pd.DataFrame({f"class{ZERO_WIDTH}": [1]}, index=pd.Index([REVERSED_NAME], name="true class"))
    table = pictured_table(frame)
    assert list(table.columns) == ["class⟨U+200B⟩"] and list(table.index) == ["bill⟨U+202E⟩fdp.exe"]
    assert table.index.name == "true class"
    assert pictured_table([{"document": REVERSED_NAME, "pages": 3}]) == [{"document": "bill⟨U+202E⟩fdp.exe",
                                                                          "pages": 3}]


def two_look_alike_documents(db):  # noqa: F811
    """Two documents of two pages, each page with an engraving and a stock cut (as test_app_pictures'
    with_pictures), named alike but for a zero-width space, each with a right-to-left override in its name."""
    filled_db(db, documents=2, pages=2)
    with Manifest(db) as manifest:
        manifest.conn.execute("UPDATE pages SET ink_tone = 0.6, picture_area = ?", (ENGRAVING[4],))
        for row in manifest.pages(order="p.doc_id, p.page"):
            manifest.set_pictures(row["doc_id"], row["page"], [ENGRAVING, STOCK_CUT])
        ids = [row[0] for row in manifest.conn.execute("SELECT id FROM documents ORDER BY id")]
        manifest.conn.execute("UPDATE documents SET path = ? WHERE id = ?", (f"/archive/{REVERSED_NAME}.pdf", ids[0]))
        manifest.conn.execute("UPDATE documents SET path = ? WHERE id = ?", (f"/archive/{REVERSED_NAME}{ZERO_WIDTH}.pdf",
                                                                             ids[1]))
        manifest.conn.commit()


def test_review_names_look_alike_documents_apart_and_never_draws_a_reordering_character(db):  # noqa: F811
    two_look_alike_documents(db)
    at = ran(page("pages/review.py"))
    options = at.selectbox(key="doc").options
    assert options[1:] == ["bill⟨U+202E⟩fdp.exe.pdf", "bill⟨U+202E⟩fdp.exe⟨U+200B⟩.pdf"]
    at = pictures_view()
    options = at.selectbox(key="pic_doc").options
    assert options[1:] == ["bill⟨U+202E⟩fdp.exe.pdf", "bill⟨U+202E⟩fdp.exe⟨U+200B⟩.pdf"]
    from apptest_support import grid_cards

    card = next(iter(grid_cards(at).values()))
    assert "bill⟨U+202E⟩fdp.exe" in card and not INVISIBLE_OR_REORDERING.search(card)
    picture = next(iter(grid_cards(at)))
    grid_event(at, "decide", picture, "exclude")  # a toast names the picture's document
    toasts = [str(toast.value) for toast in at.toast]
    assert any("bill⟨U+202E⟩fdp.exe" in shown(toast) for toast in toasts), toasts
    undo_line = [str(text.value) for text in at.text if "Your last change" in str(text.value)]  # plain text
    assert undo_line and not INVISIBLE_OR_REORDERING.search(undo_line[0]), [ascii(line) for line in undo_line]
    grid_event(at, "open", picture)  # the large view: "**name**, page 1 · picture 1 of 2 · 20.30 sq in"
    bodies = [str(e.value) for kind in ("markdown", "caption", "warning", "error") for e in getattr(at, kind)]
    assert any("bill⟨U+202E⟩fdp.exe" in shown(body) and "sq in" in body for body in bodies), bodies
    for body in bodies + toasts:
        assert not INVISIBLE_OR_REORDERING.search(body.replace("\u2060", "")), ascii(body)


def test_home_and_ingest_tables_show_names_as_they_are(db):  # noqa: F811
    two_look_alike_documents(db)
    at = ran(page("pages/ingest.py"))
    documents = at.dataframe[0].value["document"].tolist()
    assert sorted(documents) == ["bill⟨U+202E⟩fdp.exe.pdf", "bill⟨U+202E⟩fdp.exe⟨U+200B⟩.pdf"]


PHRASE_ORDER = """phrase => {
  const found = [], walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const node = walker.currentNode, at = node.data.indexOf(phrase);
    if (at < 0) continue;
    const x = i => { const r = document.createRange(); r.setStart(node, i); r.setEnd(node, i + 1);
                     return r.getBoundingClientRect(); };
    const first = x(at), last = x(at + phrase.length - 1);
    if (first.width && last.width) found.push([first.left, last.left]);
  }
  return found;
}"""


def test_in_a_browser_a_reordering_name_leaves_the_large_views_own_words_in_order(db, tmp_path):  # noqa: F811
    """Chromium: the large view's line "**NAME**, page 1 · picture 1 of 2 · 20.30 sq in" with U+202E in NAME
    read "ni qs 03.02 ..."; its words are drawn left to right, the override shown as ⟨U+202E⟩."""
    pytest.importorskip("playwright.sync_api")
    if not os.path.exists(CHROMIUM):
        pytest.skip("needs Debian's chromium (apt-get install chromium)")
    two_look_alike_documents(db)
    with streamlit_server(tmp_path / "streamlit.log", {"CURATION_DB": str(db)}) as (_, port), chromium() as browser:
        page_ = browser.new_page(viewport={"width": 1400, "height": 1000})
        page_.set_default_timeout(30_000)
        page_.goto(f"http://127.0.0.1:{port}/review?view=Pictures")
        settle(page_)
        page_.locator("[class*='st-key-picture-card-']").first.get_by_role("button", name="Open").click()
        dialog = page_.get_by_role("dialog")
        dialog.wait_for()
        settle(page_)
        text = dialog.inner_text()
        order = page_.evaluate(PHRASE_ORDER, "sq in")
        page_.screenshot(path=str(tmp_path / "large-view.png"))
    assert order and all(first < last for first, last in order), order  # "s" left of "n": not drawn backwards
    assert "bill⟨U+202E⟩fdp.exe" in text.replace("\u2060", ""), text
    assert not INVISIBLE_OR_REORDERING.search(text.replace("\u2060", "")), ascii(text)


def test_the_vet_scanners_model_list_shows_a_models_folder_name_as_it_is(models, demo_model):
    (models / f"demo{OVERRIDE}tiv").symlink_to(demo_model, target_is_directory=True)
    (models / f"demo{ZERO_WIDTH}").symlink_to(demo_model, target_is_directory=True)
    at = ran(page("pages/vet_scanner.py"))
    options = sorted(at.selectbox[0].options)
    assert options == ["demo⟨U+200B⟩ (untrained demo)", "demo⟨U+202E⟩tiv (untrained demo)"], options
