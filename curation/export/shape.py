"""Turn a page's picture into the training image: LANCZOS resize, pad or crop, RGB JPEG."""

from __future__ import annotations

import io

import numpy as np
from PIL import Image

from .settings import ExportSettings
from .source import Source

PAPER_SAMPLE_SIDE = 64  # the paper colour is judged on a thumbnail about this big
PAPER_SHARE_PERCENT = 20
JPEG_SUBSAMPLING = "4:2:0"  # what Pillow does by default, fixed so a Pillow upgrade cannot change the output


def shape_image(source: Source, settings: ExportSettings) -> Image.Image:
    """The exported image: the plan's box resized with LANCZOS, centred on a margin when padded."""
    plan = source.plan
    part = source.image.resize(plan.size, Image.Resampling.LANCZOS, box=source.box)
    if plan.padded:
        canvas = Image.new(part.mode, plan.canvas, _pad_fill(part, settings.pad_colour))
        canvas.paste(part, plan.offset)
        part = canvas
    return part if part.mode == "RGB" else part.convert("RGB")


def _pad_fill(part: Image.Image, pad_colour: str):
    rgb = paper_colour(part) if pad_colour == "paper" else tuple(int(pad_colour[i:i + 2], 16) for i in (1, 3, 5))
    return rgb if part.mode == "RGB" else round(0.299 * rgb[0] + 0.587 * rgb[1] + 0.114 * rgb[2])


def paper_colour(image: Image.Image) -> tuple[int, int, int]:
    """The colour of the paper: the median colour of the brightest fifth of the page.

    Paper is the brightest large area of a scan. Its brightest fifth is paper on a text page and on a
    densely hatched plate between dark scanner-bed bands alike (where half the page is ink or bed),
    and the thumbnail's averaging keeps grain and specks from lifting it.
    """
    factor = max(1, min(image.size) // PAPER_SAMPLE_SIDE)
    pixels = np.asarray(image.reduce(factor).convert("RGB"), dtype=np.float32).reshape(-1, 3)
    luma = pixels @ np.array([0.299, 0.587, 0.114], np.float32)
    bright = pixels[luma >= np.percentile(luma, 100 - PAPER_SHARE_PERCENT)]
    return tuple(int(round(v)) for v in np.median(bright, axis=0))


def encode_jpeg(image: Image.Image, quality: int) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, "JPEG", quality=quality, subsampling=JPEG_SUBSAMPLING)
    return buffer.getvalue()
