"""Turn a page's picture into the training image: Lanczos-3 resize, pad or crop, RGB JPEG.

The resize is fast_image_resize's Lanczos-3 (cykooz-resizer), the filter of Pillow's LANCZOS in AVX2
fixed point, taking the box at its fractional position as Pillow does: about a quarter of Pillow's time and
two thirds of libvips' (which needed its span aligned by hand to put each output pixel where Pillow
does), and nearer Pillow's output than libvips' (bench/bench_export.py), shrinking or enlarging, the
same output on every run. Decoding and encoding are libjpeg-turbo's through simplejpeg, faster here than
Pillow's (which adds a copy each way); the pixels go between the steps as NumPy arrays that each step
reads or writes in place: the scan decoded as RGBX, resized into the canvas, encoded from it.
Colour stays four bands (RGBX) through the resize: fast_image_resize's three-band kernels cost what its four-band
ones do, and its vertical pass (it runs first) over RGB as one wide gray band, then RGBX for the horizontal pass,
gives the same bytes but saves no time at 200 dpi (the conversion between the passes eats the band it saves).
"""

from __future__ import annotations

import math

import cv2
import numpy as np
import simplejpeg
from cykooz_resizer import CropBox, FilterType, ResizeAlg, Resizer, ResizeOptions
from cykooz_resizer.alpha import set_image_mode
from PIL import Image

from .geometry import Plan, Region, picture_in_part
from .settings import ExportSettings
from .source import Source

PAPER_SAMPLE_SIDE = 64  # the paper colour is judged on a thumbnail about this big
PAPER_SHARE_PERCENT = 20
# Ink in the margin around a picture (paper_margin): darker than the paper by a third of the way to the margin's
# darkest tone (its first percentile), and by at least INK_DROP_MIN levels. Show-through and the paper's grain
# stay above it; the type and rules of a faded page fall below it.
INK_SHARE = 1 / 3
INK_DROP_MIN = 24
# A side of the margin with fewer ink pixels than this, or than a 500th of its pixels (a speck, the scan's noise),
# is left as it is.
INK_PIXELS_MIN = 3
INK_PIXELS_SHARE = 1 / 500
JPEG_SUBSAMPLING = "420"  # Pillow's default, fixed so an upgrade cannot change the output
LANCZOS3 = ResizeAlg.convolution(FilterType.lanczos3)
BOX = ResizeAlg.convolution(FilterType.box)
RESIZER = Resizer()  # no thread pool: the export's parallelism is its pool of processes
MASK_RIPPLE = 16  # a mask's weight under this (of 255) is the resize's ripple, not the picture: made 0
# A mask is long runs of one level: zlib's fastest level, unfiltered, is nearly as small as its best and a fifth of
# the default's time (1.5 ms against 6.5 for 1024 x 1024; PNG's row filters find nothing to gain in runs).
MASK_PNG_LEVEL = 1


def shape_image(source: Source, settings: ExportSettings, picture: Region | None = None) -> np.ndarray:
    """The exported image (height x width x RGB): the plan's box resized with Lanczos-3, centred on a
    margin when padded. With `picture` (the picture's own box in the plan's box, fractions of the page), the
    margin around it is paper (`paper_margin`)."""
    plan = source.plan
    bands = 1 if source.image.shape[2] == 1 else 4
    (part_width, part_height), (left, top) = plan.size, plan.offset
    # The resize writes into the canvas where the picture goes; then only the margin is filled.
    canvas, part = _canvas(plan, bands, np.empty)
    _resize_into(source.image, source.box, part)
    if picture is not None:
        paper_margin(part, picture_in_part(plan, picture))
    if plan.padded:
        pixels, fill = _pixel_words(canvas, _pad_fill(part, settings.pad_colour))
        pixels[:top], pixels[top + part_height:] = fill, fill
        pixels[top:top + part_height, :left], pixels[top:top + part_height, left + part_width:] = fill, fill
    if bands == 1:
        canvas = cv2.cvtColor(canvas, cv2.COLOR_GRAY2RGBA)
    return canvas[..., :3]


def shape_mask(mask: np.ndarray | None, region: Region | None, plan: Plan) -> np.ndarray:
    """The exported image's mask (height x width, 255 learned, 0 not), made as `shape_image` makes the image
    under the same `plan`: the part of `mask` (True where learned, spanning `region` of the page in fractions; None
    for the whole page) the plan keeps, resized with Lanczos-3 into the same place on the canvas (its edges come
    out soft, a weight between), the padding 0. `mask` None: the whole part is learned."""
    canvas, part = _canvas(plan, 1, np.zeros)
    if mask is None or not mask.size:
        part[...] = 255 if mask is None else 0
        return canvas[..., 0]
    (page_width, page_height), (x0, y0, x1, y1) = plan.page, plan.box
    rx0, ry0, rx1, ry1 = region or (0.0, 0.0, 1.0, 1.0)
    height, width = mask.shape
    sx, sy = width / ((rx1 - rx0) * page_width), height / ((ry1 - ry0) * page_height)
    left, top = rx0 * page_width, ry0 * page_height
    box = (min(width, max(0.0, (x0 - left) * sx)), min(height, max(0.0, (y0 - top) * sy)),
           min(width, max(0.0, (x1 - left) * sx)), min(height, max(0.0, (y1 - top) * sy)))
    if box[2] - box[0] <= 0 or box[3] - box[1] <= 0:
        return canvas[..., 0]
    _resize_into((mask.view(np.uint8) * np.uint8(255))[..., None], box, part)
    # Lanczos' second lobe leaves faint ripples a few pixels out on the unlearned side: they are made 0.
    cv2.threshold(part, MASK_RIPPLE, 0, cv2.THRESH_TOZERO, dst=part)
    return canvas[..., 0]


def _canvas(plan: Plan, bands: int, make) -> tuple[np.ndarray, np.ndarray]:
    """The image's canvas (`make`: np.empty or np.zeros) and the part of it the resized source goes into."""
    (width, height), (part_width, part_height), (left, top) = plan.canvas, plan.size, plan.offset
    canvas = make((height, width, bands), np.uint8)
    return canvas, canvas[top:top + part_height, left:left + part_width]


def encode_mask(mask: np.ndarray) -> bytes:
    """A mask (height x width, 0..255) as a gray PNG: what sd-scripts and OneTrainer read (each reads a gray
    image as its own weight: 255 learned, 0 not)."""
    ok, data = cv2.imencode(".png", mask, [cv2.IMWRITE_PNG_COMPRESSION, MASK_PNG_LEVEL,
                                           cv2.IMWRITE_PNG_FILTER, cv2.IMWRITE_PNG_FILTER_NONE])
    if not ok:
        raise ValueError("the mask could not be encoded as PNG")
    return data.tobytes()


def paper_margin(part: np.ndarray, picture: tuple[int, int, int, int]) -> None:
    """Each side of the margin around `picture` (x0, y0, x1, y1 in `part`'s pixels; `part`: gray or RGBX) that
    holds ink made the paper's colour, in place; the picture's own pixels are left as they are.

    The margin is cut from the page around the picture's box, and on a page set close (a newspaper, a plate set
    into text) it reaches a neighbouring column, a headline or a rule: a trainer would learn those as part of
    the picture. Ink is what is darker than the margin's brightest fifth (paper, and the resize's bright halo
    beside dark strokes) by a third of the way to its darkest tone, and by at least INK_DROP_MIN levels; the
    paper's colour is the median of the rest (the halo would lighten the brightest fifth's; the picture's tones
    would darken the whole part's). The top and bottom sides run the part's width (the corners are theirs),
    left and right lie between them; a side is filled whole, so no grey fringe of a letter is left, and a side
    of paper is left as it is. A picture whose box stops short of its own ink loses what lies past the box on a
    side that is filled."""
    x0, y0, x1, y1 = picture
    sides = [side for side in (part[:y0], part[y1:], part[y0:y1, :x0], part[y0:y1, x1:]) if side.size]
    if not sides:
        return
    lumas = [side[..., 0] if side.shape[2] == 1 else cv2.cvtColor(side, cv2.COLOR_RGBA2GRAY) for side in sides]
    ring = np.concatenate([luma.ravel() for luma in lumas])
    levels = np.cumsum(np.bincount(ring, minlength=256))
    paper_luma, darkest = _level_at(levels, 1 - PAPER_SHARE_PERCENT / 100), _level_at(levels, 0.01)
    ink_below = paper_luma - max(INK_DROP_MIN, INK_SHARE * (paper_luma - darkest))
    inked = [side for side, luma in zip(sides, lumas)
             if np.count_nonzero(luma < ink_below) >= max(INK_PIXELS_MIN, INK_PIXELS_SHARE * luma.size)]
    if not inked:
        return
    pixels = np.concatenate([side.reshape(-1, side.shape[2]) for side in sides])[ring >= ink_below]
    paper = tuple(_level_at(np.cumsum(np.bincount(pixels[:, band], minlength=256)), 0.5)
                  for band in range(min(3, pixels.shape[1])))
    for side in inked:
        pixels, fill = _pixel_words(side, paper[0] if len(paper) == 1 else (*paper[:3], 0))
        pixels[...] = fill


def _level_at(cumulative: np.ndarray, share: float) -> int:
    """The level under which `share` of the pixels lie, from their levels' cumulative counts (a histogram's
    percentile: no sort of the pixels themselves)."""
    return int(np.searchsorted(cumulative, share * cumulative[-1]))


def _pixel_words(image: np.ndarray, fill) -> tuple[np.ndarray, object]:
    """`image` (gray or RGBX) as one value a pixel, and `fill` (a level, or an RGBX tuple) as such a value: NumPy
    fills 32-bit words ten times faster than 4-byte tuples."""
    if image.shape[2] == 1:
        return image[..., 0], fill
    return image.view(np.uint32)[..., 0], np.array(fill, np.uint8).view(np.uint32)[0]


def lanczos_resize(image: np.ndarray, size: tuple[int, int], box: tuple[float, float, float, float]) -> np.ndarray:
    """`image` (height x width x bands: 1, 3, or 4 for RGBX) as Pillow's `resize(size, LANCZOS, box=box)`
    makes it, by fast_image_resize's Lanczos-3 (see the module), with the same bands."""
    resized = np.empty((size[1], size[0], 1 if image.shape[2] == 1 else 4), np.uint8)
    _resize_into(image, box, resized)
    return resized[..., :3] if image.shape[2] == 3 else resized


def _resize_into(image: np.ndarray, box: tuple[float, float, float, float], target: np.ndarray) -> None:
    """`image`'s box resized into `target` (see `_pil_view`): gray into gray, colour into RGBX (its 4th
    byte unused).

    The resizer reads and writes NumPy's memory in place through PIL images that share it: its own
    ImageData takes only bytes, two copies of the picture that cost half the resize's time. PIL shares a
    buffer for gray and RGBX only, hence scans are decoded as RGBX (source.py); a render's RGB is copied once.
    """
    if image.shape[2] == 3:
        image = cv2.cvtColor(image, cv2.COLOR_RGB2RGBA)
    x0, y0, x1, y1 = box
    options = ResizeOptions(LANCZOS3, crop_box=CropBox(x0, y0, x1 - x0, y1 - y0))
    RESIZER.resize_pil(_pil_view(image), _pil_view(target), options)


def _pil_view(pixels: np.ndarray) -> Image.Image:
    """A PIL image on `pixels`' memory (gray or RGBX, height x width x bands; the rows may lie apart, in a
    wider canvas). RGBX is labelled RGB, which PIL keeps in the same 4-byte pixels, because the resizer
    takes RGB and not RGBX (as the resizer itself relabels RGBa)."""
    pixels = _with_whole_rows(pixels)
    height, width, bands = pixels.shape
    mode = "L" if bands == 1 else "RGBX"
    # PIL is told of `height` rows of `stride` bytes from the first pixel (the last row of a view into a
    # wider canvas ends before its stride does); only each row's first `width` pixels, all in `pixels`,
    # are read or written.
    stride = pixels.strides[0]
    rows = np.lib.stride_tricks.as_strided(pixels, (height * stride,), (1,))
    image = Image.frombuffer(mode, (width, height), rows, "raw", mode, stride, 1)
    if mode == "RGBX":
        set_image_mode(image, "RGB")
    return image


def _pad_fill(part: np.ndarray, pad_colour: str):
    rgb = paper_colour(part) if pad_colour == "paper" else tuple(int(pad_colour[i:i + 2], 16) for i in (1, 3, 5))
    return (*rgb, 0) if part.shape[2] == 4 else round(0.299 * rgb[0] + 0.587 * rgb[1] + 0.114 * rgb[2])


def paper_colour(image) -> tuple[int, int, int]:
    """The colour of the paper (`image`: RGB, RGBX or gray, height x width [x bands], or a PIL image): the median
    colour of the brightest fifth of the page.

    Paper is the brightest large area of a scan. Its brightest fifth is paper on a text page and on a
    densely hatched plate between dark scanner-bed bands alike (where half the page is ink or bed),
    and the thumbnail's averaging keeps grain and specks from lifting it. The thumbnail is the mean of
    each factor x factor block (the resizer's box filter, in place: half the time of OpenCV's INTER_AREA,
    the same colour within a level on bench_export's pages).
    """
    pixels = np.asarray(image)
    pixels = pixels.reshape(pixels.shape[0], pixels.shape[1], -1)
    if pixels.shape[2] == 3:
        pixels = cv2.cvtColor(pixels, cv2.COLOR_RGB2RGBA)
    factor = max(1, min(pixels.shape[:2]) // PAPER_SAMPLE_SIDE)
    height, width = (side // factor * factor for side in pixels.shape[:2])
    thumbnail = np.empty((height // factor, width // factor, pixels.shape[2]), np.uint8)
    RESIZER.resize_pil(_pil_view(pixels), _pil_view(thumbnail),
                       ResizeOptions(BOX, crop_box=CropBox(0, 0, width, height)))
    pixels = thumbnail.reshape(-1, thumbnail.shape[2])[:, :3].astype(np.float32)
    pixels = np.repeat(pixels, 3, axis=1) if pixels.shape[1] == 1 else pixels
    luma = pixels @ np.array([0.299, 0.587, 0.114], np.float32)
    bright = pixels[luma >= _percentile(luma, 100 - PAPER_SHARE_PERCENT)]
    return tuple(int(round(v)) for v in _median(bright))


# np.percentile and np.median walk a long general path (axes, NaNs, methods, weights) that costs an image about
# 0.3 ms when its caches are cold from the decode, a tenth of what the export spends above its floor at 200 dpi;
# these two give the same numbers, to the bit, for what paper_colour asks (tests/test_export_images.py).


def _percentile(values: np.ndarray, percent: float):
    """`np.percentile(values, percent)` of a 1-D float array without NaNs: its default ("linear") method,
    with its arithmetic (the two neighbours in the array's type, interpolated as NumPy's `_lerp` does)."""
    position = (values.size - 1) * (percent / 100)
    below = math.floor(position)
    above = min(below + 1, values.size - 1)
    ordered = np.partition(values, (below, above))
    low, high, gamma = ordered[below], ordered[above], position - below
    return high - (high - low) * (1 - gamma) if gamma >= 0.5 else low + (high - low) * gamma


def _median(pixels: np.ndarray) -> np.ndarray:
    """`np.median(pixels, axis=0)` of rows of whole numbers (the thumbnail's levels, exact in float32)."""
    middle = ((len(pixels) - 1) // 2, len(pixels) // 2)
    ordered = np.partition(pixels, middle, axis=0)
    return (ordered[middle[0]] + ordered[middle[1]]) / 2


def _with_whole_rows(pixels: np.ndarray) -> np.ndarray:
    """`pixels` (height x width x bands), copied only if the pixels of a row do not follow one another."""
    bands = pixels.shape[2]
    if pixels.strides[1:] == (bands, 1) and pixels.strides[0] >= pixels.shape[1] * bands:
        return pixels
    return np.ascontiguousarray(pixels)


def encode_jpeg(image: np.ndarray, quality: int) -> bytes:
    """An RGB image (height x width x 3; or RGBX, x 4) as a baseline JPEG, 4:2:0, libjpeg's tables at
    `quality`. The RGB of RGBX pixels (`shape_image`'s view) is encoded in place, as RGBX."""
    pixels = _rgbx_under(image)
    if pixels is None:
        pixels = np.ascontiguousarray(image)
    return simplejpeg.encode_jpeg(pixels, quality, "RGBX" if pixels.shape[2] == 4 else "RGB", JPEG_SUBSAMPLING)


def _rgbx_under(image: np.ndarray) -> np.ndarray | None:
    """The RGBX array `image` is the RGB view of, if it is one."""
    base = image.base
    if (isinstance(base, np.ndarray) and base.shape == (*image.shape[:2], 4) and base.flags.c_contiguous
            and base.ctypes.data == image.ctypes.data and base.strides == image.strides):
        return base
    return None
