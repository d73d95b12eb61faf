"""Turn a page's picture into the training image: Lanczos-3 resize, pad or crop, RGB JPEG.

The resize is libvips' Lanczos-3 reduction, the filter of Pillow's LANCZOS in SIMD fixed point: a third
of Pillow's time or less for the same picture (bench/bench_export.py), the same output on every run
whatever the number of threads, each output pixel where Pillow puts it. Pillow still enlarges: libvips
has no Lanczos-3 for that, and a scan below the output's resolution is rare. Decoding and encoding are
libjpeg-turbo's through simplejpeg, faster here than libvips' own JPEG load and save, and than Pillow's
(which adds a copy each way). The pixels go from the decoder to libvips to the encoder as NumPy arrays
that libvips reads and writes in place: no copy between the steps.
"""

from __future__ import annotations

import math

import cv2
import numpy as np
import pyvips
import simplejpeg
from PIL import Image

from .settings import ExportSettings
from .source import Source

PAPER_SAMPLE_SIDE = 64  # the paper colour is judged on a thumbnail about this big
PAPER_SHARE_PERCENT = 20
JPEG_SUBSAMPLING = "420"  # Pillow's default, fixed so an upgrade cannot change the output
LANCZOS_SUPPORT = 3  # Lanczos-3 reaches 3 output pixels either side
ALIGN_TRIES = 32  # how many outputs early a reduction may start, to land on a box's fractional origin

# The export's parallelism is its pool of processes: libvips' own threads would only compete with them
# for the cores. Its operation cache would keep every page's pixels alive; each is resized once.
pyvips.concurrency_set(1)
pyvips.cache_set_max(0)


def shape_image(source: Source, settings: ExportSettings) -> np.ndarray:
    """The exported image (height x width x RGB): the plan's box resized with Lanczos-3, centred on a
    margin when padded."""
    plan = source.plan
    part = lanczos_resize(source.image, plan.size, source.box)
    if plan.padded:
        (left, top), (width, height) = plan.offset, plan.canvas
        right, bottom = width - left - part.shape[1], height - top - part.shape[0]
        fill = _pad_fill(part, settings.pad_colour)
        # One pass writing margin and picture; filling a canvas first and pasting costs 40 times more.
        part = cv2.copyMakeBorder(part, top, bottom, left, right, cv2.BORDER_CONSTANT, value=fill)
    return part if part.ndim == 3 and part.shape[2] == 3 else cv2.cvtColor(part, cv2.COLOR_GRAY2RGB)


def lanczos_resize(image: np.ndarray, size: tuple[int, int], box: tuple[float, float, float, float]) -> np.ndarray:
    """`image` (height x width x bands) as Pillow's `resize(size, LANCZOS, box=box)` makes it, by libvips when
    it shrinks both ways (see the module)."""
    x0, y0, x1, y1 = box
    height, width, bands = image.shape
    hshrink, vshrink = (x1 - x0) / size[0], (y1 - y0) / size[1]
    if hshrink < 1 or vshrink < 1:
        picture = Image.fromarray(image[..., 0] if bands == 1 else image)
        return np.asarray(picture.resize(size, Image.Resampling.LANCZOS, box=box)).reshape(size[1], size[0], bands)
    left, span_width, skip_x = _aligned_span(x0, x1, hshrink, size[0], width)
    top, span_height, skip_y = _aligned_span(y0, y1, vshrink, size[1], height)
    pixels = pyvips.Image.new_from_memory(np.ascontiguousarray(image).data, width, height, bands, "uchar")
    if left + span_width > width or top + span_height > height:  # past the edge: its pixels repeated
        pixels = pixels.embed(0, 0, max(width, left + span_width), max(height, top + span_height), extend="copy")
    part = pixels.crop(left, top, span_width, span_height).reduce(hshrink, vshrink, kernel="lanczos3")
    part = part.crop(skip_x, skip_y, *size)
    return np.ndarray((size[1], size[0], bands), np.uint8, part.write_to_memory())


def _aligned_span(origin: float, end: float, shrink: float, count: int, limit: int) -> tuple[int, int, int]:
    """The span of source pixels libvips reduces (start, length) and how many of its first outputs to drop,
    so that the next `count` outputs are centred where Pillow centres the box's: `origin + shrink / 2`
    onwards, `shrink` apart.

    libvips' span starts at a whole pixel, a box rarely does (a centred crop, a picture's region), and it
    centres its `round(length / shrink)` outputs on the span, which moves them by half the length they
    overrun or fall short of it. Starting a few outputs early, a pixel either way, and a few pixels longer
    or not, gives choices of where the outputs fall; the nearest to Pillow's is within a small fraction of
    a pixel. The span reaches the kernel's reach past both ends of the box where the picture goes on, so
    the edge outputs read the pixels around the box, as Pillow's do; past the picture's own edge it may
    reach further, over its edge pixels repeated (what libvips reads there anyway).
    """
    first = min(LANCZOS_SUPPORT, int(origin // shrink))
    reach = min(limit, math.ceil(end + LANCZOS_SUPPORT * shrink))
    best = None
    for skip in range(first, first + ALIGN_TRIES):
        target = origin - skip * shrink  # where the span's first output starts
        for start in {math.floor(target), math.ceil(target)}:
            for stop in range(reach, reach + 2 * math.ceil(shrink) + 5):
                length = stop - start
                outputs = round(length / shrink)
                if start < 0 or outputs < skip + count:
                    continue
                shift = (outputs * shrink - length) / 2  # libvips centres its outputs on the span
                error = abs(start - shift - target)
                if best is None or error < best[0]:
                    best = (error, start, length, skip)
    if best is None:  # a box flush with the picture's edge, and a span too short for any choice
        return 0, reach, 0
    return best[1:]


def _pad_fill(part: np.ndarray, pad_colour: str):
    rgb = paper_colour(part) if pad_colour == "paper" else tuple(int(pad_colour[i:i + 2], 16) for i in (1, 3, 5))
    return rgb if part.shape[2] == 3 else round(0.299 * rgb[0] + 0.587 * rgb[1] + 0.114 * rgb[2])


def paper_colour(image) -> tuple[int, int, int]:
    """The colour of the paper (`image`: RGB or gray, height x width [x bands], or a PIL image): the median
    colour of the brightest fifth of the page.

    Paper is the brightest large area of a scan. Its brightest fifth is paper on a text page and on a
    densely hatched plate between dark scanner-bed bands alike (where half the page is ink or bed),
    and the thumbnail's averaging keeps grain and specks from lifting it.
    """
    pixels = np.asarray(image)
    factor = max(1, min(pixels.shape[:2]) // PAPER_SAMPLE_SIDE)
    height, width = (side // factor * factor for side in pixels.shape[:2])
    thumbnail = cv2.resize(pixels[:height, :width], (width // factor, height // factor), interpolation=cv2.INTER_AREA)
    pixels = thumbnail.reshape(thumbnail.shape[0], thumbnail.shape[1], -1).astype(np.float32)
    pixels = np.repeat(pixels, 3, axis=2) if pixels.shape[2] == 1 else pixels
    pixels = pixels.reshape(-1, 3)
    luma = pixels @ np.array([0.299, 0.587, 0.114], np.float32)
    bright = pixels[luma >= np.percentile(luma, 100 - PAPER_SHARE_PERCENT)]
    return tuple(int(round(v)) for v in np.median(bright, axis=0))


def encode_jpeg(image: np.ndarray, quality: int) -> bytes:
    """An RGB image (height x width x 3) as a baseline JPEG, 4:2:0, libjpeg's tables at `quality`."""
    return simplejpeg.encode_jpeg(np.ascontiguousarray(image), quality, "RGB", JPEG_SUBSAMPLING)
