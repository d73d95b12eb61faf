"""sigma agrees with the original method (RGB render at Matrix(2, 2), OpenCV gray, std) on every kind of page."""

import io

import cv2

import numpy as np
import pymupdf
import pytest
from PIL import Image

from curation.scoring.scorer import reference_sigma, score_page
from curation.sources.synthetic import PageSpec, jpeg_bytes, page_image, write_pdf

from conftest import SMALL

TOLERANCE = 0.5
# A scan is decoded as MuPDF's render decodes it, so what is left is rounding in the scaler.
DECODE_TOLERANCE = 0.02


def one_page_pdf(tmp_path, draw, width=216, height=288):
    doc = pymupdf.open()
    page = doc.new_page(width=width, height=height)
    draw(page)
    path = tmp_path / "page.pdf"
    doc.save(path)
    return pymupdf.open(path)


def scan(kind="engraving", dpi=150, seed=3, **extra):
    return page_image(PageSpec(kind=kind, seed=seed, dpi=dpi, inches=SMALL, **extra))


def assert_matches_reference(doc, number=0, method=None):
    result = score_page(doc, number)
    assert result.status == "ok", result.error
    assert abs(result.sigma - reference_sigma(doc[number])) <= TOLERANCE
    if method:
        assert result.method == method
    return result


@pytest.mark.parametrize("dpi", [150, 200, 300])
@pytest.mark.parametrize("kind", ["text", "engraving", "mixed", "faded_engraving", "blank"])
def test_jpeg_scan_pages_match_the_reference(tmp_path, kind, dpi):
    spec = PageSpec(kind=kind, seed=dpi, dpi=dpi, inches=SMALL, border=dpi == 200, bleed=dpi == 150)
    doc = pymupdf.open(write_pdf(tmp_path / "scan.pdf", [spec]))
    assert_matches_reference(doc, method="jpeg")


def test_scans_under_144_dpi_are_rendered_and_match(tmp_path):
    doc = pymupdf.open(write_pdf(tmp_path / "scan.pdf", [PageSpec(kind="text", seed=1, dpi=100, inches=SMALL)]))
    assert_matches_reference(doc, method="render")


def test_large_scans_decode_reduced_and_still_match(tmp_path):
    doc = pymupdf.open(write_pdf(tmp_path / "scan.pdf", [PageSpec(kind="text", seed=5, dpi=600, inches=(2.0, 2.5))]))
    assert_matches_reference(doc, method="jpeg")


def scan_pdf(tmp_path, jpeg: bytes, width_px: int, height_px: int, dpi: int):
    doc = pymupdf.open()
    page = doc.new_page(width=width_px / dpi * 72, height=height_px / dpi * 72)
    page.insert_image(page.rect, stream=jpeg)
    path = tmp_path / f"scan-{dpi}.pdf"
    doc.save(path)
    return pymupdf.open(path)


@pytest.mark.parametrize("dpi", [200, 300, 400, 600])
@pytest.mark.parametrize("channels", [1, 3])
def test_a_scan_is_decoded_as_the_render_decodes_it(tmp_path, dpi, channels):
    """MuPDF decodes a scan at 1/2, 1/4 or 1/8 before scaling it; libjpeg-turbo's reduced decode
    is a softer image (sigma 0.3-1.1 low on real newspapers), so sigma must come from MuPDF's."""
    image = scan("text", dpi=dpi, seed=dpi)
    image = image if channels == 3 else np.ascontiguousarray(image[..., 0])
    buffer = io.BytesIO()
    Image.fromarray(image).save(buffer, "JPEG", quality=85)
    doc = scan_pdf(tmp_path, buffer.getvalue(), image.shape[1], image.shape[0], dpi)
    result = score_page(doc, 0)
    assert result.method == "jpeg"
    assert abs(result.sigma - reference_sigma(doc[0])) <= DECODE_TOLERANCE


@pytest.mark.parametrize("dpi", [300, 400])
def test_real_newspaper_scans_read_the_reference_sigma(tmp_path, real_scans, dpi):
    for path in real_scans:
        jpeg = path.read_bytes()
        width, height = Image.open(io.BytesIO(jpeg)).size
        doc = scan_pdf(tmp_path, jpeg, width, height, dpi)
        result = score_page(doc, 0)
        assert abs(result.sigma - reference_sigma(doc[0])) <= DECODE_TOLERANCE, path.name


def test_grayscale_jpeg_matches(tmp_path):
    gray = np.ascontiguousarray(scan()[..., 0])
    buffer = io.BytesIO()
    Image.fromarray(gray).save(buffer, "JPEG", quality=85)
    doc = one_page_pdf(tmp_path, lambda page: page.insert_image(page.rect, stream=buffer.getvalue()))
    assert_matches_reference(doc, method="jpeg")


@pytest.mark.parametrize("name,draw", [
    ("png", lambda page: page.insert_image(page.rect, stream=_png(scan()))),
    ("rotated", lambda page: (page.insert_image(page.rect, stream=jpeg_bytes(scan())), page.set_rotation(90))),
    ("two images", lambda page: (
        page.insert_image(pymupdf.Rect(0, 0, 216, 144), stream=jpeg_bytes(scan(seed=1))),
        page.insert_image(pymupdf.Rect(0, 144, 216, 288), stream=jpeg_bytes(scan(seed=2))))),
    ("image and text", lambda page: (
        page.insert_image(page.rect, stream=jpeg_bytes(scan())),
        page.insert_text((20, 40), "Le Moniteur de la Mode", fontsize=18))),
    ("no image", lambda page: (
        page.draw_rect(pymupdf.Rect(20, 20, 196, 268), color=(0, 0, 0), fill=(0.8, 0.7, 0.5)),
        page.insert_text((30, 60), "vector page", fontsize=14))),
    ("partial image", lambda page: page.insert_image(pymupdf.Rect(30, 30, 180, 250), stream=jpeg_bytes(scan()))),
])
def test_other_pages_are_rendered_and_match(tmp_path, name, draw):
    doc = one_page_pdf(tmp_path, draw)
    assert_matches_reference(doc, method="render")


def test_cmyk_jpeg_is_rendered(tmp_path):
    buffer = io.BytesIO()
    Image.fromarray(scan()).convert("CMYK").save(buffer, "JPEG", quality=85)
    doc = one_page_pdf(tmp_path, lambda page: page.insert_image(page.rect, stream=buffer.getvalue()))
    assert_matches_reference(doc, method="render")


def test_giant_page_is_scored_in_bounded_memory(tmp_path):
    doc = one_page_pdf(tmp_path, lambda page: page.insert_image(page.rect, stream=jpeg_bytes(scan(dpi=100))),
                       width=14400, height=14400)
    result = score_page(doc, 0)
    assert result.status == "ok"
    assert (result.width, result.height) == (28800, 28800)
    assert 0 < result.sigma < 128


def test_a_broadsheet_scan_over_16_megapixels_at_144_dpi_keeps_its_exact_sigma(tmp_path):
    rng = np.random.default_rng(5)
    paper = np.full((5000, 3400), 215, np.uint8)
    paper[400:2600, 300:3100] = rng.integers(20, 240, (2200, 2800), dtype=np.uint8)  # a large halftone
    ok, jpeg = cv2.imencode(".jpg", paper, [cv2.IMWRITE_JPEG_QUALITY, 85])
    doc = one_page_pdf(tmp_path, lambda page: page.insert_image(page.rect, stream=jpeg.tobytes()),
                       width=1700, height=2500)  # 3400 x 5000 at 144 dpi: 17 M reference pixels
    assert_matches_reference(doc, method="jpeg")


def test_thumbnail_is_a_small_jpeg_of_the_page(tmp_path, page_spec):
    doc = pymupdf.open(write_pdf(tmp_path / "scan.pdf", [page_spec]))
    thumb = Image.open(io.BytesIO(score_page(doc, 0).thumbnail))
    assert thumb.format == "JPEG"
    assert max(thumb.size) == 256
    assert thumb.size[0] < thumb.size[1]  # portrait like the page


def test_page_that_cannot_be_read_fails_with_a_reason(tmp_path, page_spec):
    doc = pymupdf.open(write_pdf(tmp_path / "scan.pdf", [page_spec]))
    result = score_page(doc, 7)
    assert result.status == "failed"
    assert "could not read page" in result.error


def _png(rgb):
    buffer = io.BytesIO()
    Image.fromarray(rgb).save(buffer, "PNG")
    return buffer.getvalue()


def test_a_colour_scan_of_plain_text_gets_a_gray_thumbnail(tmp_path):
    text = page_image(PageSpec(kind="text", seed=4, dpi=150))  # yellowed paper: a colour JPEG
    path = write_pdf(tmp_path / "text.pdf", [PageSpec(kind="text", seed=4, dpi=150)])
    assert text[..., 0].mean() > text[..., 2].mean() + 5  # the scan is tinted
    with pymupdf.open(path) as doc:
        result = score_page(doc, 0)
    assert cv2.imdecode(np.frombuffer(result.thumbnail, np.uint8), cv2.IMREAD_UNCHANGED).ndim == 2


def test_thumbnails_keep_a_colour_scan_in_colour_and_sigma_on_luma(tmp_path):
    rgb = np.zeros((600, 450, 3), np.uint8)
    rgb[...] = (200, 170, 120)  # a hand-coloured plate's wash
    rgb[150:450, 100:350] = (40, 90, 160)
    for name, image in (("colour", rgb), ("gray", cv2.cvtColor(cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY), cv2.COLOR_GRAY2RGB))):
        ok, jpeg = cv2.imencode(".jpg", cv2.cvtColor(image, cv2.COLOR_RGB2BGR))
        path = tmp_path / f"{name}.pdf"
        with pymupdf.open() as doc:
            page = doc.new_page(width=450 * 72 / 150, height=600 * 72 / 150)
            page.insert_image(page.rect, stream=jpeg.tobytes())
            doc.save(path)
        with pymupdf.open(path) as doc:
            result = score_page(doc, 0)
            assert abs(result.sigma - reference_sigma(doc[0])) < 0.5
        thumb = cv2.imdecode(np.frombuffer(result.thumbnail, np.uint8), cv2.IMREAD_UNCHANGED)
        assert (thumb.ndim == 3) == (name == "colour"), name
        if name == "colour":
            h, w = thumb.shape[:2]
            assert np.allclose(thumb[5, 5], (120, 170, 200), atol=12)  # the wash, in OpenCV's BGR
            assert np.allclose(thumb[h // 2, w // 2], (160, 90, 40), atol=12)  # the blue coat stays blue


@pytest.mark.parametrize("channels", [1, 3])
def test_a_reduced_decode_is_mupdfs_own_in_an_array_of_its_own(channels):
    """MuPDF's reduced decode is read where MuPDF wrote it, not copied out first: the luma returned is the same,
    and owns its pixels (MuPDF's buffer is freed once the decode returns)."""
    import gc

    from curation.scoring.scorer import _mupdf_decode_reduced

    image = scan("engraving", dpi=300, seed=7)
    image = image if channels == 3 else np.ascontiguousarray(image[..., 0])
    buffer = io.BytesIO()
    Image.fromarray(image).save(buffer, "JPEG", quality=85)
    jpeg, (h, w) = buffer.getvalue(), image.shape[:2]
    mupdf = pymupdf.mupdf
    stream = mupdf.fz_open_buffer(mupdf.fz_new_buffer_from_copied_data(jpeg))
    copied = np.frombuffer(mupdf.fz_read_all(mupdf.fz_open_dctd(stream, -1, 0, 1, mupdf.FzStream()), 0)
                           .fz_buffer_extract(), np.uint8).reshape((h + 1) // 2, (w + 1) // 2, -1)
    expected = copied[..., 0] if channels == 1 else cv2.cvtColor(copied, cv2.COLOR_RGB2GRAY)
    gray = _mupdf_decode_reduced(jpeg, w, h, 1)
    gc.collect()
    _mupdf_decode_reduced(jpeg, w, h, 1)  # another decode where the first one's buffer was
    assert gray.flags.owndata and np.array_equal(gray, expected)
