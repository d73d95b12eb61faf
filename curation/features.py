"""Cheap page features beside sigma, computed from the same 144 dpi luma the score is taken from.

sigma alone is fooled by scans: dark scanner-bed borders and bleed-through lift text pages, faded
engravings fall low. These features look at what is on the paper instead of how much it varies:

- `sigma_content`: sigma inside the content box, with dark scanner-bed bands trimmed away.
- `ink_tone`: how dark the darkest ink is relative to the paper around it (0 paper, 1 black);
  lighting is flattened first, so uneven light and yellowing do not count as ink.
- `ink_coverage`: share of the content covered by ink.
- `picture_share`: share of the content inside solid ink regions. At 72 dpi hatching and line
  work close into areas thicker than 5 mm while lines of text stay thinner and are opened away;
  bleed-through is too faint against the page's own ink to count.
- `picture_box`: the bounding box of the large regions, in reference pixels: where the plate is.
- `phash`: a 64-bit perceptual hash of the plate (else of the content), to find a plate printed twice.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import cv2
import numpy as np

FEATURES_VERSION = 1  # raise when a feature's definition changes: `rescore` recomputes older rows
FEATURE_SCALE = 2  # features are taken at 72 dpi: half the reference resolution
BORDER_DARKNESS = 0.5  # a row or column darker than half the paper tone is scanner bed, not page
BACKGROUND_KERNEL = 9
BACKGROUND_BLUR = 25
INK_FLOOR = 0.1
INK_FRACTION = 0.45  # ink is whatever reaches this share of the page's own darkest ink
PICTURE_SIDE = 15  # px at 72 dpi (about 5 mm): thicker than any line of body text


@dataclass(frozen=True)
class PageFeatures:
    sigma_content: float
    ink_tone: float
    ink_coverage: float
    picture_share: float
    picture_box: tuple[int, int, int, int] | None
    phash: int

    def as_columns(self) -> dict:
        values = asdict(self)
        box = values.pop("picture_box")
        values.update(zip(("picture_x0", "picture_y0", "picture_x1", "picture_y1"), box or (None,) * 4))
        return values


def feature_columns(gray: np.ndarray, box_scale: float = 1.0) -> dict:
    """The features as manifest columns; `box_scale` maps `gray`'s pixels to reference pixels."""
    columns = page_features(gray).as_columns()
    for key in ("picture_x0", "picture_y0", "picture_x1", "picture_y1"):
        if columns[key] is not None:
            columns[key] = round(columns[key] * box_scale)
    columns["features_version"] = FEATURES_VERSION
    return columns


def page_features(gray: np.ndarray) -> PageFeatures:
    """Features of a page from its grayscale image at the reference resolution."""
    h, w = gray.shape
    small = cv2.resize(gray, (max(1, w // FEATURE_SCALE), max(1, h // FEATURE_SCALE)), interpolation=cv2.INTER_AREA)
    top, bottom, left, right = content_box(small)
    content = small[top:bottom, left:right]
    if content.size == 0:
        return PageFeatures(0.0, 0.0, 0.0, 0.0, None, perceptual_hash(small))
    ink = ink_map(content)
    tone = _percentile_u8(ink, 99.5) / 255
    mask = (ink >= 255 * max(INK_FRACTION * tone, INK_FLOOR)).astype(np.uint8)
    share, box = _picture_regions(mask)
    # The plate itself identifies a reprint; borders and the text around it differ between issues.
    plate = content[box[1]:box[3], box[0]:box[2]] if box is not None else content
    s = FEATURE_SCALE
    sigma_content = float(cv2.meanStdDev(gray[top * s:bottom * s, left * s:right * s])[1][0, 0])
    if box is not None:
        box = ((box[0] + left) * s, (box[1] + top) * s, (box[2] + left) * s, (box[3] + top) * s)
    return PageFeatures(
        sigma_content=sigma_content,
        ink_tone=float(tone),
        ink_coverage=float(mask.mean()),
        picture_share=share,
        picture_box=box,
        phash=perceptual_hash(plate),
    )


def content_box(small: np.ndarray) -> tuple[int, int, int, int]:
    """Top, bottom, left, right of the page inside dark scanner-bed bands."""
    dark = BORDER_DARKNESS * float(np.percentile(small[::4, ::4], 90))
    rows, cols = small.mean(axis=1), small.mean(axis=0)
    top, bottom = _trim(rows < dark)
    left, right = _trim(cols < dark)
    return top, bottom, left, right


def _trim(is_dark: np.ndarray) -> tuple[int, int]:
    light = np.flatnonzero(~is_dark)
    if light.size == 0:
        return 0, 0
    return int(light[0]), int(light[-1]) + 1


def ink_map(content: np.ndarray) -> np.ndarray:
    """Ink strength 0..255 relative to the local paper tone (a dilated, blurred background)."""
    paper = cv2.blur(cv2.dilate(content, np.ones((BACKGROUND_KERNEL, BACKGROUND_KERNEL), np.uint8)),
                     (BACKGROUND_BLUR, BACKGROUND_BLUR))
    paper = np.maximum(paper, content)
    ink = cv2.divide(cv2.subtract(paper, content), np.maximum(paper, 1), scale=255)
    return ink


def _picture_regions(mask: np.ndarray) -> tuple[float, tuple[int, int, int, int] | None]:
    """Share and bounding box of solid regions: hatching closed into areas, text lines opened away."""
    closed = cv2.morphologyEx(mask, cv2.MORPH_CLOSE, np.ones((3, 3), np.uint8))
    solid = cv2.morphologyEx(closed, cv2.MORPH_OPEN, np.ones((PICTURE_SIDE, PICTURE_SIDE), np.uint8))
    share = float(solid.mean())
    if share == 0:
        return 0.0, None
    x, y, w, h = cv2.boundingRect(solid)
    return share, (x, y, x + w, y + h)


def perceptual_hash(gray: np.ndarray) -> int:
    """64-bit DCT hash (pHash): near-identical images differ in a few bits."""
    small = cv2.resize(gray, (32, 32), interpolation=cv2.INTER_AREA).astype(np.float32)
    low = cv2.dct(small)[:8, :8].flatten()
    bits = low > np.median(low[1:])
    value = int(np.packbits(bits).view(">u8")[0])
    return value - (1 << 64) if value >= 1 << 63 else value  # SQLite integers are signed


def hamming(a: int, b: int) -> int:
    return ((a ^ b) & ((1 << 64) - 1)).bit_count()


def _percentile_u8(values: np.ndarray, q: float) -> float:
    counts = np.bincount(values.ravel(), minlength=256)
    return float(np.searchsorted(np.cumsum(counts), q / 100 * values.size))
