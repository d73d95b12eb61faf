"""Read a page's picture at the resolution its exported image needs, and no more.

A page that is one plain JPEG scan is not rendered: its JPEG is decoded by libjpeg-turbo at the
smallest of its scaled-IDCT reductions (1/8, 1/4, 3/8, 1/2) that still covers the output, which skips
most of the decoding work and the page render, and keeps the scan's own pixels (no MuPDF resampling
before ours). The 3/8 step is the one for a letter page scanned at 300 dpi and exported at 1024: it
leaves LANCZOS 957 x 1238 pixels to resize instead of 1275 x 1650, a fifth less work per image. Anything else (vector art, several images, masks, CMYK, rotation) is rendered by
MuPDF at just the resolution the output needs, and only the part of the page that is kept.

A `region` (the picture of `crop="picture"`, as fractions of the page) narrows the kept part
before the resolution is worked out: a plate is read at the resolution its own output needs.
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass

import pymupdf
from PIL import Image, ImageFile

from ..scorer import full_page_jpeg
from .geometry import Plan, Region, plan_image
from .settings import ExportSettings

# A render larger than this (a long strip cropped at a large size) is made at a lower resolution and
# enlarged by the resize instead: memory stays bounded whatever the page's shape.
MAX_RENDER_PIXELS = 64_000_000
# libjpeg's 3/8 scaled IDCT between 1/4 and 1/2 (see _at_three_eighths): a fifth less CPU per 300 dpi page,
# 1.1 dB further from a full-resolution decode than 1/2 is (bench/bench_export.py). False: 1/8, 1/4, 1/2 only.
THREE_EIGHTHS = True


@dataclass
class Source:
    """A picture of the page that covers `plan.box` at `plan.scale` or better."""

    image: Image.Image
    box: tuple[float, float, float, float]  # the plan's box in `image`'s pixels
    plan: Plan
    method: str  # "jpeg" (the embedded scan) or "render"
    pixmap: pymupdf.Pixmap | None = None  # a render's pixels, which `image` shares without a copy


def read_source(doc: pymupdf.Document, number: int, settings: ExportSettings, *, use_scan: bool = True,
                region: Region | None = None) -> Source:
    """Page `number`'s picture for `settings`, or of its `region` only; `use_scan=False` renders even a
    scan page (to compare)."""
    page = doc[number]
    scan = full_page_jpeg(doc, page) if use_scan else None
    if scan is not None and _plain_decode(doc, page):
        source = _decode_scan(scan[0], settings, region)
        if source is not None:
            return source
    return _render(page, settings, region)


def _plain_decode(doc: pymupdf.Document, page: pymupdf.Page) -> bool:
    """A /DecodeParms (ColorTransform) changes the colours MuPDF shows; such scans are rendered."""
    xref = page.get_images(full=True)[0][0]
    return doc.xref_get_key(xref, "DecodeParms")[0] == "null"


def _decode_scan(jpeg: bytes, settings: ExportSettings, region: Region | None = None) -> Source | None:
    """The scan decoded at the smallest libjpeg reduction that covers the plan; None if it cannot be."""
    try:
        image = Image.open(io.BytesIO(jpeg))
    except Image.DecompressionBombError:  # MuPDF reads it reduced as it decodes, at the size the output needs
        return None
    width, height = image.size
    plan = plan_image(width, height, settings, region)
    if THREE_EIGHTHS and 1 / 4 < plan.scale <= 3 / 8 and image.mode in ("RGB", "L"):
        decoded = _load(_at_three_eighths(image))
        if decoded is not None:
            return Source(decoded, _scaled_box(plan, 3 / 8, decoded), plan, "jpeg")
        image = Image.open(io.BytesIO(jpeg))  # the decoder refused the request: the usual reductions
    # draft() picks the largest reduction whose result is still at least this size.
    needed = (math.ceil(width * plan.scale), math.ceil(height * plan.scale))
    drafted = image.draft("RGB", needed)
    if image.mode not in ("RGB", "L"):  # CMYK, YCCK: leave the colour conversion to MuPDF
        return None
    reduction = drafted[1][2] / width if drafted else 1.0
    decoded = _load(image)  # None when truncated or corrupt: MuPDF may still draw what it can
    return None if decoded is None else Source(decoded, _scaled_box(plan, reduction, decoded), plan, "jpeg")


def _load(image: Image.Image | None) -> Image.Image | None:
    if image is None:
        return None
    try:
        image.load()
    except (OSError, SyntaxError, ValueError):  # truncated, corrupt, or a scale the decoder refuses
        return None
    return image


def _scaled_box(plan: Plan, reduction: float, image: Image.Image) -> tuple[float, float, float, float]:
    return tuple(min(limit, value * reduction) for value, limit in zip(plan.box, (*image.size, *image.size)))


def _at_three_eighths(image: Image.Image) -> Image.Image | None:
    """`image` (a JPEG not loaded yet) set to decode at 3/8 of its size, or None if it cannot be.

    libjpeg-turbo scales its IDCT to any of 1/8 ... 8/8; Pillow's draft() asks only for 1/1, 1/2, 1/4
    or 1/8, but its decoder hands libjpeg any scale_denom, and libjpeg answers a denominator of 3 with
    the smallest scale of at least 1/3: 3/8, an image of ceil(width * 3 / 8) x ceil(height * 3 / 8). Each
    output pixel covers 8/3 source pixels exactly, so the plan's box scales by 3/8. This is the setup
    draft() itself does, with the other denominator (Pillow 13).
    """
    if len(image.tile) != 1 or getattr(image, "decoderconfig", None) or not hasattr(image, "_size"):
        return None
    decoder, extents, offset, args = image.tile[0]
    if decoder != "jpeg" or tuple(extents or ()) != (0, 0, *image.size):
        return None
    size = (-(-image.size[0] * 3 // 8), -(-image.size[1] * 3 // 8))
    image.tile = [ImageFile._Tile(decoder, (0, 0, *size), offset, args)]
    image._size = size
    image.decoderconfig = (3, 0)  # (scale_denom, draft mode), as draft() sets it
    return image


def _render(page: pymupdf.Page, settings: ExportSettings, region: Region | None = None) -> Source:
    rect = page.rect
    plan = plan_image(rect.width, rect.height, settings, region)
    x0, y0, x1, y1 = plan.box
    zoom = plan.scale
    area = (x1 - x0) * (y1 - y0) * zoom * zoom
    if area > MAX_RENDER_PIXELS:
        zoom *= math.sqrt(MAX_RENDER_PIXELS / area)
    clip = pymupdf.Rect(rect.x0 + x0, rect.y0 + y0, rect.x0 + x1, rect.y0 + y1)
    pixmap = page.get_pixmap(matrix=pymupdf.Matrix(zoom, zoom), clip=clip, alpha=False, colorspace=pymupdf.csRGB)
    image = Image.frombuffer("RGB", (pixmap.width, pixmap.height), pixmap.samples_mv, "raw", "RGB", pixmap.stride, 1)
    # The pixmap covers the clip rounded outwards to whole pixels; place the box inside it.
    box = (
        max(0.0, clip.x0 * zoom - pixmap.x),
        max(0.0, clip.y0 * zoom - pixmap.y),
        min(float(pixmap.width), clip.x1 * zoom - pixmap.x),
        min(float(pixmap.height), clip.y1 * zoom - pixmap.y),
    )
    return Source(image, box, plan, "render", pixmap)
