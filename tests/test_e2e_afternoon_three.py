"""A curator's afternoon, part three, in a real browser (Chromium at 1440 x 900): a filter of Review's
Pictures view is kept in the address by its name, so a link shared with an old count, or a reload after a
decision changed the count, opens on the same filter; drawing mode ends on the next picture and when the view is
opened again; a tall picture is whole on the screen; every figure of the Export page is the finished ZIP's (the
size within 6 %) and none is cut off; a kind marked in the large view is suggested for the like pictures, saying
so; a page kept at the edge shows the picture that decides it outlined."""

import contextlib
import csv
import io
import json
import os
import re
import urllib.parse
import zipfile

import pytest

from curation import Manifest, ingest
from curation.sources.synthetic import PageSpec, write_pdf
from server_support import CHROMIUM, chromium, go, no_exception, settle, streamlit_server
from test_e2e_afternoon_two import export_with_minimum, metric, scanned_archive, wait_job

playwright = pytest.importorskip("playwright.sync_api")
pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM),
                                reason="needs Debian's chromium (apt-get install chromium)")


@pytest.fixture
def page():
    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1440, "height": 900})
        page.set_default_timeout(60_000)
        yield page


def pictured_archive(tmp_path):
    """A folder with one PDF of two engravings."""
    archive = tmp_path / "scans"
    write_pdf(archive / "issue-1.pdf", [PageSpec(kind="engraving", seed=n, dpi=100, inches=(4.0, 5.0))
                                        for n in range(2)])
    return archive


@contextlib.contextmanager
def served(tmp_path, db):
    with streamlit_server(tmp_path / "streamlit.log", {"CURATION_DB": str(db), "CURATION_ROOTS": ""}) as (_, port):
        yield port


def first_picture_opened(page, port):
    """Review's Pictures view, its first picture opened large (by its key); the large view."""
    go(page, f"http://127.0.0.1:{port}", "review?view=Pictures&pic_decision=all")
    page.locator("[class*='st-key-picture-card-']").first.wait_for()
    settle(page)
    page.keyboard.press("Enter")
    dialog = page.get_by_role("dialog")
    dialog.get_by_text("Centred on this picture").wait_for()
    settle(page)
    return dialog


def address_filter(page) -> str | None:
    values = urllib.parse.parse_qs(urllib.parse.urlparse(page.url).query).get("pic_decision")
    return values[0] if values else None


def pressed_filter(page) -> str:
    return page.locator("[class*='st-key-pic_decision'] button[aria-checked='true']").inner_text()


def test_a_filter_link_with_an_old_count_survives_a_reload(tmp_path, page):
    db = tmp_path / "data" / "manifest.sqlite"
    with Manifest(db) as manifest:
        ingest(manifest, [pictured_archive(tmp_path)], workers=1)
    with served(tmp_path, db) as port:
        url = f"http://127.0.0.1:{port}"
        go(page, url, "review?view=Pictures&pic_decision=Excluded+%C2%B7+87")  # shared when 87 were excluded
        assert pressed_filter(page).startswith("Excluded · ")
        assert address_filter(page) == "excluded"
        page.reload()
        settle(page)
        assert pressed_filter(page).startswith("Excluded · ")
        assert address_filter(page) == "excluded"
        page.locator("[class*='st-key-pic_decision'] button").filter(has_text="All pictures").click()
        settle(page)
        assert address_filter(page) is None  # the default leaves the address clean


def heading(dialog) -> str:
    """"issue-1.pdf, page 1 · picture 1 of 2 · 6.1 sq in": which picture the large view shows."""
    return dialog.locator("[data-testid='stMarkdown']").filter(has_text=re.compile(r"picture \d+ of")).first.inner_text()


def drawing_mode(dialog) -> str | None:
    """The drawing mode pressed in the large view, or None."""
    pressed = dialog.locator("[class*='st-key-pictures_click'] button[aria-checked='true']")
    return pressed.inner_text() if pressed.count() else None


def test_drawing_mode_ends_on_the_next_picture_and_when_the_view_is_opened_again(tmp_path, page):
    db = tmp_path / "data" / "manifest.sqlite"
    with Manifest(db) as manifest:
        ingest(manifest, [pictured_archive(tmp_path)], workers=1)
        assert len(list(manifest.picture_rows())) >= 2
    with served(tmp_path, db) as port:
        dialog = first_picture_opened(page, port)
        first = heading(dialog)
        dialog.get_by_text("Fix this picture's box").click()
        dialog.get_by_text("white corner handles").wait_for()
        settle(page)
        assert drawing_mode(dialog) == "Fix this picture's box"

        page.keyboard.press("ArrowRight")  # the next picture: a drag there must not redraw its box
        settle(page)
        assert heading(dialog) != first
        assert drawing_mode(dialog) is None
        dialog.get_by_text("Pick a way of drawing").wait_for()

        dialog.get_by_text("Add a missed picture").click()
        settle(page)
        assert drawing_mode(dialog) == "Add a missed picture"
        page.keyboard.press("Escape")
        page.get_by_role("dialog").wait_for(state="detached")
        settle(page)
        page.keyboard.press("Enter")  # opened again
        dialog = page.get_by_role("dialog")
        dialog.get_by_text("Centred on this picture").wait_for()
        settle(page)
        assert drawing_mode(dialog) is None
        dialog.get_by_text("Pick a way of drawing").wait_for()


NEWSPAPER = (11.0, 22.0)  # inches: 1584 x 3168 reference pixels
TALL = (700, 1900, 900, 2400)  # a tall cut low on the page, 1.4 x 3.5 inches: kept (the cutoff is 2 sq in)


def test_a_tall_picture_is_whole_on_a_1440_by_900_screen_fitted_and_zoomed_out(tmp_path, page):
    """The large view's page starts under one row of controls and is never taller than the screen has room
    for, so a tall picture's whole box is in the viewport when it opens, a step out, and at the whole page."""
    db = tmp_path / "data" / "manifest.sqlite"
    archive = tmp_path / "scans"
    write_pdf(archive / "gazette.pdf", [PageSpec(kind="text", seed=2, dpi=72, inches=NEWSPAPER)])
    with Manifest(db) as manifest:
        ingest(manifest, [archive], workers=1)
        row = next(manifest.pages())
        area = (TALL[2] - TALL[0]) * (TALL[3] - TALL[1]) / 144 / 144
        manifest.set_pictures(row["doc_id"], 0, [(*TALL, area)])
    with served(tmp_path, db) as port:
        dialog = first_picture_opened(page, port)
        levels = []
        for step in range(3):  # fitted, a step out, the whole page
            page.wait_for_timeout(800)  # the new frame drawn
            image = dialog.frame_locator("iframe").locator("img")
            image.wait_for()
            shown = image.bounding_box()
            assert shown["y"] >= 0 and shown["y"] + shown["height"] <= 900, (step, shown)
            if step == 0:
                assert shown["y"] < 360, shown  # one row of controls above the page
            levels.append(dialog.locator("[class*='st-key-picture-zoom-bar'] [data-testid='stText']").inner_text())
            out = dialog.locator("[class*='st-key-picture-zoom-out'] button").first
            if out.is_disabled():
                break
            out.click()
            settle(page)
        assert levels[0].startswith("fitted") and levels[-1] == "1×", levels
        assert page.evaluate("window.scrollY") == 0


# -- every figure of the Export page against the finished ZIP ----------------------------------------------------

PLATE = PageSpec(kind="engraving", seed=12, dpi=150, inches=(6.0, 8.0))  # reprinted: a near-duplicate left out
UNITS = {"bytes": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9}


def size_of(words: str) -> float:
    """Bytes of the page's "4.3 MB"."""
    number, unit = re.fullmatch(r"([\d,.]+) (bytes|KB|MB|GB)", words.strip()).groups()
    return float(number.replace(",", "")) * UNITS[unit]


def number_in(pattern: str, text: str) -> int:
    found = re.search(pattern, text)
    assert found, (pattern, text)
    return int(found[1].replace(",", ""))


CUT_OFF_JS = """selector => [...document.querySelectorAll(selector)].flatMap(figure =>
    [figure, ...figure.querySelectorAll('*')].filter(e => e.clientWidth > 0 && e.scrollWidth > e.clientWidth + 1)
        .map(e => `${figure.innerText} (${e.tagName}: ${e.scrollWidth} > ${e.clientWidth})`))"""


def cut_off(page, selector: str) -> list[str]:
    """The texts under `selector` that do not fit their box (cut, or ending in "…")."""
    return page.evaluate(CUT_OFF_JS, selector)


PREVIEW_JS = """() => {
    const cards = [...document.querySelectorAll("[data-testid='stMain'] [data-testid='stColumn']")]
        .filter(column => column.querySelector("[data-testid='stImage']")  // a card: the innermost column
                          && !column.querySelector("[data-testid='stColumn']")
                          && !column.closest("[data-testid='stExpander']"));
    return cards.map(card => ({
        name: [...card.querySelectorAll("[data-testid='stCaptionContainer'] code")].map(c => c.innerText)
            .find(text => text.endsWith('.jpg')),
        drawn: [...card.querySelectorAll("[data-testid='stImage'] img")]
            .every(i => i.complete && i.naturalWidth > 0)}));
}"""


def preview_screens(page) -> list[tuple[str, list[str]]]:
    """The Export preview as a person pages through it with its Next page button: each screen's heading
    ("Images 13–24 of 29, ...") and the file names of the images it draws, each image loaded."""
    screens = []
    while True:
        page.wait_for_function("() => [...document.querySelectorAll(\"[data-testid='stImage'] img\")]"
                               ".every(i => i.complete)")
        heading = page.get_by_text(re.compile(r"^Images [\d,]+–[\d,]+ of [\d,]+, exactly as exported")).inner_text()
        cards = page.evaluate(PREVIEW_JS)
        assert all(card["drawn"] for card in cards), cards
        screens.append((heading, [card["name"] for card in cards]))
        following = page.get_by_role("button", name="Next page")
        if not following.count() or following.is_disabled():
            return screens
        following.click()
        settle(page)


def test_every_figure_of_the_export_page_is_the_finished_zips_and_none_is_cut_off(tmp_path, page):
    """Pictures scanned at 72 to 200 dpi, one plate reprinted, a 512 px minimum source size: the page's Images,
    Estimated size (within 6 %), Enlarged, Near-duplicates left out, the images left out under the minimum, the
    preview's count, the button's and the download's size are what the ZIP holds, and every figure's label and
    value fits its box at 1440 x 900. The preview draws twelve images a screen, and paging through it with Next
    page reaches every image the ZIP holds, once each, in the order written."""
    db = tmp_path / "data" / "manifest.sqlite"
    archive = tmp_path / "data" / "archive"
    scanned_archive(archive, (72, 110, 150, 200, 200), pages=5)
    write_pdf(archive / "reprint.pdf", [PLATE, PLATE])
    with Manifest(db) as manifest:
        ingest(manifest, [archive], workers=1)
        manifest.rule, manifest.threshold = "sigma", 0.0  # every page kept
    with served(tmp_path, db) as port:
        export_with_minimum(page, port, 512)
        main = page.locator("[data-testid='stMain']")
        text = main.inner_text()
        shown = {label: metric(page, label) for label in ("Images", "Estimated size", "Near-duplicates left out",
                                                            "Enlarged")}
        too_small = number_in(r"([\d,]+) images? left out: their source is under", text)
        written_words = number_in(r"minimum source size\. ([\d,]+) images? written", text)
        preview = number_in(r"Images 1–\d+ of ([\d,]+), exactly as exported", text)
        left_out_listed = number_in(r"([\d,]+) images? left out of the ZIP, and why", text)
        button = page.get_by_role("button", name=re.compile(r"^Export [\d,]+ images"))
        on_button = number_in(r"Export ([\d,]+) images", button.inner_text())
        assert cut_off(page, "[data-testid='stMetric']") == []
        assert cut_off(page, "[data-testid='stCaptionContainer']") == []
        screens = preview_screens(page)
        button.click()
        wait_job(db, "export")
        page.get_by_role("button", name=re.compile(r"^Download lora\.zip")).wait_for()
        settle(page)
        download = page.get_by_role("button", name=re.compile(r"^Download lora\.zip")).inner_text()
        finished = page.locator("[data-testid='stAlertContentSuccess']").inner_text()
        no_exception(page)
    zip_path = tmp_path / "data" / "exports" / "lora.zip"
    with zipfile.ZipFile(zip_path) as zipped:
        images = [name for name in zipped.namelist() if name.endswith(".jpg")]
        rows = list(csv.DictReader(io.StringIO(zipped.read("manifest.csv").decode())))
        record = json.loads(zipped.read("export.json"))
    written, size = len(images), zip_path.stat().st_size
    assert len(rows) == written > 12  # more than the estimate samples: the size is an estimate
    assert shown["Images"] == f"{written:,}" == f"{written_words:,}" == f"{preview:,}" == f"{on_button:,}"
    assert abs(size_of(shown["Estimated size"]) - size) <= 0.06 * size, (shown["Estimated size"], size)
    assert shown["Enlarged"] == f"{record['sources']['enlarged_images']:,}"
    assert too_small == left_out_listed == len(record["sources"]["too_small"]) > 0
    assert shown["Near-duplicates left out"] == f"{len(record['duplicates']['left_out']):,}" == "1"
    assert abs(size_of(re.search(r"\((.+)\)$", download)[1]) - size) <= 0.05e6  # "Download lora.zip (4.3 MB)"
    assert f"{written} images, {size / 1e6:.1f} MB" in finished
    assert [len(names) for _, names in screens] == [12] * (written // 12) + [written % 12] * (written % 12 > 0)
    first = 1
    for heading, names in screens:
        assert heading.startswith(f"Images {first}–{first + len(names) - 1} of {written}, "), heading
        first += len(names)
    assert [name for _, names in screens for name in names] == [name.rsplit("/", 1)[-1] for name in images]


# -- kinds learned per archive -----------------------------------------------------------------------------------


def kind_box(dialog) -> str:
    """What the large view's Kind box reads; it fits the box whole."""
    box = dialog.locator("[class*='st-key-picture-kind-'] [data-testid='stSelectbox'] input")
    assert box.evaluate("e => e.scrollWidth <= e.clientWidth + 1"), box.input_value()
    return box.input_value()


def test_a_kind_marked_in_the_large_view_is_suggested_for_the_like_pictures_and_says_so(tmp_path, page):
    """Four pictures of one look and others of another (their embeddings stored as the picture job would): two of
    the four marked halftone, the third marked in the browser says one like it is now suggested halftone, and the
    fourth's Kind box says where its suggestion came from; a picture of the other look, with no kind suggested,
    says in words, whole in its box, that its caption takes the export's class word."""
    import numpy as np
    from curation.manifest import picture_embeddings
    from curation.views import picture_views as pv

    db = tmp_path / "data" / "manifest.sqlite"
    archive = tmp_path / "scans"
    write_pdf(archive / "issue-1.pdf", [PageSpec(kind="engraving", seed=n, dpi=100, inches=(4.0, 5.0))
                                        for n in range(5)])
    with Manifest(db) as manifest:
        ingest(manifest, [archive], workers=1)
        order = [row["id"] for row in pv.screen(manifest, None, pv.PictureFilter("all"), limit=100).rows]
        assert len(order) >= 5
        looks = {1: np.random.default_rng(1).normal(size=picture_embeddings.DIMENSIONS),
                 2: np.random.default_rng(2).normal(size=picture_embeddings.DIMENSIONS)}
        rows = picture_embeddings.missing(manifest.conn)
        with manifest.transaction():
            picture_embeddings.store(manifest.conn, [
                (row["id"], (row["bx0"], row["by0"], row["bx1"], row["by1"]),
                 looks[1 if row["id"] in order[:4] else 2] + 0.3 * np.random.default_rng(row["id"]).normal(
                     size=picture_embeddings.DIMENSIONS)) for row in rows])
        manifest.set_picture_kinds([(order[0], "halftone"), (order[1], "halftone")])
    with served(tmp_path, db) as port:
        dialog = first_picture_opened(page, port)
        page.keyboard.press("ArrowRight")
        settle(page)
        page.keyboard.press("ArrowRight")  # the third picture, not marked yet
        settle(page)
        assert "Halftone (suggested: like 2 you marked)" in kind_box(dialog)
        dialog.locator("[class*='st-key-picture-kind-'] [data-testid='stSelectbox']").get_by_role(
            "button", name="Open").click()
        page.get_by_role("option", name="Halftone", exact=True).click()
        page.get_by_text("1 like it is now suggested halftone").first.wait_for()  # the toast
        settle(page)
        page.keyboard.press("ArrowRight")
        settle(page)
        assert "Halftone (suggested: like 3 you marked)" in kind_box(dialog)
        page.keyboard.press("ArrowRight")
        settle(page)
        # Another look, and no picture job has run: no kind suggested, and the box says what the caption gets.
        assert kind_box(dialog) == "None suggested: choose one, or the caption uses the export's class word"
        no_exception(page)


# -- Threshold's pages at the edge ---------------------------------------------------------------------------------

PIXELS_JS = """([width, points]) => {
    const img = [...document.querySelectorAll("[data-testid='stMain'] img")].find(i => i.naturalWidth === width);
    if (!img) return null;
    const canvas = document.createElement('canvas');
    canvas.width = img.naturalWidth; canvas.height = img.naturalHeight;
    const context = canvas.getContext('2d');
    context.drawImage(img, 0, 0);
    return points.map(([x, y]) => [...context.getImageData(x, y, 1, 1).data.slice(0, 3)]);
}"""


def test_a_page_kept_at_the_edge_shows_the_picture_that_decides_it_outlined(tmp_path, page):
    """A blank page kept for "5.8 sq in": its thumbnail at the edge, as the browser shows it, has that picture's
    box outlined and not the small one beside it."""
    import io as bytes_io

    from PIL import Image

    from curation.runs import sample

    white = bytes_io.BytesIO()
    Image.new("RGB", (306, 396), "white").save(white, "JPEG", quality=95)  # a page's thumbnail, a quarter across
    db = tmp_path / "data" / "manifest.sqlite"
    with Manifest(db) as manifest:
        (doc,) = sample.fill_manifest(manifest, documents=1, pages=1, sigmas=[30], thumbnails=[white.getvalue()])
        manifest.set_pictures(doc, 0, [(100, 100, 500, 400, 5.8), (800, 1000, 1000, 1200, 1.9)])
        manifest.conn.execute("UPDATE pages SET picture_area = 5.8, ink_tone = 0.6")
        manifest.conn.commit()
    with served(tmp_path, db) as port:
        go(page, f"http://127.0.0.1:{port}", "threshold")
        page.get_by_role("heading", name="At the edge").wait_for()
        page.get_by_text(re.compile(r"5\.8 sq in")).first.wait_for()
        settle(page)
        edges = [(75, 26), (26, 60), (124, 60)]  # the deciding picture's box: x 25-125, y 25-100
        inside = [(200, 250), (250, 275)]  # the small one's
        pixels = page.evaluate(PIXELS_JS, [306, edges + inside])
        no_exception(page)
    assert pixels is not None, "no thumbnail at the edge"
    orange = [red > 120 > blue for red, _, blue in pixels]  # OUTLINE_COLOUR, softened by JPEG
    assert orange == [True] * len(edges) + [False] * len(inside), pixels


# -- Ingest's Documents table ---------------------------------------------------------------------------------------

COLUMN = 400  # pixels: Streamlit's "large" column, the folder's
TEXT_WIDTH_JS = """text => {
    const context = document.createElement('canvas').getContext('2d');
    context.font = `14px ${getComputedStyle(document.body).fontFamily}`;  // the table's cells: 0.875rem
    return context.measureText(text).width;
}"""


def test_the_ingest_page_shows_a_long_folders_end_whole_and_the_pages_the_picture_job_embedded_from(tmp_path,
                                                                                                        page):
    """A document in a folder whose path is longer than the folder column: the table shows the folder's end (what
    tells it apart), whole within the column, not its head cut at the column's edge ("…/uploac"). Ingested with
    the picture job on, its workers cut the pictures' inputs, so the job reads no page: its outcome still names
    the pages its pictures are on ("2 pictures embedded from 2 pages", not "from 0 pages")."""
    from curation.runs.embed import InProcessNetwork, embed_pictures
    from curation.runs.jobs import plural
    from curation.views.jobs import FOLDER_CHARS

    db = tmp_path / "data" / "manifest.sqlite"
    archive = tmp_path / "data" / "uploads" / "a-rather-long-folder-name-for-the-harpers-bazar-scans"
    write_pdf(archive / "issue-1.pdf", [PageSpec(kind="engraving", seed=n, dpi=72, inches=(4.0, 5.0))
                                        for n in range(2)])
    with Manifest(db) as manifest:
        manifest.picture_job = True
        ingest(manifest, [archive], workers=1)
        cut = manifest.conn.execute("SELECT COUNT(*) FROM picture_inputs").fetchone()[0]
        report = embed_pictures(manifest, workers=1, network=InProcessNetwork)
        pages = manifest.conn.execute("SELECT COUNT(DISTINCT page) FROM pictures WHERE NOT deleted").fetchone()[0]
    assert len(str(archive)) > FOLDER_CHARS
    assert report.embedded == cut >= pages > 0 and not report.failed  # every input cut at ingest: no page read
    with served(tmp_path, db) as port:
        go(page, f"http://127.0.0.1:{port}", "ingest")
        page.locator("[data-testid='stDataFrame'] td").first.wait_for(state="attached")  # the grid's hidden cells
        settle(page)
        cells = page.evaluate("() => [...document.querySelectorAll(\"[data-testid='stDataFrame'] td\")]"
                              ".map(cell => cell.innerText)")
        folder = next(cell for cell in cells if "harpers" in cell)
        width = page.evaluate(TEXT_WIDTH_JS, folder)
        outcome = page.locator("[data-testid='stAlertContentSuccess']").filter(
            has_text="Pictures embedded").inner_text()
    assert folder == "…/a-rather-long-folder-name-for-the-harpers-bazar-scans"
    assert width <= COLUMN - 2 * 8, width  # the cell's padding on each side
    said = f"UTC: {plural(report.embedded, 'picture')} embedded from {plural(pages, 'page')}, "
    assert re.search(rf"{said}[\d.]+ pictures/s on the [CG]PU\.$", outcome), outcome
