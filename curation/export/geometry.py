"""Which part of a page each exported image shows, and at what size.

A `Plan` is worked out from the page's proportions alone, before a pixel is read, so the reader
decodes or renders only as much as the output needs. Units are the source's own: pixels of an
embedded scan, or points of a page to render.

With `crop="picture"` the part shaped is the page's illustration, not the whole page: the bounding
box ingest found (in reference pixels, 144 dpi) with a small margin, clamped to the page. With
`crop="pictures"` each picture of the page is such a part, an image of its own. It travels
to the reader as a `Region`, fractions of the page, so it means the same on a scan and on a render;
the picture's own box travels with it, so the margin around it can be made paper (shape.paper_margin).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass

from .settings import MIN_BUCKET_SIDE, ExportSettings

BUCKET_STEP = 64  # SDXL's latent grid: sides in multiples of 64 pixels
# Around a picture's box: 1 % of the page's shorter side (2 mm on a letter page). The box hugs the ink
# (found at 72 dpi); the margin keeps a frame's outer line and a vignette's faint edge, and stays
# narrower than the gap a printer leaves between a plate and its text.
CROP_MARGIN = 0.01
# A box smaller than this share of the page (an ornament, a speck) is not worth a training image of
# its own: such pages export whole.
MIN_CROP_SHARE = 0.03

Region = tuple[float, float, float, float]  # x0, y0, x1, y1 as fractions of the page's width and height


@dataclass(frozen=True)
class Plan:
    box: tuple[float, float, float, float]  # the part of the source that is kept (x0, y0, x1, y1)
    size: tuple[int, int]  # what that part is resized to
    canvas: tuple[int, int]  # the final image; larger than `size` only when padding
    page: tuple[float, float] | None = None  # the whole source's width and height, in the box's units

    @property
    def offset(self) -> tuple[int, int]:
        """Where the resized part sits on the canvas: centred."""
        return (self.canvas[0] - self.size[0]) // 2, (self.canvas[1] - self.size[1]) // 2

    @property
    def scale(self) -> float:
        """Output pixels per source unit: the resolution a source must have so nothing is enlarged."""
        x0, y0, x1, y1 = self.box
        return max(self.size[0] / (x1 - x0), self.size[1] / (y1 - y0))

    @property
    def padded(self) -> bool:
        return self.canvas != self.size


def crop_box(item, settings: ExportSettings) -> tuple[int, int, int, int] | None:
    """The part of the page an item exports under `settings`, in reference pixels; None for the whole
    page (`crop="page"`, no picture box, a box too small, or a page scored without its size).

    With `crop="pictures"` an item that is one picture of its page (`item.picture`) shows that picture;
    its size was checked when it was selected (the manifest's `picture_area_min`)."""
    if settings.crop == "page" or item.picture_box is None or not item.width or not item.height:
        return None
    if settings.crop == "pictures" and item.picture is None:
        return None
    width, height = item.width, item.height
    x0, y0, x1, y1 = item.picture_box
    margin = max(2, math.ceil(CROP_MARGIN * min(width, height)))
    box = (max(0, x0 - margin), max(0, y0 - margin), min(width, x1 + margin), min(height, y1 + margin))
    if box[2] <= box[0] or box[3] <= box[1]:
        return None
    if settings.crop == "picture" and (box[2] - box[0]) * (box[3] - box[1]) < MIN_CROP_SHARE * width * height:
        return None
    return box


def crop_region(item, settings: ExportSettings) -> Region | None:
    """`crop_box` as fractions of the page, for the reader; None for the whole page."""
    box = crop_box(item, settings)
    if box is None:
        return None
    return box[0] / item.width, box[1] / item.height, box[2] / item.width, box[3] / item.height


def picture_region(item, settings: ExportSettings) -> Region | None:
    """The picture's own box (`crop_box` without its margin) as fractions of the page; None where the whole
    page is exported."""
    if crop_box(item, settings) is None:
        return None
    x0, y0, x1, y1 = item.picture_box
    return (max(0, x0) / item.width, max(0, y0) / item.height,
            min(item.width, x1) / item.width, min(item.height, y1) / item.height)


def plan_image(width: float, height: float, settings: ExportSettings, region: Region | None = None) -> Plan:
    """The plan for a source `width` x `height` under `settings`; with `region`, for that part of it."""
    page = (float(width), float(height))
    if region is None:
        return dataclasses.replace(_plan(width, height, settings), page=page)
    left, top = region[0] * width, region[1] * height
    plan = _plan((region[2] - region[0]) * width, (region[3] - region[1]) * height, settings)
    x0, y0, x1, y1 = plan.box
    return Plan((left + x0, top + y0, left + x1, top + y1), plan.size, plan.canvas, page)


def picture_in_part(plan: Plan, picture: Region) -> tuple[int, int, int, int]:
    """Where `picture` (fractions of the page) lies in the plan's resized part (pixels of `plan.size`), rounded
    outwards (every pixel the picture reaches is in it) and clamped to the part."""
    (width, height), (x0, y0, x1, y1), (part_width, part_height) = plan.page, plan.box, plan.size
    scale_x, scale_y = part_width / (x1 - x0), part_height / (y1 - y0)
    left, right = (picture[0] * width - x0) * scale_x, (picture[2] * width - x0) * scale_x
    top, bottom = (picture[1] * height - y0) * scale_y, (picture[3] * height - y0) * scale_y
    return (min(part_width, max(0, math.floor(left))), min(part_height, max(0, math.floor(top))),
            max(0, min(part_width, math.ceil(right))), max(0, min(part_height, math.ceil(bottom))))


def _plan(width: float, height: float, settings: ExportSettings) -> Plan:
    side = settings.size
    full = (0.0, 0.0, float(width), float(height))
    if settings.mode == "bucket":
        bucket = nearest_bucket(width, height, side)
        return Plan(_centred_box(width, height, bucket[0] / bucket[1]), bucket, bucket)
    if settings.fit == "stretch":  # the original method: proportions are lost
        return Plan(full, (side, side), (side, side))
    if settings.fit == "crop":
        return Plan(_centred_box(width, height, 1.0), (side, side), (side, side))
    scale = side / max(width, height)
    size = (min(side, max(1, round(width * scale))), min(side, max(1, round(height * scale))))
    return Plan(full, size, (side, side))


def _centred_box(width: float, height: float, aspect: float) -> tuple[float, float, float, float]:
    """The largest centred box of the given aspect (width / height) inside the source."""
    if width / height > aspect:
        kept = height * aspect
        return ((width - kept) / 2, 0.0, (width + kept) / 2, float(height))
    kept = width / aspect
    return (0.0, (height - kept) / 2, float(width), (height + kept) / 2)


@functools.lru_cache(maxsize=16)
def sdxl_buckets(size: int = 1024) -> tuple[tuple[int, int], ...]:
    """SDXL aspect-ratio buckets: area at most size², sides multiples of 64 from 256 to 2 x size.

    The same list sd-scripts builds (`make_bucket_resolutions`) from the dataset TOML we write, so
    every exported image already has its bucket's exact size and the trainer neither crops nor
    resizes it again.
    """
    max_area = size * size
    square = int(math.sqrt(max_area) // BUCKET_STEP) * BUCKET_STEP
    buckets = {(square, square)}
    for width in range(MIN_BUCKET_SIDE, max_bucket_side(size) + 1, BUCKET_STEP):
        height = min(max_bucket_side(size), (max_area // width) // BUCKET_STEP * BUCKET_STEP)
        if height >= MIN_BUCKET_SIDE:
            buckets.add((width, height))
            buckets.add((height, width))
    return tuple(sorted(buckets))


def max_bucket_side(size: int) -> int:
    return 2 * size // BUCKET_STEP * BUCKET_STEP


def nearest_bucket(width: float, height: float, size: int = 1024) -> tuple[int, int]:
    """The bucket whose aspect ratio is nearest the source's (first of equals, as sd-scripts picks)."""
    aspect = width / height
    return min(sdxl_buckets(size), key=lambda bucket: abs(bucket[0] / bucket[1] - aspect))
