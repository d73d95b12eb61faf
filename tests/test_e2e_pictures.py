"""Review's Pictures view in a real browser (Chromium at 1440 x 900, as a curator's laptop): a dense grid of
the crops, at least six cards a row beside the sidebar, each card's controls inside it, and the large view
where a drag on the page redraws a picture's box (or moves one of its corners); the keys of Review's grids work
on it."""

import base64
import pathlib
import io
import os
import zipfile

import cv2
import numpy as np
import pymupdf
import pytest
from PIL import Image

from curation import Manifest, views
from curation.export import ExportSettings, export
from curation.sources.synthetic import PageSpec, jpeg_bytes, page_image
from curation.views import picture_views as pv
from conftest import line_drawing
from server_support import CHROMIUM, go, no_exception, settle, streamlit_server
from test_e2e_walkthrough import cli
from test_export_crop import blurred_psnr

playwright = pytest.importorskip("playwright.sync_api")
pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM),
                                reason="needs Debian's chromium (apt-get install chromium)")

CARDS = """() => [...document.querySelectorAll("[class*='st-key-picture-card-']")].map(card => {
    const box = card.getBoundingClientRect(), buttons = [...card.querySelectorAll("button")];
    return {top: Math.round(box.top), height: Math.round(box.height), width: box.width,
            fits: buttons.every(b => b.getBoundingClientRect().right <= box.right + 0.5),
            image: (card.querySelector("img") || {width: 0}).width};
})"""

def crops_shown(count: int) -> str:
    """The first `count` cards' pictures are loaded."""
    return """() => {
        const crops = [...document.querySelectorAll("[class*='st-key-picture-card-'] img")].slice(0, %d);
        return crops.length == %d && crops.every(img => img.complete && img.naturalWidth > 0);
    }""" % (count, count)


FIRST_CROPS_SHOWN = crops_shown(6)


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
        page.locator("[class*='st-key-picture-card-']").first.get_by_role("button", name="Exclude").click()
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
        dialog.get_by_text("Centred on this picture").wait_for()  # it opens on the picture; out to the whole page
        while not dialog.locator(".st-key-picture-zoom-out button").first.is_disabled():
            dialog.locator(".st-key-picture-zoom-out button").first.click()
            settle(page)
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
        drag(page, dialog, (0.8, 0.8), (0.801, 0.95))  # a line, no box: said in the large view, nothing saved
        dialog.get_by_text("No box drawn: a picture's box needs two corners apart").wait_for()
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


DPI = 150
CUT = (300, 420, DPI)  # (top, left, side) in the scan's pixels: a one-square-inch cut on a page of text

# The first card's image as the browser received it (base64), its size on screen, and its size under the mouse.
FIRST_CARD = """async () => {
    const img = document.querySelector("[class*='st-key-picture-card-'] img");
    const bytes = new Uint8Array(await (await fetch(img.src)).arrayBuffer());
    let text = "";
    for (const byte of bytes) text += String.fromCharCode(byte);
    return {jpeg: btoa(text), natural: img.naturalWidth, shown: img.getBoundingClientRect().width};
}"""


def one_cut_pdf(path) -> pathlib.Path:
    """A 6 x 8 inch scanned page of text with one pen drawing of one square inch set into it."""
    scan = page_image(PageSpec(kind="text", seed=3, dpi=DPI, inches=(6.0, 8.0), uneven=False))
    top, left, side = CUT
    scan[top - 20:top + side + 20, left - 20:left + side + 20] = 235
    scan[top:top + side, left:left + side] = np.minimum(235, line_drawing(side, np.random.default_rng(4)))[..., None]
    doc = pymupdf.open()
    page = doc.new_page(width=432, height=576)
    page.insert_image(page.rect, stream=jpeg_bytes(scan))
    path.parent.mkdir(parents=True, exist_ok=True)
    doc.save(path)
    return path


def sharpness(image: Image.Image) -> float:
    return float(cv2.Laplacian(np.asarray(image.convert("L"), np.float32), cv2.CV_32F).var())


def test_a_one_square_inch_cut_has_a_sharp_card_that_is_the_exported_picture(tmp_path, chromium_page):
    pdf = one_cut_pdf(tmp_path / "archive" / "cut.pdf")
    db = tmp_path / "data" / "manifest.sqlite"
    cli("ingest", pdf.parent, "--db", db, "--workers", 1, "-q")
    with Manifest(db) as manifest:
        row = next(manifest.pages())
        top, left, side = (round(v * 144 / DPI) for v in CUT)
        if not manifest.pictures(row["doc_id"], 0):  # the finder's business: the card is the same either way
            manifest.add_picture(row["doc_id"], 0, (left, top, left + side, top + side))
        manifest.picture_area_min = 0.5  # a one-square-inch cut is exported
        # The picture network (the default) also marks a few letters of the text here: deleted, as a curator would.
        picture, *marks = sorted(manifest.picture_rows(), key=lambda row: -row["box_area"])
        for mark in marks:
            manifest.delete_picture(mark["id"])
        assert 0.6 < picture["box_area"] < 1.3  # the ink of a one-inch drawing
        export(manifest, tmp_path / "lora.zip", ExportSettings(crop="pictures"))
        thumb = views.thumbnails(manifest, [(row["doc_id"], 0)])[(row["doc_id"], 0)]
    with zipfile.ZipFile(tmp_path / "lora.zip") as z:
        (name,) = [n for n in z.namelist() if n.endswith("_pic1.jpg")]
        exported = Image.open(io.BytesIO(z.read(name))).convert("RGB")
    env = {"CURATION_DB": str(db), "CURATION_ROOTS": str(pdf.parent)}
    with streamlit_server(tmp_path / "streamlit.log", env) as (_, port):
        page = chromium_page
        go(page, f"http://127.0.0.1:{port}", "review?view=Pictures")
        page.wait_for_function(crops_shown(1))
        first = page.evaluate(FIRST_CARD)
        card = Image.open(io.BytesIO(base64.b64decode(first["jpeg"]))).convert("RGB")
        assert first["natural"] >= first["shown"]  # never enlarged on the card: sharp at its size
        # Its pixels are the exported picture's, scaled to the card.
        assert blurred_psnr(card, exported.resize(card.size, Image.Resampling.LANCZOS)) > 30
        # What a card was before, cut from the page's thumbnail: a blur by the side of it.
        old = Image.open(io.BytesIO(pv.crop(thumb, [picture[k] for k in ("bx0", "by0", "bx1", "by1")], 432 * 2,
                                            576 * 2, side=card.width)))
        assert sharpness(card) > 3 * sharpness(old)
        image = page.locator("[class*='st-key-picture-card-'] img").first
        width = """() => document.querySelector("[class*='st-key-picture-card-'] img")
            .getBoundingClientRect().width"""
        image.hover()  # a larger view on hover
        page.wait_for_function(f"() => ({width})() > 1.8 * {first['shown']}")
        page.mouse.move(5, 5)
        page.wait_for_function(f"() => ({width})() < 1.1 * {first['shown']}")
        page.keyboard.down(" ")  # and while Space is held, on the focused card
        page.wait_for_function(f"() => ({width})() > 1.8 * {first['shown']}")
        page.keyboard.up(" ")
        page.wait_for_function(f"() => ({width})() < 1.1 * {first['shown']}")
        no_exception(page)


def exported_captions(db, path) -> dict[str, str]:
    """{picture file: caption} of an export of the pictures, as a trainer reads them."""
    with Manifest(db) as manifest:
        export(manifest, path, ExportSettings(crop="pictures", size=64, template="{trigger}, {best_caption}"))
    with zipfile.ZipFile(path) as z:
        return {n: z.read(n).decode().strip() for n in z.namelist() if "_pic" in n and n.endswith(".txt")}


def test_no_legend_is_kept_in_the_export_and_drawing_stops_on_the_next_picture(tmp_path, archive, chromium_page):
    db = tmp_path / "data" / "manifest.sqlite"
    cli("ingest", archive, "--db", db, "--workers", 1, "-q")
    with Manifest(db) as manifest:
        first, second = list(manifest.picture_rows(order="d.path, x.page, x.number", limit=2))
        manifest.conn.execute("UPDATE pictures SET legend = 'ADVERTISEMENTS.' WHERE id = ?", (first["id"],))
        manifest.conn.commit()
    assert "ohwx, ADVERTISEMENTS." in exported_captions(db, tmp_path / "before.zip").values()
    env = {"CURATION_DB": str(db), "CURATION_ROOTS": str(archive)}
    with streamlit_server(tmp_path / "streamlit.log", env) as (_, port):
        page = chromium_page
        go(page, f"http://127.0.0.1:{port}", "review?view=Pictures")
        page.wait_for_function(crops_shown(2))
        page.keyboard.press("Enter")  # the first picture, large
        dialog = page.get_by_role("dialog")
        dialog.get_by_role("button", name="No legend").click()  # the legend is wrong
        page.get_by_text("is switched off").first.wait_for()
        settle(page)
        dialog.get_by_text("Printed legend, switched off").wait_for()  # kept, and shown
        assert "ohwx, ADVERTISEMENTS." not in exported_captions(db, tmp_path / "after.zip").values()

        dialog.get_by_text("Fix this picture's box").click()
        dialog.get_by_text("Drag from one corner of the picture").wait_for()
        settle(page)
        drag(page, dialog, (0.1, 0.1), (0.2, 0.18))  # a box under the picture cutoff: the picture drops out
        page.get_by_text("excluded now, no longer kept").first.wait_for()  # and the toast says so
        settle(page)
        dialog.locator("iframe").evaluate("frame => frame.contentWindow.focus()")  # where a drag may leave it
        page.keyboard.press("ArrowRight")  # the next picture, heard in the page's frame: the drawing mode is left
        where = f"{pathlib.Path(second['doc']).name}, page {second['page'] + 1} · picture {second['number']} of"
        dialog.get_by_text(where).wait_for()
        settle(page)
        assert dialog.get_by_text("Drag from one corner of the picture").count() == 0
        drag(page, dialog, (0.3, 0.3), (0.5, 0.5))  # a drag now draws nothing
        settle(page)
        no_exception(page)
        with Manifest(db) as manifest:
            assert manifest.picture(second["id"])["fx0"] is None
        dialog.get_by_text("Add a missed picture").click()  # a drag adds one, opened at once
        settle(page)
        drag(page, dialog, (0.05, 0.7), (0.3, 0.9))
        page.get_by_text("Added picture").first.wait_for()
        settle(page)
        assert dialog.get_by_text("Drag from one corner of the picture").count() == 0
        no_exception(page)
    with Manifest(db) as manifest:
        assert manifest.picture(first["id"])["no_legend"] == 1
        (added,) = manifest.picture_rows(where="x.added")
        assert manifest.picture_cards([added])  # its card, cut for its box


@pytest.fixture
def chromium_page():
    from server_support import chromium

    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1440, "height": 900})
        page.set_default_timeout(30_000)
        yield page
