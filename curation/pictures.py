"""Find the pictures on a page: ink that is not text, rules or frames.

What marks a page as text is text: components of letter size standing in lines. Real line art
(pen cartoons, open wood engravings, advertisement cuts, technical plates) is drawn with strokes that
join into components far taller or wider than any letter, and that do not stand in a row of
like-sized neighbours the way the letters of a headline or a masthead do. So the page is binarised
against its own paper, long thin rules are taken out, the body-text height is read off the letter-size
components, and what remains large and unaligned is grouped into pictures.

Sizes are physical (inches, from the page's dpi), so "ignore cuts smaller than 2 square inches"
means the same on a 90-dpi newspaper and a 300-dpi plate. A picture's `area` is the area its strokes'
boxes cover, not its bounding box: a few stray big words of a heavily inked column, spread over
several inches, do not add up to a picture.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

RULE_LENGTH_IN = 1.5  # straight runs at least this long and thin are rules, frames and column lines
RULE_THICKNESS_IN = 0.06
LETTER_MIN_IN, LETTER_MAX_IN = 0.03, 0.3  # heights of body-text letters read when estimating their size
DEFAULT_TEXT_HEIGHT_IN = 0.08
BIG_HEIGHT = 4  # a stroke taller than this many text heights (and RULE-free) is no letter
BIG_HEIGHT_MIN_IN, BIG_WIDTH_MIN_IN = 0.3, 1.2
BIG_WIDTH = 15
TYPE_ROW_MIN = 3  # this many large components on one baseline are display type, not a picture
GROUP_IN = 0.4  # strokes closer than this belong to one picture
PICTURE_SIDE_MIN_IN = 0.5
PICTURE_ASPECT_MAX = 6.0  # longer and thinner than this is a border or an ornamental rule
PICTURE_COVER_MIN = 0.35  # a picture's strokes cover at least this share of its box
RIM_IN = 0.1  # the box takes in ink this close to the strokes: hatching that ends in loose dots


@dataclass(frozen=True)
class Picture:
    box: tuple[int, int, int, int]  # x0, y0, x1, y1 in the pixels of the image given
    area: float  # square inches covered by its strokes' boxes
    cover: float  # share of the box those strokes cover


@dataclass(frozen=True)
class Layout:
    pictures: list[Picture]  # largest first
    text_height: float  # body-text letter height, inches
    content_area: float  # square inches of paper inside the scanner-bed bands

    @property
    def picture_area(self) -> float:
        return self.pictures[0].area if self.pictures else 0.0

    @property
    def picture_share(self) -> float:
        return min(1.0, sum(p.area for p in self.pictures) / self.content_area) if self.content_area else 0.0


def find_pictures(content: np.ndarray, ink: np.ndarray, dpi: float) -> Layout:
    """Pictures in `content` (grayscale paper, scanner bed trimmed) given its binary `ink` mask."""
    content_area = content.size / dpi / dpi
    mask = ink & ~rules(ink, dpi)
    _, _, stats, _ = cv2.connectedComponentsWithStats(mask, connectivity=8)
    x, y, w, h, area = stats[1:].T
    text_height = _text_height(w, h, area, dpi)
    big = ((h > max(BIG_HEIGHT * text_height, BIG_HEIGHT_MIN_IN * dpi))
           | (w > max(BIG_WIDTH * text_height, BIG_WIDTH_MIN_IN * dpi)))
    thin = (np.minimum(w, h) < 0.1 * dpi) & (np.maximum(w, h) > 8 * np.minimum(w, h))
    strokes = np.flatnonzero(big & ~thin & ~_type_rows(x, y, w, h, big))
    pictures = _group(strokes, stats[1:], mask, dpi)
    return Layout(pictures=pictures, text_height=text_height / dpi, content_area=content_area)


def rules(ink: np.ndarray, dpi: float) -> np.ndarray:
    """Long thin horizontal and vertical lines (rules, frames, column lines), slightly widened."""
    length = max(3, round(RULE_LENGTH_IN * dpi))
    thick = max(3, round(RULE_THICKNESS_IN * dpi))
    lines = np.zeros_like(ink)
    for run, across in (((length, 1), (1, thick)), ((1, length), (thick, 1))):
        straight = cv2.morphologyEx(ink, cv2.MORPH_OPEN, cv2.getStructuringElement(cv2.MORPH_RECT, run))
        solid = cv2.morphologyEx(straight, cv2.MORPH_OPEN, cv2.getStructuringElement(cv2.MORPH_RECT, across))
        lines |= straight & ~solid
    return cv2.dilate(lines, np.ones((3, 3), np.uint8))


def _text_height(w, h, area, dpi: float) -> float:
    letters = (area >= 3) & (h >= LETTER_MIN_IN * dpi) & (h <= LETTER_MAX_IN * dpi) & (w <= 3 * h)
    return float(np.median(h[letters])) if letters.any() else DEFAULT_TEXT_HEIGHT_IN * dpi


def _type_rows(x, y, w, h, big) -> np.ndarray:
    """Large components standing on one baseline with like-sized neighbours: mastheads, headlines."""
    rows = np.zeros_like(big)
    index = np.flatnonzero(big)
    bottoms, heights = y[index] + h[index], h[index]
    for i in index:
        alike = ((np.abs(bottoms - (y[i] + h[i])) < 0.2 * h[i]) & (heights < 1.6 * h[i]) & (heights > h[i] / 1.6)
                 & (np.abs(x[index] - x[i]) < 6 * h[i]))
        rows[i] = alike.sum() >= TYPE_ROW_MIN
    return rows


def _group(strokes: np.ndarray, stats: np.ndarray, mask: np.ndarray, dpi: float) -> list[Picture]:
    """Strokes near each other form one picture; keep those shaped and filled like one."""
    boxes = np.zeros_like(mask)
    for i in strokes:
        x, y, w, h = stats[i, :4]
        boxes[y:y + h, x:x + w] = 1
    near = max(3, round(GROUP_IN * dpi))
    grown = cv2.dilate(boxes, cv2.getStructuringElement(cv2.MORPH_RECT, (near, near)))
    _, _, regions, _ = cv2.connectedComponentsWithStats(grown, connectivity=8)
    pictures = []
    for x, y, w, h, _ in regions[1:]:
        if min(w, h) < PICTURE_SIDE_MIN_IN * dpi or max(w, h) > PICTURE_ASPECT_MAX * min(w, h):
            continue
        inside = boxes[y:y + h, x:x + w]
        rows, cols = np.flatnonzero(inside.any(axis=1)), np.flatnonzero(inside.any(axis=0))
        x0, x1, y0, y1 = x + cols[0], x + cols[-1] + 1, y + rows[0], y + rows[-1] + 1
        covered = float(boxes[y0:y1, x0:x1].sum())
        cover = covered / ((x1 - x0) * (y1 - y0))
        if cover >= PICTURE_COVER_MIN:
            box = _with_rim(mask, (x0, y0, x1, y1), round(RIM_IN * dpi))
            pictures.append(Picture(box=box, area=covered / dpi / dpi, cover=cover))
    return sorted(pictures, key=lambda p: p.area, reverse=True)


def _with_rim(mask: np.ndarray, box: tuple[int, int, int, int], rim: int) -> tuple[int, int, int, int]:
    """The box grown to the ink lying within `rim` pixels of it."""
    x0, y0 = max(0, box[0] - rim), max(0, box[1] - rim)
    x1, y1 = min(mask.shape[1], box[2] + rim), min(mask.shape[0], box[3] + rim)
    near = mask[y0:y1, x0:x1]
    rows, cols = np.flatnonzero(near.any(axis=1)), np.flatnonzero(near.any(axis=0))
    return (int(min(box[0], x0 + cols[0])), int(min(box[1], y0 + rows[0])),
            int(max(box[2], x0 + cols[-1] + 1)), int(max(box[3], y0 + rows[-1] + 1)))
