"""Read a page's picture at the resolution its exported image needs, and no more.

A page that is one plain JPEG scan is not rendered: its JPEG is decoded by libjpeg-turbo (simplejpeg,
straight into one NumPy array that the resize reads without a copy; the same pixels as Pillow's
decode) at the smallest of its scaled-IDCT reductions (1/8, 1/4, 1/2) that still covers the output,
which skips most of the decoding work and the page render, and keeps the scan's own pixels (no MuPDF
resampling before ours). libjpeg's 3/8 step, between 1/4 and 1/2, is not used: its IDCT has no SIMD, so it costs
what it saves the resize, and its image ends mid-pixel of the scan (bench/bench_export.py).
Anything else (vector art, several images, masks, CMYK, rotation) is rendered by MuPDF at just the
resolution the output needs, and only the part of the page that is kept.

A `region` (the picture of `crop="picture"`, as fractions of the page) narrows the kept part
before the resolution is worked out: a plate is read at the resolution its own output needs.
"""

from __future__ import annotations

import contextlib
import math
import threading
from dataclasses import dataclass

import numpy as np
import pymupdf
import simplejpeg
from PIL import Image

from ..scoring.scorer import full_page_jpeg
from .geometry import Plan, Region, plan_image
from .settings import ExportSettings

# A render larger than this (a long strip cropped at a large size) is made at a lower resolution and
# enlarged by the resize instead: memory stays bounded whatever the page's shape.
MAX_RENDER_PIXELS = 64_000_000
REDUCTIONS = (8, 4, 2, 1)  # libjpeg's scaled IDCTs with SIMD, as Pillow's draft() chooses among them
# Colour is decoded as RGBX, which the resize reads in place (shape._resize); CMYK, YCCK: MuPDF converts those.
DECODED_COLOURS = {"YCbCr": "RGBX", "RGB": "RGBX", "Gray": "GRAY"}


@dataclass
class Source:
    """A picture of the page that covers `plan.box` at `plan.scale` or better."""

    image: np.ndarray  # height x width x bands (a scan: 4, RGBX, or 1 for gray; a render: 3), uint8
    box: tuple[float, float, float, float]  # the plan's box in `image`'s pixels
    plan: Plan
    method: str  # "jpeg" (the embedded scan) or "render"
    pixmap: pymupdf.Pixmap | None = None  # a render's pixels, which `image` shares without a copy
    # The source's own pixels per unit of the plan: 1 for a scan (the plan is in its pixels); for a render, the
    # sharpest scanned image under the kept part (its pixels per point); None when no image is under it (vector
    # art and text: sharp at any size).
    native: float | None = 1.0

    @property
    def size(self) -> tuple[int, int]:
        return self.image.shape[1], self.image.shape[0]

    @property
    def native_side(self) -> int | None:
        """The kept part's shorter side in the source's own pixels (None: drawn, sharp at any size)."""
        return native_side(self.plan, self.native)

    @property
    def upscale(self) -> float:
        """How many times the kept part is enlarged from the source's own pixels (1.0: not enlarged)."""
        return upscale(self.plan, self.native)


def native_side(plan: Plan, native: float | None) -> int | None:
    if native is None:
        return None
    x0, y0, x1, y1 = plan.box
    return round(min(x1 - x0, y1 - y0) * native)


def upscale(plan: Plan, native: float | None) -> float:
    return 1.0 if native is None else max(1.0, plan.scale / native)


def measure_source(doc: pymupdf.Document, number: int, settings: ExportSettings, *,
                   region: Region | None = None, known_scan: bool = False) -> tuple[int | None, float]:
    """What `read_source` would give for the kept part, without decoding or drawing a pixel: its shorter
    side in the source's own pixels (None: drawn) and how many times the export enlarges it. It reads
    the scan's header (or, for a render, where the page's images lie), so an export's figures can be
    counted on every image it writes (a scan libjpeg then fails to decode is rendered instead; counted
    here as the scan)."""
    page = doc[number]
    scan = full_page_jpeg(doc, page, drawing_known=known_scan, exact_colours=True)
    plan = _scan_plan(scan[0], settings, region) if scan is not None else None
    if plan is not None:
        return native_side(plan, 1.0), upscale(plan, 1.0)
    rect = page.rect
    plan = plan_image(rect.width, rect.height, settings, region)
    x0, y0, x1, y1 = plan.box
    native = _native_resolution(page, pymupdf.Rect(rect.x0 + x0, rect.y0 + y0, rect.x0 + x1, rect.y0 + y1))
    return native_side(plan, native), upscale(plan, native)


def _scan_plan(jpeg: bytes, settings: ExportSettings, region: Region | None) -> Plan | None:
    """The plan for a scan `_decode_scan` decodes, from its header; None when it is rendered instead."""
    try:
        height, width, colours, _ = simplejpeg.decode_jpeg_header(jpeg)
    except ValueError:  # not a JPEG libjpeg reads: MuPDF may still draw something
        return None
    # Pillow's guard against decompression bombs: MuPDF reads such a scan reduced as it decodes.
    if colours not in DECODED_COLOURS or width * height > 2 * (Image.MAX_IMAGE_PIXELS or math.inf):
        return None
    return plan_image(width, height, settings, region)


def read_source(doc: pymupdf.Document, number: int, settings: ExportSettings, *, use_scan: bool = True,
                region: Region | None = None, known_scan: bool = False) -> Source:
    """Page `number`'s picture for `settings`, or of its `region` only; `use_scan=False` renders even a
    scan page (to compare). `known_scan`: ingest found the page one plain JPEG covering it, in this
    file unchanged, so only its image is checked again (scorer.full_page_jpeg)."""
    page = doc[number]
    scan = full_page_jpeg(doc, page, drawing_known=known_scan, exact_colours=True) if use_scan else None
    if scan is not None:
        source = _decode_scan(scan[0], settings, region)
        if source is not None:
            return source
    return _render(page, settings, region)


def _decode_scan(jpeg: bytes, settings: ExportSettings, region: Region | None = None) -> Source | None:
    """The scan decoded at the smallest libjpeg reduction that covers the plan; None if it cannot be."""
    plan = _scan_plan(jpeg, settings, region)
    if plan is None:
        return None
    height, width, colours, _ = simplejpeg.decode_jpeg_header(jpeg)
    reduction = _reduction(width, height, (math.ceil(width * plan.scale), math.ceil(height * plan.scale)))
    shape = (-(-height // reduction), -(-width // reduction))
    try:
        decoded = _decoded(jpeg, DECODED_COLOURS[colours], shape)
    except ValueError:  # truncated or corrupt: MuPDF may still draw what it can
        return None
    if decoded.shape[:2] != shape:
        return None
    return Source(decoded, _scaled_box(plan, 1 / reduction, shape), plan, "jpeg")


_LAST_SCAN = threading.local()  # within scans_decoded_once: (jpeg, colours, shape) and its pixels


@contextlib.contextmanager
def scans_decoded_once():
    """Within it, the scan last decoded (in this thread) is kept for the next image read from the same page at
    the same reduction: a page's pictures come one after another in the export's order, and each decoded it
    whole again (a screen of the Export preview holding seven pictures of one page decoded it seven times).
    The pixels are the same; one scan is held, and none once it is left."""
    _LAST_SCAN.kept, _LAST_SCAN.on = None, True
    try:
        yield
    finally:
        _LAST_SCAN.kept, _LAST_SCAN.on = None, False


def _decoded(jpeg: bytes, colours: str, shape: tuple[int, int]) -> np.ndarray:
    """The scan decoded at the smallest of libjpeg's scales giving at least `shape` (exactly 1 / reduction); read
    only by its callers, so that scans_decoded_once may hand the same pixels out again."""
    key = (jpeg, colours, shape)
    kept = getattr(_LAST_SCAN, "kept", None) if getattr(_LAST_SCAN, "on", False) else None
    if kept is not None and kept[0] == key:
        return kept[1]
    decoded = simplejpeg.decode_jpeg(jpeg, colours, min_height=shape[0], min_width=shape[1])
    if getattr(_LAST_SCAN, "on", False):
        decoded.flags.writeable = False  # a reader that wrote into it would change the next image cut from it
        _LAST_SCAN.kept = (key, decoded)
    return decoded


def _reduction(width: int, height: int, needed: tuple[int, int]) -> int:
    """The largest of libjpeg's SIMD reductions whose result still covers `needed` (Pillow's draft())."""
    scale = min(width // max(1, needed[0]), height // max(1, needed[1]))
    return next((factor for factor in REDUCTIONS if scale >= factor), 1)


def _scaled_box(plan: Plan, reduction: float, shape: tuple[int, int]) -> tuple[float, float, float, float]:
    height, width = shape
    return tuple(min(limit, value * reduction) for value, limit in zip(plan.box, (width, height, width, height)))


def _render(page: pymupdf.Page, settings: ExportSettings, region: Region | None = None) -> Source:
    rect = page.rect
    plan = plan_image(rect.width, rect.height, settings, region)
    x0, y0, x1, y1 = plan.box
    zoom = plan.scale
    area = (x1 - x0) * (y1 - y0) * zoom * zoom
    if area > MAX_RENDER_PIXELS:
        zoom *= math.sqrt(MAX_RENDER_PIXELS / area)
    clip = pymupdf.Rect(rect.x0 + x0, rect.y0 + y0, rect.x0 + x1, rect.y0 + y1)
    # Moved by under a pixel so the kept part starts on a whole pixel: the resize then samples the
    # render where Pillow would (shape.lanczos_resize), even when it barely shrinks.
    shift_x, shift_y = math.ceil(clip.x0 * zoom) - clip.x0 * zoom, math.ceil(clip.y0 * zoom) - clip.y0 * zoom
    matrix = pymupdf.Matrix(zoom, 0, 0, zoom, shift_x, shift_y)
    pixmap = page.get_pixmap(matrix=matrix, clip=clip, alpha=False, colorspace=pymupdf.csRGB)
    rows = np.frombuffer(pixmap.samples_mv, np.uint8).reshape(pixmap.height, pixmap.stride)
    image = rows[:, :pixmap.width * 3].reshape(pixmap.height, pixmap.width, 3)
    # The pixmap covers the clip rounded outwards to whole pixels; place the box inside it.
    box = (
        max(0.0, clip.x0 * zoom + shift_x - pixmap.x),
        max(0.0, clip.y0 * zoom + shift_y - pixmap.y),
        min(float(pixmap.width), clip.x1 * zoom + shift_x - pixmap.x),
        min(float(pixmap.height), clip.y1 * zoom + shift_y - pixmap.y),
    )
    return Source(image, box, plan, "render", pixmap, native=_native_resolution(page, clip))


def _native_resolution(page: pymupdf.Page, clip: pymupdf.Rect) -> float | None:
    """Pixels per point of the sharpest image drawn under `clip` (None when none is: vector art, text)."""
    sharpest = None
    for info in page.get_image_info():
        bbox = pymupdf.Rect(info["bbox"])
        if bbox.is_empty or not bbox.intersects(clip):
            continue
        resolution = min(info["width"] / bbox.width, info["height"] / bbox.height)
        sharpest = resolution if sharpest is None else max(sharpest, resolution)
    return sharpest
