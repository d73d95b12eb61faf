"""Text that a person or a file supplied (captions, PDF file names, job messages, model folders) is shown
literally on every page: Markdown in it neither loads a remote image nor makes a live link nor colours text."""

import html
import json
import os
import re

import pytest

from apptest_support import drawn, filled_db, grid_cards, grid_event, page, ran, shown
from curation import Manifest
from curation.sources import paths
from pages.components.common import code_span, escape_markdown, pictured

from server_support import CHROMIUM, chromium, settle, streamlit_server
from test_export_cli import record_scores, repeated_scan_pdf

# No "/" in it: it has to be a file name too.
HOSTILE = ("![tracker](https:evil.example?t.png) [click](https:evil.example) :red[alarm] :material_home: $x^2$ "
           "<img src=x> *em* __strong__ www.evil.example me@evil.example ~~gone~~ a|b")
NAME = f"a`{HOSTILE}`b"  # backticks too: a path shown as code must not break out of it
CAPTION = "![tracker](http://evil.example/t.png) [click](http://evil.example/) :red[alarm] :material/home: $x$ # h"

# What Markdown would interpret: a link or image, a Streamlit colour, math, HTML...
PARSED = re.compile(r"(?<!\\)\]\(|(?<!\\):red\[|(?<!\\)\$|(?<!\\)<img")
# ...and what is found in the text once parsed, escapes or not: an address made a link, a shortcode made an
# icon or emoji (escape_markdown puts a word joiner, U+2060, inside those).
FOUND_IN_TEXT = re.compile(r"https?://|www\.|\w@|:[a-z_][\w+-]*:", re.IGNORECASE)
CODE_SPAN = re.compile(r"(?<![\\`])(`+)(?!`)(.+?)(?<!`)\1(?!`)")
ESCAPED = re.compile(r"\\([!-/:-@\[-`{-~])")


def interpreted(body: str):
    """What of `body` (code spans aside) Streamlit's Markdown would turn into something else, or None."""
    outside_code = CODE_SPAN.sub("", body)
    return PARSED.search(outside_code) or FOUND_IN_TEXT.search(ESCAPED.sub(r"\1", outside_code))
def markdown_bodies(at) -> list[str]:
    """The source of every element that Streamlit renders as Markdown."""
    bodies = [str(e.value) for kind in ("markdown", "caption", "info", "success", "warning", "error", "toast")
              for e in getattr(at, kind)]
    bodies += [image.proto.imgs[0].caption for image in at.get("image")]
    bodies += [b.label for b in at.button] + [e.label for e in at.expander]
    return bodies


def assert_shown_literally(at, *texts: str) -> None:
    bodies = markdown_bodies(at)
    for text in texts:
        assert any(text in shown(body) for body in bodies), (text, bodies)
    for body in (body for body in bodies if "evil" in shown(body)):  # the page's own Markdown may use all of it
        assert not interpreted(body), body


@pytest.mark.parametrize("text", [HOSTILE, NAME, CAPTION, "# h\n1. x\n- y\n> z\n```\ncode\n```", "\\*not em\\*",
                                  "emoji :smile: and :help[x] and mailto:x@y.example"])
def test_escaped_text_reads_back_as_it_was(text):
    body = escape_markdown(text)
    assert shown(body) == pictured(text)  # line breaks shown as their pictures (␊)
    assert not interpreted(body)
    assert not re.search(r"(?<!\\)[*_`#>\[\]()!|~:$-]", body)  # every special character escaped


@pytest.mark.parametrize("text", ["plain/path.pdf", "a`b", "``x``", "`", "a ``` b", " x "])
def test_a_code_span_holds_any_text(text):
    body = code_span(text)
    match = CODE_SPAN.fullmatch(body)
    assert match, body
    content = match.group(2)
    if content.startswith(" ") and content.endswith(" ") and content.strip():
        content = content[1:-1]  # CommonMark strips one space each side
    assert content == text


# A blank line ends a paragraph, inside a code span too: what follows it was Markdown again.
TRACKER = "127.0.0.1:8798"
BLANK_NAMES = [f"x\r\r![y](https:{TRACKER})", f"x\n\n![y](https:{TRACKER})", f"x\r\n\r\n![y](https:{TRACKER})",
               f"x\u2028\u2029![y](https:{TRACKER})\x85# h"]
LINE_BREAKS = re.compile("[\r\n\x0b\x0c\x85\u2028\u2029]")


@pytest.mark.parametrize("name", BLANK_NAMES)
def test_no_line_break_reaches_markdown_from_a_code_span_or_escaped_text(name):
    for body in (code_span(name), escape_markdown(name), f"Drawn from {code_span(name)}; 2 picture(s)"):
        assert not LINE_BREAKS.search(body), repr(body)
        assert not interpreted(body), body
    match = CODE_SPAN.fullmatch(code_span(name))
    assert match and match.group(2) == pictured(name) and "\u240d\u240d" in pictured(f"x\r\r")  # x␍␍
    assert shown(escape_markdown(name)) == pictured(name)


def assert_no_blank_line_markdown(at, name: str) -> None:
    """`name` is shown (as its pictured form) somewhere, and no Markdown body holding it holds a line break or
    anything Markdown would interpret."""
    bodies = [body for body in markdown_bodies(at) if TRACKER in shown(body)]
    assert bodies and any(pictured(name) in shown(body) for body in bodies), (pictured(name), bodies)
    for body in bodies:
        assert not LINE_BREAKS.search(body), repr(body)
        assert not interpreted(body), body


@pytest.fixture
def db(tmp_path, monkeypatch):
    path = tmp_path / "data" / "manifest.sqlite"
    monkeypatch.setenv("CURATION_DB", str(path))
    return path


def hostile_document(db, name: str = NAME) -> None:
    """One document of ten pages whose file name is `name`, its lowest-σ page captioned with CAPTION."""
    filled_db(db, documents=1, pages=10)
    with Manifest(db) as manifest:
        manifest.conn.execute("UPDATE documents SET path = ?", (f"/archive/{name}.pdf",))
        lowest = min(manifest.pages(), key=lambda row: row["sigma"])
        manifest.set_caption(lowest["doc_id"], lowest["page"], CAPTION)


def finished_job(db, kind: str, status: str, message: str, args: dict | None = None) -> None:
    with Manifest(db) as manifest:
        job = manifest.start_job(kind, args)
        manifest.finish_job(job, status, message)


def test_review_shows_file_names_and_captions_literally(db):
    hostile_document(db)
    at = ran(page("pages/review.py"))
    cards = " ".join(grid_cards(at).values())  # the cards are HTML: every word from a file escaped
    assert f"{NAME}.pdf" in html.unescape(re.sub(r"<[^>]*>", "", cards))  # shown as it is written
    assert f'value="{html.escape(CAPTION)}"' in cards  # the caption box holds it as typed
    assert set(re.findall(r"<(\w+)", cards)) <= {"div", "img", "b", "span", "button", "input"}  # no tag of its own
    assert "evil" not in " ".join(re.findall(r'src="([^"]*)"', cards))  # nothing fetched from it
    grid_event(at, "open", next(iter(grid_cards(at))))  # a card's Open
    # The page opened large: its name, its caption, and why it cannot be drawn (no PDF there).
    assert_shown_literally(at, f"{NAME}.pdf", f"Caption: {CAPTION}", f"/archive/{NAME}.pdf")


def test_threshold_shows_file_names_literally(db):
    filled_db(db, documents=1, pages=10)
    with Manifest(db) as manifest:
        manifest.conn.execute("UPDATE documents SET path = ?", (f"/archive/{HOSTILE}.pdf",))
    at = ran(page("pages/threshold.py"))
    assert_shown_literally(at, HOSTILE)


def test_ingest_shows_sources_and_job_messages_literally(db, tmp_path):
    filled_db(db, documents=1, pages=4)
    with Manifest(db) as manifest:
        paths.add_source(manifest, tmp_path / NAME)
    finished_job(db, "ingest", "failed", f"{tmp_path / NAME} cannot be read: {HOSTILE}")
    at = ran(page("pages/ingest.py"))
    assert_shown_literally(at, str(tmp_path / NAME), f"{tmp_path / NAME} cannot be read: {HOSTILE}")


def test_home_shows_missing_sources_literally(db):
    hostile_document(db)
    at = ran(page("pages/home.py"))
    assert_shown_literally(at, f"/archive/{NAME}.pdf")


def test_export_shows_file_names_and_job_messages_literally(db, tmp_path):
    pdf = repeated_scan_pdf(tmp_path / f"{HOSTILE}.pdf", 2)
    with Manifest(db) as manifest:
        record_scores(manifest, pdf, [60, 70])
    finished_job(db, "export", "done", f"2 images; skipped {HOSTILE}", {"out": str(tmp_path / f"{NAME}.zip")})
    at = drawn(page("pages/export.py"))
    assert_shown_literally(at, f"{HOSTILE}.pdf", f"skipped {HOSTILE}", str(tmp_path / f"{NAME}.zip"))


def test_export_shows_a_refused_template_literally(db, tmp_path):
    pdf = repeated_scan_pdf(tmp_path / "issue.pdf", 2)
    with Manifest(db) as manifest:
        record_scores(manifest, pdf, [60, 70])
    at = ran(page("pages/export.py"))
    at.text_input(key="export_template").set_value("{trigger} ![x](http://evil.example/x.png) {caption")
    ran(at)
    assert_shown_literally(at, "![x](http://evil.example/x.png)")


def test_vet_scanner_shows_model_folders_and_problems_literally(models):
    broken = models / HOSTILE
    broken.mkdir()
    (broken / "config.json").write_text(json.dumps({"architectures": [HOSTILE]}))
    at = page("pages/vet_scanner.py")
    ran(at)
    assert_shown_literally(at, f"{HOSTILE}** cannot be used", f"the architecture(s) {HOSTILE}")


def test_vet_scanner_shows_a_refused_typed_folder_literally(models, demo_model, tmp_path, monkeypatch):
    (models / "demo-vit").symlink_to(demo_model, target_is_directory=True)
    monkeypatch.setenv(paths.ROOTS_ENV, str(tmp_path / "allowed"))
    at = ran(page("pages/vet_scanner.py"))
    next(box for box in at.text_input if box.label == "Folder").input(f"/elsewhere/{HOSTILE}")
    ran(at)
    next(b for b in at.button if b.label == "Classify the folder").click()
    ran(at)
    assert_shown_literally(at, f"/elsewhere/{HOSTILE} is outside the folders this server may read")


@pytest.mark.parametrize("name", BLANK_NAMES[:2])
def test_review_shows_a_blank_line_file_name_as_one_line(db, name):
    hostile_document(db, name)
    at = ran(page("pages/review.py"))
    grid_event(at, "open", next(iter(grid_cards(at))))  # "Drawn from `...`" in the page's dialog
    assert_no_blank_line_markdown(at, f"/archive/{name}.pdf")


@pytest.mark.parametrize("name", BLANK_NAMES[:2])
def test_home_shows_a_blank_line_file_name_as_one_line_to_a_viewer(db, name):
    from apptest_support import signed_in_as
    from test_auth import SECRETS, VIEWER

    hostile_document(db, name)
    at = page("pages/home.py")
    at.secrets.update(SECRETS)
    at.user = signed_in_as(VIEWER)
    ran(at)
    assert_no_blank_line_markdown(at, f"/archive/{name}.pdf")  # "no longer where they were ingested"


@pytest.mark.parametrize("name", BLANK_NAMES[:2])
def test_ingest_shows_a_blank_line_source_as_one_line(db, tmp_path, name):
    filled_db(db, documents=1, pages=4)
    with Manifest(db) as manifest:
        paths.add_source(manifest, tmp_path / name)
    at = ran(page("pages/ingest.py"))
    assert_no_blank_line_markdown(at, str(tmp_path / name))


@pytest.mark.parametrize("name", BLANK_NAMES[:2])
def test_export_shows_blank_line_paths_as_one_line(db, tmp_path, name):
    pdf = repeated_scan_pdf(tmp_path / f"{name}.pdf", 2)
    with Manifest(db) as manifest:
        record_scores(manifest, pdf, [60, 70])
    finished_job(db, "export", "done", "2 images", {"out": str(tmp_path / f"{name}.zip")})
    at = drawn(page("pages/export.py"))
    assert_no_blank_line_markdown(at, str(tmp_path / f"{name}.zip"))  # "... is no longer there"
    assert_no_blank_line_markdown(at, f"{name}.pdf")  # each preview's source


FIND_CAPTIONS = ['"quoted"\n=x', f"![img](http://evil.example/a.png) **bold** :red[red] $x^2$ www.evil.example",
                 "a\r\r![y](https:evil.example)", "# heading | cell"]


def test_the_find_and_replace_preview_shows_names_and_captions_literally(db):
    """st.table renders its cells as Markdown: file names and captions go in escaped, one line each."""
    from test_app_picture_captions import replace_form
    from test_app_pictures import pictures_view, with_pictures

    with_pictures(db, pages=2)
    name = BLANK_NAMES[0]
    with Manifest(db) as manifest:
        manifest.conn.execute("UPDATE documents SET path = ?", (f"/archive/{name}.pdf",))
        rows = list(manifest.picture_rows(order="x.page, x.number"))
        manifest.set_picture_captions([(row["id"], FIND_CAPTIONS[i % len(FIND_CAPTIONS)] + " lady")
                                       for i, row in enumerate(rows)])
    at = replace_form(pictures_view(), "lady", "woman")
    table = at.table[0].value
    cells = [str(cell) for column in ("Document", "Old", "New") for cell in table[column]]
    assert {shown(cell) for cell in table["Document"]} == {pictured(f"{name}.pdf")}
    assert {shown(cell) for cell in table["Old"]} == {pictured(text + " lady") for text in FIND_CAPTIONS}
    for cell in cells:
        assert not LINE_BREAKS.search(cell), repr(cell)
        assert not interpreted(cell), cell
        assert not re.search(r"(?<!\\)[*_`#>\[\]()!|~:$=-]", cell), cell  # every special character escaped


def watched_page(browser):
    """A new page of `browser`, and the list of the address of every request it makes."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.set_default_timeout(30_000)
    fetched = []
    page.on("request", lambda request: fetched.append(request.url))
    return page, fetched


def test_in_a_browser_a_hostile_caption_and_file_name_fetch_nothing_and_link_nowhere(db, tmp_path):
    """Chromium against `streamlit run`: Review's cards and its page dialog, and Home."""
    pytest.importorskip("playwright.sync_api")
    if not os.path.exists(CHROMIUM):
        pytest.skip("needs Debian's chromium (apt-get install chromium)")
    hostile_document(db)
    with streamlit_server(tmp_path / "streamlit.log", {"CURATION_DB": str(db)}) as (_, port), chromium() as browser:
        url = f"http://127.0.0.1:{port}"
        page, fetched = watched_page(browser)
        page.goto(f"{url}/review")
        settle(page)
        page.locator("[class*='st-key-review-card-']").first.get_by_role("button", name="Open").click()
        page.get_by_role("dialog").wait_for()
        settle(page)
        text = page.locator("[data-testid='stMain']").inner_text() + page.get_by_role("dialog").inner_text()
        links = page.locator("a[href]").evaluate_all("links => links.map(a => a.href)")
        icons = (page.locator("[data-testid='stMarkdownContainer']").filter(has_text="evil")
                 .locator("[data-testid='stIconMaterial'], .katex").count())
        images = page.locator("img").evaluate_all("images => images.map(i => i.src)")
        page.goto(url)
        settle(page)
        text += page.locator("[data-testid='stMain']").inner_text()
        links += page.locator("a[href]").evaluate_all("links => links.map(a => a.href)")
    text = text.replace("\u2060", "")
    assert f"{NAME}.pdf" in text and f"Caption: {CAPTION}" in text
    assert not [link for link in links if "evil" in link], links
    assert not [image for image in images if "evil" in image], images
    assert not [request for request in fetched if "evil" in request], fetched
    assert icons == 0  # no :material_home: icon, no $math$ in the hostile text


# What Markdown makes, inside what Streamlit renders as Markdown (text, captions, alerts, table cells): none of
# these may come of a hostile text. The page's own Markdown beside it sets words in bold or colour, never one of
# the hostile text's own.
MARKDOWN = "[data-testid='stMarkdownContainer']"
NEVER_MADE = "img, a, h1, h2, h3, h4, h5, h6, .katex, blockquote, li, table, hr"
STYLED = "em, strong, del, span[style*='color'], [data-testid='stIconMaterial']"
HOSTILE_WORDS = re.compile(r"bold|red|8798|evil|heading|quoted|home|\^")


def test_in_a_browser_a_blank_line_file_name_renders_no_image_and_no_markdown(db, tmp_path):
    """Chromium against `streamlit run`: a PDF named `x\\r\\r![y](https:127.0.0.1:8798)` and captions full of
    Markdown, on Review (the page dialog's "Drawn from"), in the find-and-replace preview, on Home, Ingest and
    Export. Nothing is fetched from the name's address, no image or Markdown is made of it, and it reads as
    one line with its line breaks shown as ␍."""
    pytest.importorskip("playwright.sync_api")
    if not os.path.exists(CHROMIUM):
        pytest.skip("needs Debian's chromium (apt-get install chromium)")
    from test_app_pictures import with_pictures

    name = BLANK_NAMES[0]
    with_pictures(db, pages=2)
    (tmp_path / "archive").mkdir()
    pdf = repeated_scan_pdf(tmp_path / "archive" / f"{name}.pdf", 2)  # there while Review draws it
    with Manifest(db) as manifest:
        manifest.conn.execute("UPDATE documents SET path = ?, size = ?", (str(pdf), pdf.stat().st_size))
        rows = list(manifest.picture_rows(order="x.page, x.number"))
        manifest.set_picture_captions([(row["id"], FIND_CAPTIONS[i % len(FIND_CAPTIONS)] + " lady")
                                       for i, row in enumerate(rows)])
        paths.add_source(manifest, tmp_path / name)
    finished_job(db, "export", "done", "2 images", {"out": str(tmp_path / f"{name}.zip")})
    seen = {}
    with streamlit_server(tmp_path / "streamlit.log", {"CURATION_DB": str(db)}) as (_, port), chromium() as browser:
        url = f"http://127.0.0.1:{port}"
        page, fetched = watched_page(browser)

        def look(where: str, scope) -> None:
            hostile = page.locator(MARKDOWN).filter(has_text=re.compile("127\\.0\\.0\\.1:\u2060?8798|evil"))
            seen[where] = {"text": scope.inner_text().replace("\u2060", ""),
                           "hostile": hostile.count(),  # Markdown that shows a hostile text
                           "made": hostile.locator(NEVER_MADE).count(),  # and what Markdown made in it
                           "styled": hostile.locator(STYLED).evaluate_all("es => es.map(e => e.textContent)"),
                           "markdown images": page.locator(f"{MARKDOWN} img").count(),
                           "images": page.locator("img").evaluate_all("images => images.map(i => i.src)")}

        page.goto(f"{url}/review")
        settle(page)
        page.locator("[class*='st-key-review-card-']").first.get_by_role("button", name="Open").click()
        page.get_by_role("dialog").wait_for()
        settle(page)
        look("review", page.get_by_role("dialog"))
        page.goto(f"{url}/review?view=Pictures")
        settle(page)
        page.get_by_role("radio", name=re.compile("Find and replace")).click()
        settle(page)
        page.get_by_label("Find", exact=True).fill("lady")
        page.get_by_role("button", name=re.compile("Preview")).click()
        page.locator("[data-testid='stTable']").wait_for()
        settle(page)
        look("find and replace", page.locator("[data-testid='stTable']"))
        pdf.unlink()  # gone: Home warns that it is no longer where it was ingested
        for where, path in (("home", ""), ("ingest", "ingest"), ("export", "export")):
            page.goto(f"{url}/{path}")
            settle(page)
            look(where, page.locator("[data-testid='stMain']"))
    one_line = pictured(name)  # x␍␍![y](https:127.0.0.1:8798)
    assert not [request for request in fetched if TRACKER in request or "evil" in request], fetched
    for where, found in seen.items():
        assert found["markdown images"] == 0, where  # no image in any Markdown
        assert not [src for src in found["images"] if TRACKER in src or "evil" in src], (where, found["images"])
        assert found["hostile"] and found["made"] == 0, where  # no image, link, heading, math...
        made_of_it = [text for text in found["styled"]  # the page's own bold around the whole name is fine
                      if HOSTILE_WORDS.search(text) and one_line not in text.replace("\u2060", "")]
        assert not made_of_it, (where, made_of_it)
        assert one_line in found["text"], (where, found["text"])  # one line, its breaks shown as ␍
    assert f"Drawn from {pictured(tmp_path / 'archive' / name)}.pdf" in seen["review"]["text"]
    table = seen["find and replace"]["text"]
    assert '"quoted"␊=x lady' in table and "**bold** :red[red] $x^2$" in table and "# heading | cell" in table


def allowed_hostile_folder(db, tmp_path, tracker: str):
    """An allowed folder (as `python -m curation folders add` adds one) whose name closes a code span and
    opens an image: the Vet scanner listed it in plain backticks."""
    folder = tmp_path / f"q` ![i]({tracker}) `"
    folder.mkdir()
    with Manifest(db, create=True) as manifest:
        paths.add_root(manifest, folder)
    return folder


def test_vet_scanner_lists_allowed_folders_literally(db, models, demo_model, tmp_path):
    (models / "demo-vit").symlink_to(demo_model, target_is_directory=True)
    folder = allowed_hostile_folder(db, tmp_path, f"https:{TRACKER}")
    at = ran(page("pages/vet_scanner.py"))
    listed = [str(caption.value) for caption in at.caption if str(caption.value).startswith("Allowed folders")]
    assert len(listed) == 2  # the Folder tab's and the Train tab's
    for body in listed:
        assert code_span(folder) in body, body  # whole, in a fence its backticks cannot close
        assert not interpreted(body), body
        assert not re.search(r"(?<!\\)!\[", CODE_SPAN.sub("", body)), body  # no image outside a code span


def test_in_a_browser_the_vet_scanners_folder_list_fetches_nothing(db, models, demo_model, tmp_path):
    """Chromium against `streamlit run`: the Folder and Train tabs list an allowed folder named
    ``q` ![i](https:127.0.0.1:PORT) ` ``; nothing listens there but a socket that counts who connects, and no one
    may (an image's https: address, unlike the page's http:, names a host of its own)."""
    import socket
    import threading

    pytest.importorskip("playwright.sync_api")
    if not os.path.exists(CHROMIUM):
        pytest.skip("needs Debian's chromium (apt-get install chromium)")
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    address, hits, done = f"127.0.0.1:{listener.getsockname()[1]}", [], threading.Event()

    def count():
        while not done.is_set():
            try:
                hits.append(listener.accept()[0].close())
            except OSError:  # the timeout: look again
                pass

    threading.Thread(target=count, daemon=True).start()
    (models / "demo-vit").symlink_to(demo_model, target_is_directory=True)
    folder = allowed_hostile_folder(db, tmp_path, f"https:{address}")
    env = {"CURATION_DB": str(db), "VET_MODELS_DIR": str(models)}
    try:
        with streamlit_server(tmp_path / "streamlit.log", env) as (_, port), chromium() as browser:
            page_, fetched = watched_page(browser)
            page_.goto(f"http://127.0.0.1:{port}/vet_scanner")
            settle(page_)
            texts, images = [], []
            for tab in ("Folder on the server (batch)", "Train a triage head"):
                page_.get_by_role("tab", name=tab).click()
                settle(page_)
                page_.wait_for_timeout(500)
                texts.append(page_.locator("[data-testid='stMain']").inner_text())
                images += page_.locator("img").evaluate_all("images => images.map(i => i.src)")
            page_.screenshot(path=str(tmp_path / "vet-scanner-train.png"))
    finally:
        done.set()
        listener.close()
    assert not [url for url in fetched + images if address in url], fetched + images
    assert not hits, len(hits)
    assert all(str(folder) in text.replace("\u2060", "") for text in texts), texts  # listed, as it is written
