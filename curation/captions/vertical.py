"""A legend set vertically beside its picture, as Japanese and Chinese books set a figure's title: a short
column of characters at the picture's side, starting level with its top, read by the recognizer turned a
quarter (top of the column to the left: the network reads vertical lines so).

Where it is looked for: beside the picture (right, then left), when nothing was read under or over it. The
first column of type from the picture outwards must start close to the picture's side and level with its
top, be a column (taller than wide, a character's width), and end with a clear gap well before the picture's
foot: a column of body text beside a picture runs on past it. Narrow columns beside it (ruby, the small kana
that spell a character's reading) and rules round it (a box) are not read with it. What is read is a legend
when it is mostly Chinese or Japanese characters, read with confidence (VERTICAL_MIN_CONFIDENCE, chosen
leave one source out); Latin type turned a quarter reads as nothing of the sort.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

from . import recognizer, type_lines
from .type_lines import FIRST_GAP_IN, LINE_MAX_IN, LINE_MIN_IN

TOP_IN = 0.5  # the column starts within this distance of the picture's top (over or under it), as close to
# its side as a legend under a picture starts under it (FIRST_GAP_IN)
END_SHARE = 0.75  # and ends before this share of the picture's height
COLUMN_GAP = 1.0  # an empty square (a character's width) after the column ends it
MIN_SQUARES, MAX_SQUARES = 1.5, 12  # a title is a few characters: taller than wide, shorter than a column
RUBY_SHARE = 0.6  # a column narrower than this share of the widest is ruby (or a rule's trace), not the title
RULE_IN = 0.3  # a stroke across this long (upright, half as long) is a rule (a box's, the frame's), no letter
ROW_SHARE = 0.06  # a row of a character has this share of the column's width inked at least
WOBBLE_IN = 0.01  # how far a scanned rule strays from straight, either way
VERTICAL_MIN_CONFIDENCE = 0.85  # the recognizer's floor for a column turned a quarter


@dataclass(frozen=True)
class Beside:
    """Where to look for a picture's vertical legend, in reference pixels: `box` (x0, y0, x1, y1) beside the
    picture, from its side outwards; `right`: on its right; `picture`: its top and bottom."""

    box: tuple[int, int, int, int]
    picture: tuple[int, int]
    right: bool


def beside(box, boxes, width: int, height: int, depth: int, top: int) -> list[Beside]:
    """Right of the picture `box`, then left of it, each `depth` wide (reference pixels) at most and
    stopping at another picture; `top`: how far over the picture's top it starts."""
    x0, y0, x1, y1 = box[:4]
    y_top = max(0, y0 - top)
    others = [b for b in boxes if tuple(b[:4]) != tuple(box[:4]) and b[1] < y1 and b[3] > y_top]
    right_end = min([width, x1 + depth] + [b[0] for b in others if b[0] >= x1])
    left_end = max([0, x0 - depth] + [b[2] for b in others if b[2] <= x0])
    found = []
    if right_end - x1 > 4:
        found.append(Beside((x1, y_top, right_end, y1), (y0, y1), True))
    if x0 - left_end > 4:
        found.append(Beside((left_end, y_top, x0, y1), (y0, y1), False))
    return found


def column_box(ink: np.ndarray, strip: Beside, scale: float, dpi: float) -> tuple[int, int, int, int] | None:
    """The box (x0, y0, x1, y1 in `ink`'s pixels) of the vertical legend in the strip's `ink` (read at
    `scale` pixels per reference pixel, upright rules taken out); None where it holds none."""
    ink = _without_rules(ink if strip.right else ink[:, ::-1], dpi)  # from the picture outwards
    columns = type_lines.bands(ink.sum(axis=0))[:4]
    if not columns or columns[0][0] > FIRST_GAP_IN * dpi:
        return None
    widest = max(b - a for a, b in columns)
    # The title: the first column a character wide (ruby beside it is narrower), next to the picture.
    a, b = next(c for c in columns if c[1] - c[0] >= RUBY_SHARE * widest)
    width = b - a
    if a - columns[0][0] > 1.5 * widest or not LINE_MIN_IN * dpi <= width <= LINE_MAX_IN * dpi:
        return None
    inked = np.flatnonzero(ink[:, a:b].sum(axis=1) >= ROW_SHARE * width)  # a rule's remnants are not enough
    rows = type_lines.runs(inked, np.diff(inked) > 1)
    picture_top, picture_bottom = ((v - strip.box[1]) * scale for v in strip.picture)
    if not rows or abs(rows[0][0] - picture_top) > TOP_IN * dpi:
        return None
    top, bottom = rows[0]
    for start, end in rows[1:]:
        if start - bottom >= COLUMN_GAP * width:
            break
        bottom = end
    if bottom >= ink.shape[0] - 1 or bottom - picture_top > END_SHARE * (picture_bottom - picture_top):
        return None  # it runs on down the picture's side: body text
    if not MIN_SQUARES * width <= bottom - top <= MAX_SQUARES * width:
        return None
    if not strip.right:
        a, b = ink.shape[1] - b, ink.shape[1] - a
    return a, top, b, bottom


def _without_rules(ink: np.ndarray, dpi: float) -> np.ndarray:
    """`ink` without rules (a box round the title, the page's frame), to find the column by: runs of ink
    across or upright longer than a letter's strokes, however the scan broke the rules' corners. (A long
    stroke of a letter goes too; the column is found by the rest and read from the page.)"""
    # A scanned rule wobbles and breaks: it is looked for a little thickened, and taken out so.
    wide = round(WOBBLE_IN * dpi) * 2 + 1
    rules = np.zeros(ink.shape, np.uint8)
    for length, across in ((round(RULE_IN * dpi), True), (round(RULE_IN * dpi / 2), False)):
        widen = np.ones((wide, 1) if across else (1, wide), np.uint8)
        kernel = np.ones((1, length) if across else (length, 1), np.uint8)
        rules |= cv2.dilate(cv2.morphologyEx(cv2.dilate(ink.view(np.uint8), widen), cv2.MORPH_OPEN, kernel), widen)
    rules = rules.astype(bool)
    return ink & ~rules


def read_column(gray: np.ndarray, pad: int) -> tuple[str, float]:
    """The recognizer's read of a column of type (gray, cropped to it), turned a quarter: its top to the
    left."""
    paper = np.full((gray.shape[0] + 2 * pad, gray.shape[1] + 2 * pad), np.percentile(gray, 90), np.uint8)
    paper[pad:pad + gray.shape[0], pad:pad + gray.shape[1]] = gray
    return recognizer.read_line(cv2.rotate(paper, cv2.ROTATE_90_COUNTERCLOCKWISE))

