"""Each exported image: the promised size in every shape, RGB JPEG, read from the embedded scan at the
smallest libjpeg reduction that covers it, resized as Pillow's LANCZOS would, the same bytes on every
run, and the same picture the PDF renderer draws."""

import io
import os

import cv2
import numpy as np
import pymupdf
import pytest
from PIL import Image

from curation import Manifest
from curation.export import ExportSettings, export_page, nearest_bucket, plan_image, sdxl_buckets
from curation.export.selection import select
from curation.export.worker import close_document, page_task, run_page_task
from curation.scoring.result import PageResult
from curation.scoring.scorer import raw_stream
from curation.sources.reader import file_sha256, open_document, read_opened
from curation.export import source as source_module
from curation.export.shape import lanczos_resize, paper_colour, shape_image
from curation.export.source import read_source
from curation.sources.synthetic import PageSpec, jpeg_bytes, page_image, write_pdf

from conftest import SMALL

SHAPES = [
    ExportSettings(size=256),
    ExportSettings(size=256, fit="crop"),
    ExportSettings(size=256, fit="stretch"),
    ExportSettings(size=512, mode="bucket"),
]


def scan_pdf(tmp_path, kind="engraving", dpi=150, inches=SMALL, **extra):
    return pymupdf.open(write_pdf(tmp_path / "scan.pdf", [PageSpec(kind=kind, seed=7, dpi=dpi, inches=inches, **extra)]))


def one_page_pdf(tmp_path, draw, width=216, height=288):
    doc = pymupdf.open()
    page = doc.new_page(width=width, height=height)
    draw(page)
    doc.save(tmp_path / "page.pdf")
    return pymupdf.open(tmp_path / "page.pdf")


def decoded(exported):
    image = Image.open(io.BytesIO(exported.jpeg))
    assert (image.format, image.mode) == ("JPEG", "RGB")
    assert image.size == (exported.width, exported.height)
    return image


def expected_size(settings, width, height):
    if settings.mode == "bucket":
        return nearest_bucket(width, height, settings.size)
    return settings.size, settings.size


def blurred_psnr(a, b) -> float:
    a, b = (cv2.GaussianBlur(np.asarray(x, np.float32), (0, 0), 2)[8:-8, 8:-8] for x in (a, b))
    return 10 * np.log10(255**2 / float(((a - b) ** 2).mean()))


@pytest.mark.parametrize("settings", SHAPES, ids=lambda s: s.shape)
def test_scan_pages_have_the_promised_size_in_every_shape(tmp_path, settings):
    doc = scan_pdf(tmp_path)
    exported = export_page(doc, 0, settings)
    assert exported.method == "jpeg"
    assert decoded(exported).size == expected_size(settings, 3, 4)


@pytest.mark.parametrize("settings", SHAPES, ids=lambda s: s.shape)
def test_pages_that_are_not_one_scan_are_rendered_at_the_promised_size(tmp_path, settings):
    doc = one_page_pdf(tmp_path, lambda page: page.draw_circle((108, 144), 80, color=(0.6, 0.1, 0.1), fill=(0.9, 0.8, 0.6)))
    exported = export_page(doc, 0, settings)
    assert exported.method == "render"
    assert decoded(exported).size == expected_size(settings, 216, 288)


@pytest.mark.parametrize("settings", [SHAPES[0], SHAPES[1], SHAPES[3]], ids=lambda s: s.shape)
def test_the_scan_path_shows_what_the_renderer_draws(tmp_path, settings):
    """Decoding the JPEG ourselves must crop and place the page exactly as MuPDF's render does."""
    doc = scan_pdf(tmp_path, kind="mixed", dpi=200)
    ours = shape_image(read_source(doc, 0, settings), settings)
    rendered = shape_image(read_source(doc, 0, settings, use_scan=False), settings)
    assert ours.shape == rendered.shape
    assert blurred_psnr(ours, rendered) > 40  # a one-pixel shift scores about 35


def test_large_scans_are_decoded_at_the_smallest_reduction_that_covers_the_output(tmp_path):
    doc = scan_pdf(tmp_path, dpi=300)  # 900 x 1200 pixels
    for size, reduced in ((128, (113, 150)), (256, (225, 300)), (400, (450, 600)), (512, (450, 600)),
                          (1024, (900, 1200))):  # 1/8, 1/4, 1/2, 1/2, 1
        source = read_source(doc, 0, ExportSettings(size=size))
        assert source.method == "jpeg" and source.size == reduced
        x0, y0, x1, y1 = source.box
        assert (x1 - x0) >= source.plan.size[0] and (y1 - y0) >= source.plan.size[1]


@pytest.mark.parametrize("mode", ["RGB", "L"])
@pytest.mark.parametrize("box, size", [
    ((0.0, 0.0, 451.0, 601.0), (338, 450)),  # a whole odd-sized picture
    ((0.0, 75.5, 451.0, 526.5), (300, 300)),  # a centred square crop
    ((37.3, 61.9, 402.6, 307.2), (256, 172)),  # a picture's region, no edge on a whole pixel
    ((12.25, 0.0, 437.75, 601.0), (424, 600)),  # barely shrinking
    ((0.0, 0.0, 451.0, 601.0), (600, 800)),  # enlarging
])
def test_the_resize_is_pillows_lanczos(mode, box, size):
    """libvips' Lanczos-3 puts every output pixel where Pillow's LANCZOS does, a fractional box included:
    text and hatching, where half a pixel off scores about 30, stay within rounding."""
    image = Image.fromarray(page_image(PageSpec(kind="mixed", seed=11, dpi=150, inches=(451 / 150, 601 / 150))))
    image = image.convert(mode)
    assert image.size == (451, 601)
    ours = lanczos_resize(np.asarray(image).reshape(image.height, image.width, -1), size, box)
    pillow = image.resize(size, Image.Resampling.LANCZOS, box=box)
    assert ours.shape == (size[1], size[0], len(mode))
    a, b = (np.asarray(x, np.float32).reshape(size[1], size[0], -1)[4:-4, 4:-4] for x in (ours, pillow))  # the outermost pixels: edge rules
    assert float(((a - b) ** 2).mean()) < 255**2 / 10**4.5  # PSNR over 45 dB


def test_the_same_page_gives_the_same_bytes_every_time(tmp_path):
    doc = scan_pdf(tmp_path, kind="mixed", dpi=300)
    for settings in [*SHAPES, ExportSettings(size=256, crop="picture")]:
        region = (0.07, 0.11, 0.83, 0.52) if settings.crop == "picture" else None
        first = export_page(doc, 0, settings, region=region).jpeg
        assert all(export_page(doc, 0, settings, region=region).jpeg == first for _ in range(3))


def test_low_resolution_scans_are_enlarged_from_the_scan_itself(tmp_path):
    doc = scan_pdf(tmp_path, dpi=100)
    exported = export_page(doc, 0, ExportSettings(size=1024))
    assert exported.method == "jpeg" and decoded(exported).size == (1024, 1024)


def test_grayscale_scans_come_out_rgb(tmp_path):
    gray = np.ascontiguousarray(page_image(PageSpec(kind="engraving", seed=3, dpi=150, inches=SMALL))[..., 0])
    ok, data = cv2.imencode(".jpg", gray)

    def draw(page):
        page.insert_image(page.rect, stream=data.tobytes())

    doc = one_page_pdf(tmp_path, draw, 216, 288)
    exported = export_page(doc, 0, ExportSettings(size=256))
    assert exported.method == "jpeg"
    pixels = np.asarray(decoded(exported), np.int16)
    assert np.abs(pixels[..., 0] - pixels[..., 2]).max() <= 6  # gray stays gray


def test_cmyk_scans_are_left_to_the_renderer(tmp_path):
    rgb = page_image(PageSpec(kind="engraving", seed=4, dpi=150, inches=SMALL))
    buffer = io.BytesIO()
    Image.fromarray(rgb).convert("CMYK").save(buffer, "JPEG")
    doc = one_page_pdf(tmp_path, lambda page: page.insert_image(page.rect, stream=buffer.getvalue()))
    exported = export_page(doc, 0, ExportSettings(size=256))
    assert exported.method == "render" and decoded(exported).size == (256, 256)


def test_rotated_pages_are_rendered_the_way_they_are_shown(tmp_path):
    rgb = page_image(PageSpec(kind="engraving", seed=5, dpi=150, inches=SMALL))  # portrait 450 x 600

    def draw(page):
        page.insert_image(page.rect, stream=jpeg_bytes(rgb))
        page.set_rotation(90)

    doc = one_page_pdf(tmp_path, draw)
    source = read_source(doc, 0, ExportSettings(size=256))
    assert source.method == "render"
    assert source.plan.size == (256, 192)  # shown landscape, so padded above and below


def test_the_margin_is_the_paper_not_the_scanner_bed(tmp_path):
    doc = scan_pdf(tmp_path, kind="engraving", border=True)
    exported = export_page(doc, 0, ExportSettings(size=256))
    margin = np.asarray(decoded(exported), np.float32)[:, :20].reshape(-1, 3).mean(axis=0)
    page = page_image(PageSpec(kind="engraving", seed=7, dpi=150, inches=SMALL, border=True))
    paper = np.asarray(paper_colour(Image.fromarray(page)), np.float32)
    assert np.abs(margin - paper).max() < 6 and margin.mean() > 150  # light paper, not the dark bed


def test_the_paper_colour_is_numpys_percentile_and_median_of_the_thumbnail():
    """The paper colour's own percentile and median give NumPy's numbers to the bit: the margins of every
    export stay byte for byte what they were."""
    from curation.export.shape import PAPER_SHARE_PERCENT, _median, _percentile

    rng = np.random.default_rng(5)
    for trial in range(300):
        n = int(rng.integers(1, 6000))
        levels = rng.integers(0, 256, (n, 3)) if trial % 3 else rng.integers(180, 190, (n, 3))  # many ties too
        pixels = levels.astype(np.float32)
        luma = pixels @ np.array([0.299, 0.587, 0.114], np.float32)
        for percent in (100 - PAPER_SHARE_PERCENT, 50, 99.9):
            assert _percentile(luma, percent) == np.percentile(luma, percent)
        bright = pixels[luma >= np.percentile(luma, 100 - PAPER_SHARE_PERCENT)]
        assert np.array_equal(_median(bright), np.median(bright, axis=0))


def test_the_paper_colour_is_what_numpy_made_of_it(monkeypatch):
    from curation.export import shape

    rng = np.random.default_rng(6)
    images = [rng.integers(0, 256, size, dtype=np.uint8) for size in ((300, 200, 3), (300, 200, 4), (97, 1030, 1), (40, 40, 3))]
    images.append(page_image(PageSpec(kind="engraving", seed=7, dpi=150, inches=SMALL, border=True)))
    ours = [paper_colour(image) for image in images]
    monkeypatch.setattr(shape, "_percentile", np.percentile)
    monkeypatch.setattr(shape, "_median", lambda pixels: np.median(pixels, axis=0))
    assert ours == [paper_colour(image) for image in images]


def test_a_chosen_margin_colour_is_used(tmp_path):
    doc = scan_pdf(tmp_path)
    exported = export_page(doc, 0, ExportSettings(size=256, pad_colour="#ff0000"))
    margin = np.asarray(decoded(exported), np.float32)[100:150, :20].reshape(-1, 3).mean(axis=0)
    assert margin[0] > 240 and margin[1] < 15 and margin[2] < 15


def test_renders_of_odd_pages_stay_within_memory_bounds(tmp_path, monkeypatch):
    monkeypatch.setattr(source_module, "MAX_RENDER_PIXELS", 200_000)
    doc = one_page_pdf(tmp_path, lambda page: page.draw_line((0, 0), (20, 1000)), width=20, height=1000)
    settings = ExportSettings(size=1024, fit="stretch")
    source = read_source(doc, 0, settings)
    assert source.pixmap.width * source.pixmap.height <= 200_000 * 1.05  # give or take the edge pixels
    assert shape_image(source, settings).shape == (1024, 1024, 3)


def test_sdxl_buckets_are_the_known_ones():
    buckets = sdxl_buckets(1024)
    for known in [(1024, 1024), (1152, 896), (896, 1152), (1216, 832), (832, 1216), (1344, 768), (768, 1344),
                  (1536, 640), (640, 1536)]:
        assert known in buckets
    assert all(w % 64 == 0 and h % 64 == 0 and w * h <= 1024 * 1024 for w, h in buckets)
    assert all(w * h >= 0.75 * 1024 * 1024 for w, h in buckets if max(w, h) <= 1536)  # area about 1024²
    assert nearest_bucket(8.5, 11) == (896, 1152) and nearest_bucket(11, 8.5) == (1152, 896)
    assert nearest_bucket(5, 5) == (1024, 1024)


def test_plans_keep_the_proportions_they_promise():
    pad = plan_image(850, 1100, ExportSettings())
    assert pad.canvas == (1024, 1024) and pad.size == (791, 1024) and pad.offset == (116, 0)
    crop = plan_image(850, 1100, ExportSettings(fit="crop"))
    assert crop.box == (0.0, 125.0, 850.0, 975.0) and crop.size == (1024, 1024)
    bucket = plan_image(850, 1100, ExportSettings(mode="bucket"))
    x0, y0, x1, y1 = bucket.box
    assert bucket.size == (896, 1152) and abs((x1 - x0) / (y1 - y0) - 896 / 1152) < 1e-9


def test_a_page_ingest_read_as_one_scan_gives_the_same_image_without_its_drawing_checked_again(tmp_path):
    doc = scan_pdf(tmp_path, kind="mixed", dpi=300)
    for settings in [*SHAPES, ExportSettings(size=256, pad_colour="paper")]:
        known = export_page(doc, 0, settings, known_scan=True)
        assert known.method == "jpeg" and known == export_page(doc, 0, settings)


def two_images(page):
    scan = jpeg_bytes(page_image(PageSpec(kind="engraving", seed=6, dpi=150, inches=SMALL)))
    page.insert_image(page.rect, stream=scan)
    page.insert_image(pymupdf.Rect(20, 20, 80, 100), stream=scan)


def cmyk_scan(page):
    buffer = io.BytesIO()
    Image.fromarray(page_image(PageSpec(kind="engraving", seed=4, dpi=150, inches=SMALL))).convert("CMYK").save(buffer, "JPEG")
    page.insert_image(page.rect, stream=buffer.getvalue())


def rotated_scan(page):
    page.insert_image(page.rect, stream=jpeg_bytes(page_image(PageSpec(kind="engraving", seed=5, dpi=150, inches=SMALL))))
    page.set_rotation(90)


def colour_transformed_scan(page):
    page.insert_image(page.rect, stream=jpeg_bytes(page_image(PageSpec(kind="engraving", seed=8, dpi=150, inches=SMALL))))
    page.parent.xref_set_key(page.get_images()[0][0], "DecodeParms", "<</ColorTransform 0>>")


@pytest.mark.parametrize("draw", [two_images, cmyk_scan, rotated_scan, colour_transformed_scan], ids=lambda f: f.__name__)
def test_a_page_said_to_be_one_scan_whose_image_is_not_plain_is_still_rendered(tmp_path, draw):
    """A manifest's word ("jpeg") spares only the look at what the page draws; its image is checked again."""
    doc = one_page_pdf(tmp_path, draw)
    assert export_page(doc, 0, ExportSettings(size=256), known_scan=True).method == "render"


def test_the_export_knows_the_pages_ingest_read_as_one_scan(tmp_path):
    pdf = write_pdf(tmp_path / "scans.pdf", [PageSpec(kind="engraving", seed=s, dpi=150, inches=SMALL) for s in (1, 2)])
    with Manifest(tmp_path / "manifest.sqlite") as m:
        doc = m.register_document(file_sha256(pdf), str(pdf.resolve()), pdf.stat().st_size)
        m.set_document(doc["id"], status="ok", pages=2)
        m.save_pages(doc["id"], [PageResult(page=n, status="ok", sigma=60.0, width=432, height=576, method=method)
                                 for n, method in enumerate(["jpeg", "render"])])
        items = select(m, threshold=0).items
    tasks = [page_task(item, ExportSettings(size=256)) for item in items]
    assert [task.known_scan for task in tasks] == [True, False]
    assert [run_page_task(task).method for task in tasks] == ["jpeg", "jpeg"]  # the second is checked in full
    close_document()


def scan_streams(doc):
    return [(xref, doc.xref_stream_raw(xref)) for page in doc for xref in [page.get_images()[0][0]]]


@pytest.mark.parametrize("how", ["saved", "updated", "encrypted", "in memory"])
def test_a_scan_is_read_from_the_file_as_mupdf_reads_it(tmp_path, how):
    """The scan's bytes are read from the file where MuPDF found them, or by MuPDF where they are not
    there as stored: the same bytes either way."""
    path = write_pdf(tmp_path / "scans.pdf", [PageSpec(kind="engraving", seed=s, dpi=150, inches=SMALL) for s in (1, 2)])
    if how == "updated":  # an incremental save: the second page's scan replaced at the end of the file
        doc = pymupdf.open(path)
        doc[1].replace_image(doc[1].get_images()[0][0], stream=jpeg_bytes(page_image(PageSpec(kind="text", seed=9, dpi=150, inches=SMALL))))
        doc.saveIncr()
        doc.close()
    if how == "encrypted":
        pymupdf.open(path).save(tmp_path / "locked.pdf", encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw="", owner_pw="x")
        path = tmp_path / "locked.pdf"
    doc = pymupdf.open(stream=path.read_bytes()) if how == "in memory" else open_document(path, [tmp_path])
    expected = scan_streams(doc)
    assert all(raw_stream(doc, xref) == data for xref, data in expected)
    assert all(data[:2] == b"\xff\xd8" for _, data in expected)  # JPEGs as stored, encrypted or not
    if how in ("saved", "updated"):  # read from the file, not by MuPDF
        assert all(read_opened(doc, 0, 5) == b"%PDF-" for _ in expected)


def test_a_scan_is_read_from_the_file_opened_though_its_descriptor_now_names_another(tmp_path):
    """A document is opened through its checked descriptor's link (/proc/self/fd/N), and that descriptor is
    closed after: N then names whatever file is opened next. The scan's bytes still come from the document's
    file, and from MuPDF where that file changed since."""
    specs = [PageSpec(kind="engraving", seed=s, dpi=150, inches=SMALL) for s in (1, 2)]
    path = write_pdf(tmp_path / "scans.pdf", specs)
    other = write_pdf(tmp_path / "other.pdf", [PageSpec(kind="text", seed=s, dpi=150, inches=SMALL) for s in (3, 4)])
    doc = open_document(path, [tmp_path])
    expected = scan_streams(doc)
    reused = os.open(other, os.O_RDONLY)  # the lowest free descriptor: the one the document was opened on
    try:
        assert all(raw_stream(doc, xref) == data for xref, data in expected)
        path.rename(tmp_path / "moved.pdf")
        write_pdf(path, specs[::-1])  # another file at its path
        assert read_opened(doc, 0, 5) is None
        assert all(raw_stream(doc, xref) == data for xref, data in expected)
    finally:
        os.close(reused)
        doc.close()
