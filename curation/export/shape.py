"""Turn a page's picture into the training image: Lanczos-3 resize, pad or crop, RGB JPEG.

The resize is libvips' Lanczos-3 reduction, the filter of Pillow's LANCZOS in SIMD fixed point: a third
of Pillow's time or less for the same picture (bench/bench_export.py), the same output on every run
whatever the number of threads, each output pixel where Pillow puts it. Pillow still enlarges: libvips
has no Lanczos-3 for that, and a scan below the output's resolution is rare. Decoding and encoding stay
with Pillow's libjpeg-turbo, faster here than libvips' own JPEG load and save.
"""

from __future__ import annotations

import io
import math

import numpy as np
import pyvips
from PIL import Image

from .settings import ExportSettings
from .source import Source

PAPER_SAMPLE_SIDE = 64  # the paper colour is judged on a thumbnail about this big
PAPER_SHARE_PERCENT = 20
JPEG_SUBSAMPLING = "4:2:0"  # what Pillow does by default, fixed so a Pillow upgrade cannot change the output
LANCZOS_SUPPORT = 3  # Lanczos-3 reaches 3 output pixels either side
ALIGN_TRIES = 32  # how many outputs early a reduction may start, to land on a box's fractional origin

# The export's parallelism is its pool of processes: libvips' own threads would only compete with them
# for the cores. Its operation cache would keep every page's pixels alive; each is resized once.
pyvips.concurrency_set(1)
pyvips.cache_set_max(0)


def shape_image(source: Source, settings: ExportSettings) -> Image.Image:
    """The exported image: the plan's box resized with Lanczos-3, centred on a margin when padded."""
    plan = source.plan
    part = lanczos_resize(source.image, plan.size, source.box)
    if plan.padded:
        canvas = Image.new(part.mode, plan.canvas, _pad_fill(part, settings.pad_colour))
        canvas.paste(part, plan.offset)
        part = canvas
    return part if part.mode == "RGB" else part.convert("RGB")


def lanczos_resize(image: Image.Image, size: tuple[int, int], box: tuple[float, float, float, float]) -> Image.Image:
    """`image.resize(size, LANCZOS, box=box)`, by libvips when it shrinks both ways (see the module)."""
    x0, y0, x1, y1 = box
    hshrink, vshrink = (x1 - x0) / size[0], (y1 - y0) / size[1]
    if hshrink < 1 or vshrink < 1:
        return image.resize(size, Image.Resampling.LANCZOS, box=box)
    left, width, skip_x = _aligned_span(x0, x1, hshrink, size[0], image.width)
    top, height, skip_y = _aligned_span(y0, y1, vshrink, size[1], image.height)
    pixels = pyvips.Image.new_from_memory(image.tobytes(), image.width, image.height, len(image.getbands()), "uchar")
    if left + width > image.width or top + height > image.height:  # past the edge: its pixels repeated
        pixels = pixels.embed(0, 0, max(image.width, left + width), max(image.height, top + height), extend="copy")
    part = pixels.crop(left, top, width, height).reduce(hshrink, vshrink, kernel="lanczos3")
    part = part.crop(skip_x, skip_y, *size)
    return Image.frombuffer(image.mode, size, part.write_to_memory(), "raw", image.mode, 0, 1)


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
