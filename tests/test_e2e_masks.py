"""A picture's mask for masked loss in Review's large view, in a real browser (Chromium at 1440 x 900): shown over
the picture, turned off and on again, a stamp painted out of it by dragging (veiled on the page), and Undo taking
the stamp back."""

import io
import os

import numpy as np
import pymupdf
import pytest
from PIL import Image

from curation import Manifest, ingest
from curation.sources.synthetic import jpeg_bytes
from curation.views.picture_images import MASK_VEIL_COLOUR
from server_support import CHROMIUM, go, no_exception, settle, streamlit_server
from test_e2e_pictures import FIRST_CROPS_SHOWN, chromium_page, crops_shown, drag  # noqa: F401 (a fixture)
from test_export_pictures import two_drawings_page

playwright = pytest.importorskip("playwright.sync_api")
pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM),
                                reason="needs Debian's chromium (apt-get install chromium)")


def veiled(dialog) -> int:
    """How many pixels of the large view's page, as the browser shows it, carry the mask's veil."""
    shot = Image.open(io.BytesIO(dialog.frame_locator("iframe").locator("img").screenshot())).convert("RGB")
    pixels = np.asarray(shot).astype(int)
    veil = np.asarray(MASK_VEIL_COLOUR)
    # The veil over paper or ink: red well above blue, as neither paper nor black ink is.
    return int(((pixels[..., 0] - pixels[..., 2] > 60) & (np.abs(pixels - veil).sum(axis=2) < 200)).sum())


def test_the_mask_is_shown_turned_off_a_stamp_painted_out_and_undone(tmp_path, chromium_page):
    archive = tmp_path / "archive"
    archive.mkdir()
    doc = pymupdf.open()
    page = doc.new_page(width=432, height=576)
    page.insert_image(page.rect, stream=jpeg_bytes(two_drawings_page()[0]))
    doc.save(archive / "drawings.pdf")
    db = tmp_path / "data" / "manifest.sqlite"
    db.parent.mkdir()
    with Manifest(db) as manifest:
        ingest(manifest, [archive], workers=1)
        first = manifest.picture_by_number(next(manifest.pages())["doc_id"], 0, 1)
        assert first["region"]  # the finder's region of the picture, stored
    env = {"CURATION_DB": str(db), "CURATION_ROOTS": str(archive)}
    with streamlit_server(tmp_path / "streamlit.log", env) as (_, port):
        url, page = f"http://127.0.0.1:{port}", chromium_page
        go(page, url, "review?view=Pictures")
        page.wait_for_function(crops_shown(2))
        card = page.locator("[class*='st-key-picture-card-']").first  # picture 1: the view opens in page order
        card.get_by_role("button", name="Open").click()
        dialog = page.get_by_role("dialog")
        dialog.get_by_text("Mask: the picture's own region").wait_for()
        settle(page)
        dialog.get_by_text("Show the mask").click()  # the mask over the picture: all of its box is the drawing
        settle(page)
        no_exception(page)
        assert veiled(dialog) == 0
        dialog.get_by_text("Mask on").click()  # off: the whole box is learned
        page.get_by_text("Turned off the mask of picture 1").first.wait_for()
        settle(page)
        dialog.get_by_text("Mask: the whole box (turned off)").wait_for()
        with Manifest(db) as manifest:
            assert manifest.picture(first["id"])["mask_off"] == 1
        dialog.get_by_text("Mask on").click()  # and on again
        page.get_by_text("Turned on the mask of picture 1").first.wait_for()
        settle(page)
        dialog.get_by_role("radio", name="Paint out of the mask").click()
        dialog.get_by_text("Drag across the stamp or mark").wait_for()
        settle(page)
        drag(page, dialog, (0.4, 0.4), (0.6, 0.6))  # the centre of the picture, which fills most of the view
        page.get_by_text("Painted a part out of the mask of picture 1").first.wait_for()
        settle(page)
        no_exception(page)
        dialog.get_by_text("1 part(s) painted out").wait_for()
        assert veiled(dialog) > 1000  # the painted-out part is veiled on the page
        with Manifest(db) as manifest:
            stamped = manifest.picture(first["id"])
        assert stamped["mask_off"] == 0 and stamped["mask_stamps"]
        dialog.get_by_role("button", name="Undo").click()
        page.get_by_text("Undone").first.wait_for()
        settle(page)
        no_exception(page)
    with Manifest(db) as manifest:
        assert manifest.picture(first["id"])["mask_stamps"] is None
