"""The margin around an exported picture is paper: where the page around the picture's box holds a neighbouring
column, a headline or a rule, that side of the margin is filled with the page's paper colour; the picture's own
pixels are the ones a plain cut gives; the preview and the ZIP's worker make the same image."""

import json

import cv2
import numpy as np
import pymupdf
import pytest

from curation.export import ExportSettings
from curation.export.geometry import picture_in_part, picture_region
from curation.export.selection import Item
from curation.export.shape import encode_jpeg, shape_image
from curation.export.source import read_source
from curation.export.worker import close_document, export_one, page_task, run_page_task

from conftest import REALDATA

DPI = 150
PAPER = (238, 230, 212)
BOX = (300, 300, 900, 800)  # the picture, in scan pixels of an 8 x 10 inch page (1200 x 1500)
REF = 144 / DPI  # reference pixels (144 dpi, as ingest keeps boxes) per scan pixel


def drawing(height: int, width: int, seed: int = 0) -> np.ndarray:
    """A framed, hatched picture with shading, as a gray image on paper (its box is its frame)."""
    rng = np.random.default_rng(seed)
    picture = np.full((height, width), 230, np.uint8)
    y, x = np.mgrid[:height, :width]
    picture[(x + y) % 9 < 2] = 60  # hatching
    picture[(x - 2 * y) % 23 < 3] = 30
    picture[(y > height // 2) & ((x + 3 * y) % 7 < 3)] = 90  # shading in the lower half
    for _ in range(12):
        cx, cy, r = rng.integers(20, width - 20), rng.integers(20, height - 20), rng.integers(5, 25)
        cv2.circle(picture, (int(cx), int(cy)), int(r), 15, -1)
    picture[:4], picture[-4:], picture[:, :4], picture[:, -4:] = 20, 20, 20, 20  # the frame
    return picture


def composed_page(neighbours: bool = True, seed: int = 0) -> np.ndarray:
    """An RGB page: the picture at BOX; with `neighbours`, a text column 4 px right of it, a headline 8 px above
    and a rule 6 px below, all inside the export's margin (1 % of the page's shorter side: 12 px here); the
    left side is clear."""
    rng = np.random.default_rng(seed)
    page = np.empty((1500, 1200, 3), np.uint8)
    page[:] = PAPER
    page = np.clip(page.astype(np.int16) + rng.integers(-4, 5, page.shape[:2])[..., None], 0, 255).astype(np.uint8)
    x0, y0, x1, y1 = BOX
    picture = drawing(y1 - y0, x1 - x0, seed)
    page[y0:y1, x0:x1] = np.where(picture[..., None] < 200, picture[..., None], page[y0:y1, x0:x1])
    if neighbours:
        for line in range(y0 - 60, y1 + 60, 16):  # the column: lines of letters
            x = x1 + 4
            while x < x1 + 220:
                width = int(rng.integers(5, 11))
                page[line:line + 9, x:x + width] = 35
                x += width + int(rng.integers(2, 6))
        for x in range(x0 + 20, x1 - 20, 22):  # the headline's letters, ending 8 px above the box
            page[y0 - 30:y0 - 8, x:x + 14] = 25
        page[y1 + 6:y1 + 9, 100:1100] = 40  # a rule under the picture
    return page


def scan_pdf(path, page: np.ndarray) -> str:
    """A PDF of one page, the scan as its only image (gray where `page` is)."""
    ok, jpeg = cv2.imencode(".jpg", page if page.ndim == 2 else cv2.cvtColor(page, cv2.COLOR_RGB2BGR),
                            [cv2.IMWRITE_JPEG_QUALITY, 92])
    doc = pymupdf.open()
    pdf_page = doc.new_page(width=page.shape[1] * 72 / DPI, height=page.shape[0] * 72 / DPI)
    pdf_page.insert_image(pdf_page.rect, stream=jpeg.tobytes())
    doc.save(path)
    return str(path)


def picture_item(path: str, box, width: int, height: int) -> Item:
    """The export's item for the picture `box` (reference pixels) of a page `width` x `height` (reference)."""
    import os

    return Item(1, 0, path, "0" * 64, os.path.getsize(path), 60.0, "threshold", None, "a-p0000-pic1",
                width, height, box, 0.2, picture=1, method="jpeg")


def cut_with_and_without_paper(path: str, item: Item, settings: ExportSettings):
    """The image shaped as a plain cut, the image with its margin made paper, and the picture's box in them."""
    with pymupdf.open(path) as doc:
        task = page_task(item, settings)
        source = read_source(doc, 0, settings, region=task.region, known_scan=True)
        plain, paper = shape_image(source, settings), shape_image(source, settings, task.picture)
        x0, y0, x1, y1 = picture_in_part(source.plan, task.picture)
        left, top = source.plan.offset
        part = (left, top, left + source.plan.size[0], top + source.plan.size[1])
    return plain, paper, (left + x0, top + y0, left + x1, top + y1), part


def margin_mask(shape, box, part) -> np.ndarray:
    """The pixels of the part outside the picture's box: the margin cut from the page."""
    mask = np.zeros(shape[:2], bool)
    mask[part[1]:part[3], part[0]:part[2]] = True
    mask[box[1]:box[3], box[0]:box[2]] = False
    return mask


def luma(rgb: np.ndarray) -> np.ndarray:
    return cv2.cvtColor(np.ascontiguousarray(rgb), cv2.COLOR_RGB2GRAY)


SETTINGS = [ExportSettings(size=512, crop="pictures"), ExportSettings(size=512, crop="picture", mode="bucket")]


@pytest.mark.parametrize("settings", SETTINGS, ids=["square", "bucket"])
@pytest.mark.parametrize("gray", [False, True], ids=["colour", "gray"])
def test_a_column_a_headline_and_a_rule_in_the_margin_become_paper_and_the_picture_is_untouched(
        tmp_path, settings, gray):
    page = composed_page()
    path = scan_pdf(tmp_path / "page.pdf", cv2.cvtColor(page, cv2.COLOR_RGB2GRAY) if gray else page)
    box = tuple(round(v * REF) for v in BOX)
    plain, paper, inside, part = cut_with_and_without_paper(path, picture_item(path, box, 1152, 1440), settings)
    margin = margin_mask(paper.shape, inside, part)
    assert margin.sum() > 0.02 * (part[2] - part[0]) * (part[3] - part[1])  # a margin there is
    assert (luma(plain)[margin] < 128).sum() > 500  # the plain cut shows the neighbours' ink
    assert luma(paper)[margin].min() > 200  # no ink left: paper
    x0, y0, x1, y1 = inside
    assert np.array_equal(paper[y0:y1, x0:x1], plain[y0:y1, x0:x1])  # the picture's own pixels, as they were
    filled = paper[margin].reshape(-1, 3).astype(int)
    expected = np.array([round(0.299 * PAPER[0] + 0.587 * PAPER[1] + 0.114 * PAPER[2])] * 3 if gray else PAPER)
    assert np.abs(np.median(filled, axis=0) - expected).max() <= 6  # the page's paper colour
    # The left side held only paper: it is left as the page has it, grain and all.
    left_side = np.s_[y0:y1, part[0]:x0]
    assert np.array_equal(paper[left_side], plain[left_side]) and plain[left_side].std() > 0.5


def test_a_margin_of_paper_is_left_as_the_page_has_it(tmp_path):
    path = scan_pdf(tmp_path / "page.pdf", composed_page(neighbours=False))
    box = tuple(round(v * REF) for v in BOX)
    plain, paper, _, _ = cut_with_and_without_paper(path, picture_item(path, box, 1152, 1440), SETTINGS[0])
    assert np.array_equal(plain, paper)


def test_the_preview_and_the_zip_s_worker_make_the_image_with_the_paper_margin(tmp_path):
    settings = SETTINGS[0]
    path = scan_pdf(tmp_path / "page.pdf", composed_page())
    item = picture_item(path, tuple(round(v * REF) for v in BOX), 1152, 1440)
    _, paper, _, _ = cut_with_and_without_paper(path, item, settings)
    try:
        zipped = run_page_task(page_task(item, settings)).jpeg  # what ExportJob writes into the ZIP
    finally:
        close_document()
    assert export_one(page_task(item, settings)).jpeg == zipped == encode_jpeg(paper, settings.quality)


def test_a_whole_page_keeps_everything_on_it(tmp_path):
    path = scan_pdf(tmp_path / "page.pdf", composed_page())
    item = picture_item(path, tuple(round(v * REF) for v in BOX), 1152, 1440)
    assert picture_region(item, ExportSettings(crop="page")) is None
    assert page_task(item, ExportSettings(crop="page")).picture is None


def real_cartoons():
    """The shared real newspaper pages whose boxed cartoon is set among text columns, with its box."""
    labels = REALDATA / "pictures.jsonl"
    if not labels.exists():
        return []
    rows = [json.loads(line) for line in labels.read_text().splitlines() if line.strip()]
    return [(row["file"], picture["box"]) for row in rows if "evening_star" in row["file"]
            for picture in row["pictures"] if picture["kind"] == "cartoon"]


@pytest.mark.skipif(not real_cartoons(), reason="../shared/realdata (its boxed newspaper cartoons) is not here")
@pytest.mark.parametrize("name, box", real_cartoons())
def test_on_a_real_newspaper_page_the_cartoon_s_margin_holds_no_column(tmp_path, name, box):
    scan = cv2.imread(str(REALDATA / "pages" / name), cv2.IMREAD_COLOR)
    scan = cv2.cvtColor(scan, cv2.COLOR_BGR2RGB)
    path = scan_pdf(tmp_path / "page.pdf", scan)  # at DPI: what counts is the page in reference pixels
    width, height = round(scan.shape[1] * REF), round(scan.shape[0] * REF)
    reference_box = (round(box[0] * width), round(box[1] * height), round(box[2] * width), round(box[3] * height))
    plain, paper, inside, part = cut_with_and_without_paper(path, picture_item(path, reference_box, width, height),
                                                            SETTINGS[0])
    margin = margin_mask(paper.shape, inside, part)
    assert (luma(plain)[margin] < 100).sum() > 20  # the columns beside the cartoon reach into the plain cut's margin
    assert (luma(paper)[margin] < 100).sum() == 0
    x0, y0, x1, y1 = inside
    assert np.array_equal(paper[y0:y1, x0:x1], plain[y0:y1, x0:x1])


def test_review_s_card_of_the_picture_has_the_paper_margin_too(tmp_path):
    from curation.export.card import CARD_QUALITY, CARD_SETTINGS, picture_card

    path = scan_pdf(tmp_path / "page.pdf", composed_page())
    box = tuple(round(v * REF) for v in BOX)
    _, paper, _, _ = cut_with_and_without_paper(path, picture_item(path, box, 1152, 1440), CARD_SETTINGS)
    with pymupdf.open(path) as doc:
        assert picture_card(doc, 0, box, 1152, 1440, known_scan=True) == encode_jpeg(paper, CARD_QUALITY)
