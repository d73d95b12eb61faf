"""A picture's own region: which pixels of its box are the picture, kept small enough to store in its row.

The finder (curation.pictures.finder) marks the picture's ink; its region is what of its box that ink makes the
picture (`region_of`: its parts, closed, with a little paper round, the legend and neighbouring type left out), as a
bitmap stretched over the picture's box (the finder's, in reference pixels). It is
stored as text: the bitmap's width and height, then its bits packed and deflated in base64 (a few hundred bytes for
a plate). The mask a picture trains with (`picture_mask`) is its region within the box a curator left, less the
rectangles a curator painted out; a picture without a region (the rules found it, a curator drew it, a manifest
older than regions) is its box, whole.
"""

from __future__ import annotations

import base64
import json
import zlib
from collections.abc import Sequence
from typing import NamedTuple

import cv2
import numpy as np

MAX_SIDE = 256  # a region's bitmap is at most this many cells on its longer side
CLOSE_IN = 0.12  # inches: gaps in the picture's ink narrower than this are closed (hatching, a halftone's dots)
PART_SHARE = 0.1  # a closed piece of ink this share of the largest is the picture's; smaller ones stand apart
PAPER_IN = 0.05  # inches of paper round the picture's parts that belong to it (a vignette's faint edge)

Box = tuple[int, int, int, int]  # x0, y0, x1, y1


def region_of(ink: np.ndarray, dpi: float) -> np.ndarray:
    """The region of a picture whose ink is `ink` (a boolean map at `dpi`, spanning the picture's box).

    The ink's gaps are closed (CLOSE_IN), which makes the picture's parts solid pieces and leaves a legend's words,
    a neighbouring column's letters and a rule's stroke pieces of their own, far smaller. The picture is the
    rectangle round its large pieces (PART_SHARE of the largest), grown by PAPER_IN of paper; what lies outside it
    (the legend under it, type beside it) is not the picture. A rectangle, not the ink's own outline: on the real
    measure (bench/mask_quality_real.py, leave one source out) the outline of the picture's ink (its convex hull)
    covered 0.91 of the boxes curators drew round the pictures, the rectangle 0.985: a cartoon's open sky, a
    vignette's corners and a halftone's light passages are the picture's too."""
    ink = np.ascontiguousarray(ink, np.uint8)
    if not ink.any():
        return np.zeros(ink.shape, bool)
    pad = _odd(CLOSE_IN * dpi)
    framed = cv2.copyMakeBorder(ink, pad, pad, pad, pad, cv2.BORDER_CONSTANT, value=0)
    closed = cv2.morphologyEx(framed, cv2.MORPH_CLOSE, np.ones((pad, pad), np.uint8))
    _, pieces, stats, _ = cv2.connectedComponentsWithStats(closed, connectivity=8)
    areas = stats[1:, cv2.CC_STAT_AREA]
    large = stats[1:][areas >= PART_SHARE * areas.max()]
    x0, y0 = large[:, cv2.CC_STAT_LEFT].min(), large[:, cv2.CC_STAT_TOP].min()
    x1 = (large[:, cv2.CC_STAT_LEFT] + large[:, cv2.CC_STAT_WIDTH]).max()
    y1 = (large[:, cv2.CC_STAT_TOP] + large[:, cv2.CC_STAT_HEIGHT]).max()
    grow = round(PAPER_IN * dpi)
    region = np.zeros(closed.shape, bool)
    region[max(0, y0 - grow):y1 + grow, max(0, x0 - grow):x1 + grow] = True
    return region[pad:pad + ink.shape[0], pad:pad + ink.shape[1]]


def encode(region: np.ndarray) -> str:
    """A region's bitmap as stored (at most MAX_SIDE cells on a side, shrunk where larger)."""
    region = np.asarray(region, bool)
    h, w = region.shape
    if max(h, w) > MAX_SIDE:
        scale = MAX_SIDE / max(h, w)
        size = (max(1, round(w * scale)), max(1, round(h * scale)))
        region = cv2.resize(region.view(np.uint8) * 255, size, interpolation=cv2.INTER_AREA) >= 128
        h, w = region.shape
    packed = zlib.compress(np.packbits(region).tobytes(), 9)
    return f"{w},{h}:{base64.b64encode(packed).decode('ascii')}"


def decode(text: str) -> np.ndarray:
    """The bitmap a region was stored as; ValueError for text that is not one."""
    try:
        size, data = text.split(":", 1)
        w, h = (int(v) for v in size.split(","))
        bits = np.unpackbits(np.frombuffer(zlib.decompress(base64.b64decode(data)), np.uint8))[:w * h]
        return bits.reshape(h, w).astype(bool)
    except Exception as exc:
        raise ValueError(f"not a stored region: {exc}") from None


def stamps_of(text: str | None) -> list[Box]:
    """The rectangles a curator painted out of a picture's mask, as stored (JSON: [[x0, y0, x1, y1], ...] in
    reference pixels)."""
    return [tuple(int(v) for v in stamp) for stamp in json.loads(text)] if text else []


def stamps_text(stamps: Sequence[Sequence[int]]) -> str | None:
    return json.dumps([list(map(int, stamp)) for stamp in stamps], separators=(",", ":")) if stamps else None


def picture_mask(span: Box, box: Box, region: str | None = None, scorer_box: Box | None = None,
                 stamps: Sequence[Box] = (), off: bool = False) -> np.ndarray:
    """The mask of a picture over `span` (reference pixels; a crop round the picture): True where the picture's
    pixels are learned. Its region (stretched over `scorer_box`, the box the finder fitted it in) within `box`
    (the box the curator left), less the `stamps`; `off` (the curator turned the mask off), no region, or a
    region that does not read: the whole box."""
    x0, y0, x1, y1 = span
    mask = np.zeros((max(0, y1 - y0), max(0, x1 - x0)), bool)
    inside = _clipped(box, span)
    if inside is None:
        return mask
    bx0, by0, bx1, by1 = inside
    if off or not region or scorer_box is None:
        mask[by0 - y0:by1 - y0, bx0 - x0:bx1 - x0] = True
    else:
        try:
            bitmap = decode(region)
        except ValueError:
            bitmap = None
        if bitmap is None:
            mask[by0 - y0:by1 - y0, bx0 - x0:bx1 - x0] = True
        else:
            _paint_region(mask, span, bitmap, scorer_box)
            keep = np.zeros_like(mask)
            keep[by0 - y0:by1 - y0, bx0 - x0:bx1 - x0] = True
            mask &= keep
    if not off:
        for stamp in stamps:
            cut = _clipped(stamp, span)
            if cut is not None:
                mask[cut[1] - y0:cut[3] - y0, cut[0] - x0:cut[2] - x0] = False
    return mask


def _paint_region(mask: np.ndarray, span: Box, bitmap: np.ndarray, scorer_box: Box) -> None:
    """`bitmap` stretched over `scorer_box`, drawn into `mask` (which covers `span`)."""
    sx0, sy0, sx1, sy1 = scorer_box
    if sx1 <= sx0 or sy1 <= sy0:
        return
    stretched = cv2.resize(bitmap.view(np.uint8) * 255, (sx1 - sx0, sy1 - sy0), interpolation=cv2.INTER_LINEAR) >= 128
    inside = _clipped(scorer_box, span)
    if inside is None:
        return
    x0, y0 = span[:2]
    ix0, iy0, ix1, iy1 = inside
    mask[iy0 - y0:iy1 - y0, ix0 - x0:ix1 - x0] = stretched[iy0 - sy0:iy1 - sy0, ix0 - sx0:ix1 - sx0]


def _clipped(box: Sequence[int], span: Box) -> Box | None:
    x0, y0 = max(int(box[0]), span[0]), max(int(box[1]), span[1])
    x1, y1 = min(int(box[2]), span[2]), min(int(box[3]), span[3])
    return (x0, y0, x1, y1) if x1 > x0 and y1 > y0 else None


def _odd(size: float) -> int:
    return 2 * max(1, round(size / 2)) + 1


class MaskSource(NamedTuple):
    """What a picture's mask is made from, as its row holds it: its region and the scorer's box it spans, the
    rectangles painted out, and whether the curator turned the mask off. A named tuple: an export item holding one
    goes through dataclasses.astuple and back (the Export page's cache keys) as it is."""

    region: str | None = None
    scorer_box: Box | None = None
    stamps: tuple[Box, ...] = ()
    off: bool = False

    @classmethod
    def of_row(cls, row) -> "MaskSource":
        """The mask source of a picture row (curation.manifest.pictures)."""
        return cls(row["region"], (row["x0"], row["y0"], row["x1"], row["y1"]), tuple(stamps_of(row["mask_stamps"])),
                   bool(row["mask_off"]))

    @property
    def kind(self) -> str:
        """How the mask is made: "region" (the finder's), "box" (no region, or turned off)."""
        return "region" if self.region and not self.off else "box"

    def mask(self, span: Box, box: Box) -> np.ndarray:
        return picture_mask(span, box, self.region, self.scorer_box, self.stamps, self.off)
