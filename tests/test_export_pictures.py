"""crop="pictures": every picture of a kept page becomes its own training image (`<page>_pic1` the
largest), cut with the usual margin; pictures under the manifest's picture_area_min are left out and a
page without a picture exports whole; the same ZIP whatever the workers; the CLI and the Export page."""

import csv
import io
import json
import zipfile

import cv2
import numpy as np
import pymupdf
import pytest
from PIL import Image
from streamlit.testing.v1 import AppTest

from curation import Manifest, ingest
from curation.export import ExportSettings, export, select, select_items
from curation.export.preview import preview, sample_items
from curation.sources.synthetic import PageSpec, jpeg_bytes, page_image

from conftest import line_drawing, manifest_copy
from test_export_cli import grouped_manifest, run_cli
from test_export_crop import blurred_psnr, box_of
from apptest_support import shown
from test_export_page import PAGE, texts

DPI = 150
REF = 144 / DPI  # reference pixels (144 dpi) per scan pixel
# (top, left, side) of each drawing in the scan's pixels: a smaller one top left, a larger one bottom right.
DRAWINGS = {"small": (60, 90, 375), "large": (660, 420, 450)}


def two_drawings_page() -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """A 6 x 8 inch text page with two separate pen drawings set into it, and each drawing's ink mask."""
    page = page_image(PageSpec(kind="text", seed=7, dpi=DPI, inches=(6.0, 8.0), uneven=False))
    rng = np.random.default_rng(9)
    masks = {}
    for name, (top, left, side) in DRAWINGS.items():
        gap = DPI // 8  # paper around the drawing, as a printer leaves it
        page[top - gap:top + side + gap, left - gap:left + side + gap] = 235
        art = line_drawing(side, rng)
        page[top:top + side, left:left + side] = np.minimum(235, art)[..., None]
        masks[name] = np.zeros(page.shape[:2], bool)
        masks[name][top:top + side, left:left + side] = art < 128
    return page, masks


@pytest.fixture(scope="module")
def pages():
    drawings, masks = two_drawings_page()
    text = page_image(PageSpec(kind="text", seed=8, dpi=DPI, inches=(6.0, 8.0), uneven=False))
    return {"drawings": drawings, "masks": masks, "text": text}


@pytest.fixture(scope="module")
def scored_db(tmp_path_factory, pages):
    """One document, ingested for real: the page with two drawings, then a text page, both kept."""
    folder = tmp_path_factory.mktemp("pictures")
    doc = pymupdf.open()
    for rgb in (pages["drawings"], pages["text"]):
        page = doc.new_page(width=432, height=576)
        page.insert_image(page.rect, stream=jpeg_bytes(rgb))
    (folder / "archive").mkdir()
    doc.save(folder / "archive" / "two.pdf")
    db = folder / "template.sqlite"
    with Manifest(db) as m:
        ingest(m, [folder / "archive"], workers=1)
        doc_id = next(m.pages())["doc_id"]
        for page in (0, 1):  # kept whatever the size cutoff a test sets
            m.set_override(doc_id, page, True)
    return db


@pytest.fixture
def manifest(scored_db, tmp_path):
    with manifest_copy(scored_db, tmp_path) as m:
        yield m


def exported(manifest, path, settings, **options):
    """(rows of manifest.csv, {file: image}, export.json) of an export with `settings`."""
    export(manifest, path, settings, **options)
    with zipfile.ZipFile(path) as z:
        rows = list(csv.DictReader(io.StringIO(z.read("manifest.csv").decode())))
        images = {r["file"]: Image.open(io.BytesIO(z.read(r["file"]))) for r in rows}
        return rows, images, json.loads(z.read("export.json"))


def covered(mask: np.ndarray, row) -> float:
    """The share of `mask`'s ink inside the row's crop box."""
    x0, y0, x1, y1 = (round(v / REF) for v in box_of(row))
    return mask[y0:y1, x0:x1].sum() / mask.sum()


def test_ingest_found_both_drawings(manifest):
    doc_id = next(manifest.pages())["doc_id"]
    assert len(manifest.pictures(doc_id, 0)) == 2 and manifest.pictures(doc_id, 1) == []


def test_each_picture_is_an_image_of_its_own_covering_it_and_not_the_other(manifest, tmp_path, pages):
    settings = ExportSettings(size=256, fit="stretch", crop="pictures", template="{trigger}, {class}, {picture}")
    rows, images, document = exported(manifest, tmp_path / "lora.zip", settings)
    assert [(r["page"], r["picture"], r["crop"]) for r in rows] == [
        ("1", "1", "picture"), ("1", "2", "picture"), ("2", "", "page")]  # pages from 1
    assert [r["file"].rsplit("/", 1)[1] for r in rows[:2]] == [
        rows[2]["file"].rsplit("/", 1)[1].replace("p0002.jpg", f"p0001_pic{n}.jpg") for n in (1, 2)]
    masks = pages["masks"]
    assert covered(masks["large"], rows[0]) > 0.99 and covered(masks["small"], rows[0]) == 0  # pic1: the largest
    assert covered(masks["small"], rows[1]) > 0.99 and covered(masks["large"], rows[1]) == 0
    scan = Image.open(io.BytesIO(jpeg_bytes(pages["drawings"])))
    for row in rows[:2]:  # each image is its box of the scan, resized: nothing else
        box = tuple(v / REF for v in box_of(row))
        expected = scan.resize((256, 256), Image.Resampling.LANCZOS, box=box)
        assert blurred_psnr(images[row["file"]], expected) > 40
    assert [r["caption"] for r in rows] == ["ohwx, engraving, 1", "ohwx, engraving, 2", "ohwx, engraving"]
    assert document["images"] == 3
    assert document["crop"] == {**document["crop"], "mode": "pictures", "cropped_images": 2, "min_area": 2.0}


def test_a_page_without_a_picture_exports_whole(manifest, tmp_path, pages):
    rows, images, _ = exported(manifest, tmp_path / "lora.zip", ExportSettings(size=256, fit="stretch",
                                                                              crop="pictures"))
    whole = rows[2]
    assert whole["crop"] == "page" and box_of(whole) == (0, 0, 864, 1152) and whole["file"].endswith("p0002.jpg")
    scan = Image.open(io.BytesIO(jpeg_bytes(pages["text"])))
    assert blurred_psnr(images[whole["file"]], scan.resize((256, 256), Image.Resampling.LANCZOS)) > 30


def test_pictures_under_the_size_cutoff_are_left_out_and_the_names_stay(manifest, tmp_path):
    areas = [picture[4] for picture in manifest.pictures(next(manifest.pages())["doc_id"], 0)]
    manifest.picture_area_min = (areas[0] + areas[1]) / 2  # the smaller drawing is under it
    rows, _, document = exported(manifest, tmp_path / "large.zip", ExportSettings(size=64, crop="pictures"))
    assert [(r["page"], r["picture"]) for r in rows] == [("1", "1"), ("2", "")]
    assert rows[0]["file"].endswith("p0001_pic1.jpg") and document["crop"]["min_area"] == manifest.picture_area_min
    manifest.picture_area_min = areas[0] + 1  # no picture large enough: the (overridden) page exports whole
    rows, _, _ = exported(manifest, tmp_path / "none.zip", ExportSettings(size=64, crop="pictures"))
    assert [(r["page"], r["crop"]) for r in rows] == [("1", "page"), ("2", "page")]


def test_the_other_crops_still_give_one_image_per_page(manifest):
    for crop in ("page", "picture"):
        assert [item.picture for item in select_items(manifest, crop=crop)] == [None, None]
    selection = select(manifest, crop="pictures")
    assert len(selection.items) == 3 and selection.pages == 2


def test_exports_are_byte_identical_whatever_the_workers(manifest, tmp_path):
    settings = ExportSettings(size=128, crop="pictures")
    export(manifest, tmp_path / "a.zip", settings)
    export(manifest, tmp_path / "b.zip", settings, workers=2)
    assert (tmp_path / "a.zip").read_bytes() == (tmp_path / "b.zip").read_bytes()


def test_the_preview_shows_a_page_as_its_pictures(manifest):
    settings = ExportSettings(size=256, crop="pictures")
    items = select_items(manifest, crop="pictures")
    assert [(i.page, i.picture) for i in sample_items(items, 4, settings)] == [(0, 1), (0, 2), (1, None)]
    assert [(i.page, i.picture) for i in sample_items(items, 2, settings)] == [(0, 1), (1, None)]
    image = preview(items[1], settings)
    assert image.crop == (items[1].picture_box[0] - 9, items[1].picture_box[1] - 9,
                          items[1].picture_box[2] + 9, items[1].picture_box[3] + 9)  # 1 % of 864, rounded up
    assert (image.image.width, image.image.height) == (256, 256) and image.caption == "ohwx, engraving"


def test_the_command_line_round_trip(manifest, tmp_path):
    manifest.close()
    out = tmp_path / "cli.zip"
    result = run_cli("--db", tmp_path / "manifest.sqlite", "--out", out, "--workers", "2", "--quiet",
                     "--size", "128", "--crop", "pictures", "--layout", "folder")
    assert result.returncode == 0, result.stderr
    assert "3 images" in result.stdout and "2 pictures cut apart" in result.stdout
    with zipfile.ZipFile(out) as z:
        names = sorted(n for n in z.namelist() if n.startswith("images/") and n != "images/")
        assert [n.rsplit("-", 1)[1] for n in names] == ["p0001_pic1.jpg", "p0001_pic1.txt", "p0001_pic2.jpg",
                                                        "p0001_pic2.txt", "p0002.jpg", "p0002.txt"]
        assert json.loads(z.read("export.json"))["settings"]["crop"] == "pictures"
    assert "--crop" in run_cli("--help").stdout and "pictures" in run_cli("--help").stdout


def test_the_export_page_previews_each_picture(manifest, tmp_path, monkeypatch):
    manifest.close()
    monkeypatch.setenv("CURATION_DB", str(tmp_path / "manifest.sqlite"))
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.run()
    assert at.radio(key="export_crop").value == "Each picture apart"  # the default
    assert {m.label: m.value for m in at.metric}["Images"] == "3"
    at.radio(key="export_crop").set_value("The whole page").run()
    assert {m.label: m.value for m in at.metric}["Images"] == "2"
    at.radio(key="export_crop").set_value("Each picture apart").run()
    assert not at.exception
    assert {m.label: m.value for m in at.metric}["Images"] == "3"
    captions = [image.proto.imgs[0].caption for image in at.get("image")]
    assert [shown(c).rsplit("· ", 1)[1] for c in captions] == ["picture 1", "picture 2", "two.pdf, page 2"]
    assert at.button[0].label == "Export 3 images"
    assert any("--crop pictures" in text for text in texts(at.code))


def test_near_duplicates_are_still_one_page_per_group(tmp_path):
    db = grouped_manifest(tmp_path, tmp_path / "grouped.sqlite")  # pages 0, 2, 3 one group; 2 the best
    with Manifest(db) as m:
        doc_id = next(m.pages())["doc_id"]
        for page in (0, 2):
            m.set_pictures(doc_id, page, [(40, 30, 200, 260, 5.0), (220, 30, 392, 260, 4.0)])
        selection = select(m, crop="pictures")
    assert [(i.page, i.picture) for i in selection.items] == [(2, 1), (2, 2), (5, None)]
    assert [entry.item.page for entry in selection.left_out] == [0, 3] and selection.pages == 2


def test_the_export_says_which_images_are_enlarged_and_a_minimum_source_leaves_them_out(manifest, tmp_path):
    """The two drawings are found about 410 and 350 scan pixels wide: at 1024 px each is enlarged over 2x (soft);
    the text page is 900 x 1200 and shrinks. A minimum of 360 px on the short side leaves the small drawing out."""
    report = export(manifest, tmp_path / "all.zip", ExportSettings())
    enlarged = sorted(factor for factor in report.upscales if factor > 1)
    assert len(report.upscales) == 3 and len(enlarged) == 2
    assert 2.0 < enlarged[0] < enlarged[1] < 3.0  # 1024 / (450 + margins), 1024 / (375 + margins)
    assert "2 enlarged from a smaller source" in report.enlarged and "2 more than 2x" in report.enlarged
    report = export(manifest, tmp_path / "sharp.zip", ExportSettings(min_source_side=360))
    assert report.images == 2 and [entry["picture"] for entry in report.too_small] == [2]
    with zipfile.ZipFile(tmp_path / "sharp.zip") as z:
        document = json.loads(z.read("export.json"))
    assert document["settings"]["min_source_side"] == 360
    assert document["sources"]["too_small"] == report.too_small and 300 < report.too_small[0]["source_side"] < 360
    assert document["sources"]["enlarged_images"] == 1


def test_the_command_line_says_how_many_are_enlarged_and_takes_a_minimum(manifest, tmp_path):
    manifest.close()
    result = run_cli("--db", tmp_path / "manifest.sqlite", "--out", tmp_path / "cli.zip", "--workers", "1", "--quiet",
                     "--min-source", "360")
    assert result.returncode == 0, result.stderr
    assert "1 enlarged from a smaller source" in result.stdout
    assert "1 image left out: under 360 px on the short side" in result.stdout
    result = run_cli("--db", tmp_path / "manifest.sqlite", "--out", tmp_path / "bad.zip", "--min-source", "-3")
    assert result.returncode == 2 and "Traceback" not in result.stderr


def test_the_export_page_says_which_images_are_enlarged_and_takes_a_minimum_source(manifest, tmp_path, monkeypatch):
    manifest.close()
    monkeypatch.setenv("CURATION_DB", str(tmp_path / "manifest.sqlite"))
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.run()
    at.run()  # the run the page asks for once drawn: the preview's images
    assert not at.exception
    figures = {m.label: m.value for m in at.metric}
    assert figures["Images"] == "3" and figures["Enlarged"] == "2"  # all three sampled: a count, not "about"
    notes = " ".join(c.value for c in at.caption)
    assert notes.count("Enlarged ") == 2 and "Enlarged 2.4x from" in notes  # each enlarged preview says so
    at.number_input(key="export_min_source").set_value(360).run()
    at.run()  # its size estimate, made once the page is drawn
    assert "--min-source 360" in " ".join(texts(at.code))
    assert "1 image left out" in " ".join(c.value for c in at.caption)
    assert any("Images 1–2 of 2" in c.value for c in at.caption)  # the preview holds the two images written...
    assert not [i for i in at.info if "Left out:" in i.value]  # ...and not the smaller drawing's
    assert {m.label: m.value for m in at.metric}["Enlarged"] == "1"
