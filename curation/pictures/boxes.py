"""A kept candidate's box brought to its picture: the ink that is not text, and a margin of paper.

A candidate's box is the box of strokes grouped by nearness, so it can take in a line of the next
column, a legend's first word or a speck of the gutter. `tighten` keeps the pieces of non-text ink
that hold a real share of what the box holds, or are long strokes (strokes closer than JOIN_IN are
one piece: hatching, a frame and what it frames), and shrinks the box to them. `with_margin` then
adds a thin margin of paper, so a box drawn on the outermost strokes does not cut into a picture
whose faint edge fades below the ink threshold.

Each step, and the margin, is chosen leave one source out by the verdict's training
(curation.pictures.train, BOX_STEPS), and measured the same way.
"""

from __future__ import annotations

import cv2
import numpy as np

from ..scoring.features import PageAnalysis
from .candidates import THRESHOLDS

JOIN_IN = 0.03  # strokes this close are one piece
TEXT_GROW_IN = 0.06  # the text detector's lines, widened by this: their letters' outer strokes
PIECE_SHARE = 0.05  # a piece holding less of the box's non-text ink is a speck or a stray letter,
PIECE_LONG_IN = 0.3  # unless it is this long: one stroke of a sparse pen drawing,
TYPE_HEIGHT_IN = 0.2  # not a line of type the detector missed: wider than tall and no taller than this
MARGIN = 0.01  # a share of the page's shorter side, around the tightened box


def tighten(page: PageAnalysis, text: np.ndarray, box: tuple[int, int, int, int]) -> tuple[int, int, int, int]:
    """`box` (the page's pixels) shrunk to the pieces of non-text ink it holds. `text` is the text mask
    over the page's content at the analysis resolution, as the candidates read it."""
    x0, y0, x1, y1 = _to_analysis(page, box)
    inside = np.s_[y0:y1, x0:x1]
    ink = (page.ink[inside] >= page.threshold * THRESHOLDS[-1]).astype(np.uint8)
    grow = 2 * max(1, round(TEXT_GROW_IN * page.dpi / 2)) + 1
    ink &= 1 - cv2.dilate(text[inside], np.ones((grow, grow), np.uint8))
    if not ink.any():
        return box
    join = 2 * max(1, round(JOIN_IN * page.dpi)) + 1
    _, pieces, stats, _ = cv2.connectedComponentsWithStats(cv2.dilate(ink, np.ones((join, join), np.uint8)),
                                                           connectivity=8)
    held = pieces[ink > 0]
    counts = np.bincount(held, minlength=len(stats))
    counts[0] = 0  # the paper between the pieces
    width, height = stats[:, 2], stats[:, 3]
    long = (np.maximum(width, height) >= PIECE_LONG_IN * page.dpi) & ~(
        (height < TYPE_HEIGHT_IN * page.dpi) & (width > height))
    wanted = (counts >= min(PIECE_SHARE * held.size, counts.max())) | (long & (counts > 0))
    kept = np.isin(pieces, np.flatnonzero(wanted)) & (ink > 0)
    ys, xs = np.nonzero(kept)
    return page.to_page((x0 + xs.min(), y0 + ys.min(), x0 + xs.max() + 1, y0 + ys.max() + 1))


def with_margin(box: tuple[int, int, int, int], shape: tuple[int, int], share: float = MARGIN) -> tuple[int, int, int, int]:
    """`box` grown by `share` of the shorter side of a page of `shape` (height, width), within the page."""
    height, width = shape
    grow = round(share * min(height, width))
    x0, y0, x1, y1 = box
    return max(0, x0 - grow), max(0, y0 - grow), min(width, x1 + grow), min(height, y1 + grow)


def _to_analysis(page: PageAnalysis, box) -> tuple[int, int, int, int]:
    """A box in the page's pixels, in the analysis's, within its ink map."""
    left, top = page.offset
    height, width = page.ink.shape
    x0, y0, x1, y1 = ((v - o) / page.scale for v, o in zip(box, (left, top, left, top)))
    return (max(0, int(x0)), max(0, int(y0)), min(width, int(np.ceil(x1))), min(height, int(np.ceil(y1))))
