"""Score one page: sigma, the standard deviation of its grayscale brightness at 144 dpi.

The original method rendered every page with `Matrix(2, 2)`, converted it to gray with OpenCV's
ITU-R 601 weights and took `std()`. Curators learned their cutoff (45) on that number, so every path
here reproduces it: a scan page's embedded JPEG is decoded the way MuPDF's render decodes it (at the
same power-of-two reduction, by the same decoder) and brought to the reference size with MuPDF's own
scaler, which gives the reference's sigma without drawing the page. Anything that is not one plain
JPEG covering the page is rendered by MuPDF.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import cv2
import numpy as np
import pymupdf

from .result import PageResult
from ..sources.reader import error_text, read_opened
from .features import area_resize, feature_columns

REFERENCE_ZOOM = 2.0  # Matrix(2, 2): 144 dpi, what the original pipeline measured
THUMBNAIL_SIDE = 256
THUMBNAIL_QUALITY = 80
# libjpeg scales a decode by 1/2, 1/4 or 1/8; scans reduced further (over 1100 dpi) are rendered.
MAX_DECODE_REDUCTION = 3
# Rendered pages larger than this many reference pixels (giant boxes) are measured at a reduced scale;
# a scan decoded in gray (a byte a pixel, not the render's three) is measured whole up to MAX_DECODE_PIXELS,
# which a broadsheet front page at 144 dpi (3375 x 5000) needs for its exact sigma.
MAX_RENDER_PIXELS = 16_000_000
MAX_DECODE_PIXELS = 48_000_000
COVER_TOLERANCE_PT = 1.0
COLOUR_SPREAD = 12  # a page whose red and blue differ by more than this somewhere is shown in colour
COLOUR_PICTURE_MIN = 0.5  # square inches: a scan holding a picture this large gets a colour thumbnail
INVISIBLE_LOG = {"ignore-text"}
DAMAGE_SIGNS = ("cannot load", "not a stream", "cannot find", "syntax error", "premature end", "corrupt")


def reference_sigma(page: pymupdf.Page) -> float:
    """The original method, as written: RGB render at Matrix(2, 2), OpenCV gray, numpy std."""
    pix = page.get_pixmap(matrix=pymupdf.Matrix(REFERENCE_ZOOM, REFERENCE_ZOOM))
    rgb = np.frombuffer(pix.samples, np.uint8).reshape(pix.h, pix.w, pix.n)
    return float(cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY).std())


def score_page(doc: pymupdf.Document, number: int) -> PageResult:
    """Score one page; a page that cannot be read comes back failed with the reason."""
    return score_page_and_scan(doc, number)[0]


def score_page_and_scan(doc: pymupdf.Document, number: int, check_pictures: Callable[[np.ndarray, float], dict] | None = None,
                        picture_inputs: Callable[[np.ndarray, int, list], tuple] | None = None
                        ) -> tuple[PageResult, np.ndarray | None]:
    """The page's score, and its scan's luma at full size where scoring decoded the scan whole (else
    None): what reading the page at a higher resolution (its legends) can use without a second decode.
    `check_pictures(gray, box_scale)`: picture columns that replace the rule-based finder's (the picture
    stage's learned verdict, curation.pictures.verdict.checked_columns), from the same decoded page.
    `picture_inputs(gray, width, boxes)`: what the picture job needs of each picture found, cut from the same
    decoded page (curation.pictures.embedding.encoded_inputs), kept as the result's `picture_inputs`."""
    scan = None
    try:
        pymupdf.TOOLS.reset_mupdf_warnings()
        page = doc[number]
        gray, method, colour, scan = _gray_at_reference(doc, page)
        damage = _damage(pymupdf.TOOLS.mupdf_warnings())
        if damage:
            return PageResult(page=number, status="failed", error=f"damaged page: {damage}"), None
        sigma = float(cv2.meanStdDev(gray)[1][0, 0])
        width, height = reference_size(page)
        features = feature_columns(gray, width / gray.shape[1])
        if check_pictures is not None:
            features.update(check_pictures(gray, width / gray.shape[1]))
        # Colour is what a curator judges a plate by; on a page of text it is only the paper's tint, and
        # decoding a scan's colour costs another pass over its JPEG.
        if callable(colour):
            colour = colour() if features["picture_area"] >= COLOUR_PICTURE_MIN else None
        found = json.loads(features.get("pictures") or "[]") if picture_inputs is not None else []
        inputs = picture_inputs(gray, width, found) if found else None
        return PageResult(
            page=number, status="ok", sigma=sigma, width=width, height=height,
            method=method, thumbnail=thumbnail_jpeg(gray if colour is None else colour), features=features,
            picture_inputs=inputs,
        ), scan
    except Exception as exc:  # MuPDF raises plain RuntimeError/ValueError for damaged content
        return PageResult(page=number, status="failed", error=f"could not read page: {error_text(exc)}"), None


def _damage(warnings: str) -> str | None:
    """MuPDF draws what it can of a broken page and only warns; these warnings mean content is missing."""
    for line in warnings.splitlines():
        if any(sign in line for sign in DAMAGE_SIGNS):
            return line.strip()
    return None


def reference_size(page: pymupdf.Page) -> tuple[int, int]:
    """Width and height in pixels of the reference render (Matrix(2, 2))."""
    rect = page.rect * pymupdf.Matrix(REFERENCE_ZOOM, REFERENCE_ZOOM)
    irect = rect.irect
    return irect.width, irect.height


def page_gray(doc: pymupdf.Document, number: int) -> np.ndarray:
    """Page `number`'s luma as scoring reads it: at the reference resolution (less for a page too large to
    render whole), so boxes in reference pixels cut it as they cut the scored page."""
    return _gray_at_reference(doc, doc[number])[0]


def page_at_reference(doc: pymupdf.Document, number: int) -> tuple[np.ndarray, float]:
    """Page `number`'s luma as scoring reads it, and the factor from its pixels to the reference pixels the
    manifest's boxes are in."""
    page = doc[number]
    gray = _gray_at_reference(doc, page)[0]
    return gray, reference_size(page)[0] / gray.shape[1]


def _gray_at_reference(doc, page) -> tuple[np.ndarray, str, np.ndarray | Callable[[], np.ndarray | None] | None,
                                           np.ndarray | None]:
    """The page's luma at the reference resolution, how it was made, for a colour page a colour
    image (RGB, any size) for its thumbnail, or for a scan a function that decodes one when asked,
    and the scan's luma at full size where it was decoded whole."""
    jpeg = full_page_jpeg(doc, page)
    width, height = reference_size(page)
    # MuPDF paints enlarged images with its own interpolation, so scans under 144 dpi are rendered.
    if (jpeg is not None and jpeg[1] >= width and jpeg[2] >= height and width * height <= MAX_DECODE_PIXELS
            and render_reduction(jpeg[1], jpeg[2], width, height) <= MAX_DECODE_REDUCTION):
        gray, scan = _decode_scaled(*jpeg, width, height)
        return gray, "jpeg", lambda: _colour_preview(*jpeg), scan
    zoom = REFERENCE_ZOOM * min(1.0, (MAX_RENDER_PIXELS / max(1, width * height)) ** 0.5)
    gray, colour = _render_gray(page, zoom)
    return gray, ("render" if zoom == REFERENCE_ZOOM else "render-reduced"), colour, None


def _render_gray(page: pymupdf.Page, zoom: float) -> tuple[np.ndarray, np.ndarray | None]:
    """The rendered page's luma, and a small colour copy when the page is in colour."""
    pix = page.get_pixmap(matrix=pymupdf.Matrix(zoom, zoom), alpha=False)
    rgb = np.frombuffer(pix.samples_mv, np.uint8).reshape(pix.h, pix.stride)[:, : pix.w * 3].reshape(pix.h, pix.w, 3)
    # RGB then OpenCV's weights, as the reference: MuPDF's own gray differs on coloured vector art.
    gray = cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY)
    if not _is_colour(rgb):
        return gray, None
    scale = min(1.0, 2 * THUMBNAIL_SIDE / max(pix.w, pix.h))  # a new array: the pixmap's memory goes with it
    return gray, cv2.resize(rgb, (max(1, round(pix.w * scale)), max(1, round(pix.h * scale))),
                            interpolation=cv2.INTER_AREA)


def _is_colour(rgb: np.ndarray) -> bool:
    sample = rgb[::8, ::8].astype(np.int16)
    return int(np.abs(sample[..., 0] - sample[..., 2]).max(initial=0)) > COLOUR_SPREAD


def _colour_preview(jpeg: bytes, image_w: int, image_h: int) -> np.ndarray | None:
    """A colour JPEG decoded at the smallest libjpeg scale that still fills a thumbnail; None for gray."""
    if _jpeg_components(jpeg) != 3:
        return None
    flag = cv2.IMREAD_COLOR
    for factor, reduced in ((8, cv2.IMREAD_REDUCED_COLOR_8), (4, cv2.IMREAD_REDUCED_COLOR_4),
                            (2, cv2.IMREAD_REDUCED_COLOR_2)):
        if max(image_w, image_h) / factor >= THUMBNAIL_SIDE:
            flag = reduced
            break
    bgr = cv2.imdecode(np.frombuffer(jpeg, np.uint8), flag | cv2.IMREAD_IGNORE_ORIENTATION)
    if bgr is None:
        return None
    rgb = cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)
    return rgb if _is_colour(rgb) else None


def _jpeg_components(jpeg: bytes) -> int | None:
    """Colour components in the JPEG's frame header (SOFn), without decoding it."""
    at = 2
    while at + 9 < len(jpeg):
        if jpeg[at] != 0xFF:
            return None
        marker, length = jpeg[at + 1], int.from_bytes(jpeg[at + 2:at + 4], "big")
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            return jpeg[at + 9]
        at += 2 + length
    return None


def full_page_jpeg(doc: pymupdf.Document, page: pymupdf.Page, *, drawing_known: bool = False,
                   exact_colours: bool = False) -> tuple[bytes, int, int] | None:
    """The raw JPEG, with its pixel size, of a page that is one plain JPEG covering it.

    None means the page has to be rendered: anything else drawn on it, several images, masks,
    CMYK or indexed colour, a Decode array, rotation, a flip or a filter chain all change what the
    reference render shows. `drawing_known`: this check already found the page so in an unchanged file
    (the export of a page ingest read as "jpeg"), so what the page draws, and where (running its content,
    which loads the image once more), is not looked at again; the image itself still is. `exact_colours`:
    a /DecodeParms (ColorTransform) changes the colours MuPDF shows, so such a scan is refused too.
    """
    if page.rotation:
        return None
    images = page.get_images(full=True)
    if len(images) != 1:
        return None
    xref, smask, image_w, image_h, bpc, _cs, _alt, _name, filters, _ref = images[0]
    if smask or bpc != 8 or filters != "DCTDecode":
        return None
    keys = ("Decode", "Mask", "ImageMask", "DecodeParms") if exact_colours else ("Decode", "Mask", "ImageMask")
    if any(doc.xref_get_key(xref, key)[0] != "null" for key in keys):
        return None
    if not drawing_known and not _drawn_alone_over_page(page, image_w, image_h):
        return None
    if _components(doc, xref) not in (1, 3):
        return None
    return raw_stream(doc, xref), image_w, image_h


def raw_stream(doc: pymupdf.Document, xref: int) -> bytes:
    """`doc.xref_stream_raw(xref)`: the stream's bytes as stored, read from the file itself where they lie
    there whole (the file `open_document` opened, unchanged; not encrypted; a plain Length). MuPDF's own
    read of a scan, in small chunks into a growing buffer and then copied, costs about ten times as much:
    over a millisecond."""
    kind, length = doc.xref_get_key(xref, "Length")
    if kind == "int" and doc.xref_get_key(-1, "Encrypt")[0] == "null":
        pdf = pymupdf.mupdf.pdf_document_from_fz_document(doc.this)
        # Where MuPDF found the stream's data when it parsed the object (which get_images did).
        start = pymupdf.mupdf.ll_pdf_get_xref_entry_no_null(pdf.m_internal, xref).stm_ofs
        if start > 0 and (data := read_opened(doc, start, int(length))) is not None:
            return data
    return doc.xref_stream_raw(xref)


def _drawn_alone_over_page(page: pymupdf.Page, image_w: int, image_h: int) -> bool:
    """Whether the page draws nothing but its image, covering the page upright."""
    drawn = [(kind, rect) for kind, rect in page.get_bboxlog() if kind not in INVISIBLE_LOG]
    if [kind for kind, _ in drawn] != ["fill-image"]:
        return False
    box = pymupdf.Rect(drawn[0][1])
    if any(abs(x - y) > COVER_TOLERANCE_PT for x, y in zip(box, page.rect)):
        return False
    # A quarter-turned placement shows up as swapped proportions.
    return abs(image_w / image_h - box.width / box.height) <= 0.02 * box.width / box.height


def _components(doc: pymupdf.Document, xref: int) -> int | None:
    """Colour components of a gray, RGB or ICC-based image; None for anything else."""
    kind, value = doc.xref_get_key(xref, "ColorSpace")
    if kind == "xref":
        value = doc.xref_object(int(value.split()[0]), compressed=True)
    value = value.strip()
    if value in ("/DeviceGray", "/CalGray"):
        return 1
    if value in ("/DeviceRGB", "/CalRGB"):
        return 3
    if value.startswith("[/ICCBased") or value.startswith("[ /ICCBased"):
        icc = int(value.strip("[] ").split()[1])
        n = doc.xref_get_key(icc, "N")[1]
        return int(n) if n.isdigit() else None
    return None


def _decode_scaled(jpeg: bytes, image_w: int, image_h: int, width: int,
                   height: int) -> tuple[np.ndarray, np.ndarray | None]:
    """The JPEG's luma as MuPDF's render decodes it, scaled to width x height with MuPDF's scaler,
    and the full-size decode where there was one.

    At full size libjpeg-turbo decodes exactly as MuPDF's own libjpeg does, and faster. A reduced
    decode is a different image in each library (libjpeg-turbo's is softer: sigma up to 1.1 low on
    real 300-dpi newspaper scans), so a reduced decode is MuPDF's.
    """
    reduction = render_reduction(image_w, image_h, width, height)
    gray = decode_gray(jpeg) if reduction == 0 else _mupdf_decode_reduced(jpeg, image_w, image_h, reduction)
    scan = gray if reduction == 0 else None
    if gray.shape == (height, width):
        return gray, scan
    return reference_resize(gray, width, height), scan


def decode_gray(jpeg: bytes) -> np.ndarray:
    """The JPEG's luma at full size, by libjpeg-turbo."""
    gray = cv2.imdecode(np.frombuffer(jpeg, np.uint8), cv2.IMREAD_GRAYSCALE | cv2.IMREAD_IGNORE_ORIENTATION)
    if gray is None:
        raise ValueError("the embedded JPEG cannot be decoded")
    return gray


def reference_resize(gray: np.ndarray, width: int, height: int) -> np.ndarray:
    """A decoded scan brought to the reference size."""
    return mupdf_resize(gray, width, height)


def render_reduction(image_w: int, image_h: int, width: int, height: int) -> int:
    """log2 of the reduction MuPDF decodes an image at when drawing it at width x height: the largest
    that keeps it at least 2 pixels larger than the target (fz_get_pixmap_from_image)."""
    reduction = 0
    while (image_w >> (reduction + 1)) >= width + 2 and (image_h >> (reduction + 1)) >= height + 2:
        reduction += 1
    return reduction


def _mupdf_decode_reduced(jpeg: bytes, image_w: int, image_h: int, reduction: int) -> np.ndarray:
    """The JPEG decoded by MuPDF's libjpeg at 1/2**reduction of its size, as luma."""
    mupdf = pymupdf.mupdf
    stream = mupdf.fz_open_buffer(mupdf.fz_new_buffer_from_copied_data(jpeg))
    decoded = mupdf.fz_read_all(mupdf.fz_open_dctd(stream, -1, 0, reduction, mupdf.FzStream()), 0)
    # Read in place: copying the decoded buffer out to bytes (fz_buffer_extract) cost a fifth of the decode.
    # The view lives no longer than `decoded`: what is returned is always a new array.
    samples = np.frombuffer(mupdf.fz_buffer_storage_memoryview(decoded), np.uint8)
    step = 1 << reduction
    w, h = (image_w + step - 1) >> reduction, (image_h + step - 1) >> reduction
    if samples.size not in (w * h, 3 * w * h):
        raise ValueError("the embedded JPEG cannot be decoded")
    if samples.size == w * h:
        return samples.reshape(h, w).copy()
    # RGB, then OpenCV's weights, as the reference (the JPEG's own Y rounds differently).
    return cv2.cvtColor(samples.reshape(h, w, 3), cv2.COLOR_RGB2GRAY)


def mupdf_resize(gray: np.ndarray, width: int, height: int) -> np.ndarray:
    """Resize with MuPDF's own scaler, the filter its page render applies to images.

    Its filter is the "simple" cubic 1 - 3d² + 2|d|³ over one output pixel each side (F source pixels
    when shrinking by F), weights in 1/256ths, rows then columns rounded to bytes. No OpenCV resize
    matches it: at F near 1.04 (300-dpi scans decoded at half size) its output is sharper than an area or
    a bilinear resize (sigma 0.7 to 1.1 higher on newspaper pages), at F near 1.4 (200 dpi) softer than a
    bilinear one (up to 3 lower). Its exact weights applied as SciPy sparse products give the same pixels
    but cost twice its time."""
    source = pymupdf.Pixmap(pymupdf.csGRAY, pymupdf.IRect(0, 0, gray.shape[1], gray.shape[0]), False)
    np.copyto(np.frombuffer(source.samples_mv, np.uint8).reshape(gray.shape), gray)
    # pymupdf.Pixmap(source, w, h) keeps an extra reference to its result and leaks it (1.28.2);
    # the low-level call hands the new pixmap over with a single owner.
    scaled = pymupdf.Pixmap("raw", pymupdf.mupdf.FzPixmap(
        pymupdf.mupdf.ll_fz_scale_pixmap(source.this.m_internal, 0, 0, width, height, None)))
    del source  # before the copy below: a broadsheet's scan is 30 MB at 200 dpi, and the page's peak is here
    return np.frombuffer(scaled.samples_mv, np.uint8).reshape(scaled.h, scaled.w).copy()


def thumbnail_jpeg(image: np.ndarray) -> bytes:
    """A JPEG thumbnail of a gray or RGB image, THUMBNAIL_SIDE on its long side."""
    h, w = image.shape[:2]
    scale = THUMBNAIL_SIDE / max(h, w)
    if scale < 1:
        image = area_resize(image, (max(1, round(w * scale)), max(1, round(h * scale))))
    if image.ndim == 3:
        image = cv2.cvtColor(image, cv2.COLOR_RGB2BGR)  # OpenCV writes BGR
    ok, data = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, THUMBNAIL_QUALITY])
    return data.tobytes()
