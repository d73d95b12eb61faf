"""Find the pictures on a page: ink that is not text, rules or frames.

What marks a page as text is text: components of letter size standing in lines. Real line art
(pen cartoons, open wood engravings, advertisement cuts, technical plates) is drawn with strokes that
join into components far taller or wider than any letter. So the page is binarised against its own
paper, long thin rules are taken out, the body-text height is read off the letter-size components,
and the large components are judged one by one. Large letters are still letters: those standing in a
line of like-sized neighbours (a masthead in roman or Fraktur, a headline, advertisement lettering, a
line of handwriting) are type, and so is a word whose heavy letters run together through hairlines.
Other large ink is no picture either: a frame of ruled lines (what it holds is judged on its own), a
thin line, the sheet's edge and the scanner bed, heavily inked type run together through lighter
smudges (a stroke must stay whole in its darkest ink), and a paper's emblem set between the words of
its title. What is left is a picture's strokes, grouped by nearness into pictures; fine hatching,
stippling and halftones, which have no large strokes, count through the solid areas they close into.
A plate's figures are one picture, the plate.

Sizes are physical (inches, from the page's dpi), so "ignore cuts smaller than 2 square inches"
means the same on a 90-dpi newspaper and a 300-dpi plate. A picture's box is its strokes' extent (a
legend under it and the text beside it stay out), and its `area` is that box's, the crop an export
writes.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

# The picture rule's default cutoff: a page keeps for a picture found here at least this large.
DEFAULT_PICTURE_AREA_MIN = 2.0  # square inches: a cartoon or plate covers 10 and more, a stock cut about 1
RULE_LENGTH_IN = 1.5  # straight runs at least this long and thin are rules, frames and column lines
RULE_THICKNESS_IN = 0.06
LINE_ASPECT = 8  # a component this many times longer than wide and thin in its ink is a line
HATCHING_PITCH_IN = 0.08  # parallel lines closer than this are hatching
LETTER_MIN_IN, LETTER_MAX_IN = 0.03, 0.3  # heights of body-text letters read when estimating their size
DEFAULT_TEXT_HEIGHT_IN = 0.08
BIG_HEIGHT = 4  # a stroke taller than this many text heights (and RULE-free) is no letter
BIG_HEIGHT_MIN_IN, BIG_WIDTH_MIN_IN = 0.3, 1.2
BIG_WIDTH = 15
TEXT_LINE = 2.0  # a shape no taller than this many text heights is a line of type, however long
TYPE_ROW_MIN = 4  # this many large components on one baseline are display type, not a picture
TYPE_GAP = 1.5  # letters of display type stand closer than this many of their heights
TYPE_HEIGHTS = 2.5  # and differ in height by less than this factor (capitals beside small letters)
TYPE_STEPS = 2  # a line is followed this many letters from each large one
TYPE_LEVEL = 0.5  # and overlap in height by at least this share of the smaller
TYPE_BAND = 3.0  # a line's letters fill a band at most this many times their (median) height
TYPE_STACK = 1.2  # and stand side by side: their widths add up to little more than the line's length
TYPE_OVERLAP = 0.3  # and overlap by less than this share of the narrower one (italics lean into each other)
TYPE_FILL = 0.05  # a letter's ink fills at least this share of its box
PEN_LINE_IN = 0.03  # and is more ink than a line this thick from corner to corner of it
MASTHEAD_TOP = 0.25  # a masthead stands in the top quarter of the page
MASTHEAD_LETTERS = 0.15  # its emblem is at most about six times as tall as the title's letters
FRAME_EDGE_IN = 0.06  # a frame's ink lies this close to the edges of its box
FRAME_EDGE_SHARE = 0.1  # or within this share of its shorter side (a double rule)
FRAME_INSIDE = 0.1  # and less than this share of it inside
EDGE_THICKNESS_IN = 0.12  # ink along the image's border thinner than this on average is the sheet's edge
EDGE_NEAR_IN = 0.05  # ink this close to the border touches it
EDGE_BAND = 0.08  # and ink touching the border that stays within this share of the page from it
PLATE_INK = 0.5  # a page with at least this share of its ink in its figures is a plate
HAIRLINE_IN = 0.02  # display type's hairlines and joins are thinner than this, its stems thicker
RUN_PIECE = 0.02  # what stays of a word with its hairlines off: letters, each this share of its ink at least
RUN_TOGETHER = 0.6  # and this share of the ink standing in a line makes it a word
GROUP_IN = 0.4  # strokes closer than this belong to one picture
GRID = 4  # pixels per cell of the grid strokes are grouped on
SOLID_SIDE_IN = 0.2  # hatching closed into solid areas this thick (5 mm) is picture; lines of type are thinner
PICTURE_SIDE_MIN_IN = 0.5
PICTURE_ASPECT_MAX = 6.0  # longer and thinner than this is a border or an ornamental rule
PICTURE_COVER_MIN = 0.2  # a picture's strokes cover at least this share of its box: no loose scatter
CORE = 1.3  # a stroke's darkest ink reaches this many times the ink threshold
RIM_IN = 0.1  # the box takes in ink this close to the strokes: hatching that ends in loose dots
BAND_ROWS = 64  # rows of a page's labels looked up at once (`_dark_throughout`)


@dataclass(frozen=True)
class Picture:
    box: tuple[int, int, int, int]  # x0, y0, x1, y1 in the pixels of the image given
    area: float  # square inches of its box
    cover: float  # share of the box its strokes' boxes cover


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


def find_pictures(ink: np.ndarray, threshold: float, dpi: float) -> Layout:
    """Pictures on a page from its ink strength (0..255 against the paper, scanner bed trimmed):
    ink is what reaches `threshold`."""
    content_area = ink.size / dpi / dpi
    mask = (ink >= threshold).astype(np.uint8)
    mask &= ~rules(mask, dpi)
    _, labels, stats, _ = cv2.connectedComponentsWithStats(mask, connectivity=8)
    x, y, w, h, area = stats[1:].T
    letters = letter_sized(w, h, area, dpi)
    text_height = float(np.median(h[letters])) if letters.any() else DEFAULT_TEXT_HEIGHT_IN * dpi
    strokes, lettering, edge = _sort_large_ink(ink, threshold, labels, stats, text_height, dpi)
    # Heavy display type and the scanner bed close into solid areas too, and lie close to pictures:
    # neither is hatching, nor a picture's rim.
    drawn = mask.copy()
    for i in np.flatnonzero(lettering | edge):
        left, top, width, height = stats[1 + i, :4]
        drawn[top:top + height, left:left + width][labels[top:top + height, left:left + width] == i + 1] = 0
    pictures = _group(np.flatnonzero(strokes), stats[1:], drawn, solid_regions(drawn, dpi), dpi)
    pictures = [p for p in pictures if not _masthead_emblem(p, stats[1:][lettering], ink.shape[0])]
    if len(pictures) > 1 and _plate(mask, pictures):
        pictures = _one_plate(pictures, dpi)
    return Layout(pictures=pictures, text_height=text_height / dpi, content_area=content_area)


def _sort_large_ink(ink: np.ndarray, threshold: float, labels: np.ndarray, stats: np.ndarray, text_height: float,
                    dpi: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The large components (far taller or wider than a letter) sorted: a picture's strokes, lettering
    (type and writing standing in lines, words run together, frames), and ink at the sheet's edge."""
    x, y, w, h, area = stats[1:].T
    big = large_ink(w, h, text_height, dpi)
    big &= _dark_throughout(ink, min(255, CORE * threshold), labels, stats, big, text_height, dpi)
    # A line, straight or slanted, solid or broken, which the rules left: thin in its ink for its length.
    thin = (area < RULE_THICKNESS_IN * dpi * np.maximum(w, h)) & (np.maximum(w, h) > LINE_ASPECT * np.minimum(w, h))
    # No taller than a line of text: a line of type run together by heavy ink, however long.
    big &= ~thin & (h > TEXT_LINE * text_height)
    letterlike = _letterlike(w, h, area, dpi)
    lettering = big & _type_rows(x, y, w, h, big & letterlike, letterlike)
    strokes = big & ~lettering
    strokes[strokes] = [not (_frame(labels, stats[1 + i], i + 1, dpi)
                             or _run_together(labels, stats[1 + i], i + 1, dpi)) for i in np.flatnonzero(strokes)]
    edge = page_edge(x, y, w, h, area, labels.shape, dpi)
    return strokes & ~edge, big & ~strokes, edge


def _big_height(text_height: float, dpi: float) -> float:
    return max(BIG_HEIGHT * text_height, BIG_HEIGHT_MIN_IN * dpi)


def large_ink(w, h, text_height: float, dpi: float) -> np.ndarray:
    """Components far taller or wider than any letter of the body text."""
    return (h > _big_height(text_height, dpi)) | (w > max(BIG_WIDTH * text_height, BIG_WIDTH_MIN_IN * dpi))


def _letterlike(w, h, area, dpi: float) -> np.ndarray:
    """Shapes that may be letters or written words. A run of parallel hatching lines stands in a row
    too, but a letter or a written word holds more ink than one pen line drawn across its box."""
    return (area >= TYPE_FILL * w * h) & (area >= 3) & (area >= PEN_LINE_IN * dpi * np.hypot(w, h))


def _run_together(labels: np.ndarray, box, label: int, dpi: float) -> bool:
    """Whether component `label` is a word of display type whose letters run together through
    hairlines and joins (a blackletter title, heavy lettering in an advertisement): with its hairlines
    taken off, most of its ink stands as letters in a line. A drawing's pen lines go with the
    hairlines, and what stays of it (its blacks) does not stand in a row."""
    x, y, w, h = box[:4]
    ink = (labels[y:y + h, x:x + w] == label).astype(np.uint8)
    side = max(2, round(HAIRLINE_IN * dpi) + 1)
    core = cv2.morphologyEx(ink, cv2.MORPH_OPEN, np.ones((side, side), np.uint8))
    count, _, stats, _ = cv2.connectedComponentsWithStats(core, connectivity=8)
    if count - 1 < TYPE_ROW_MIN:
        return False
    px, py, pw, ph, pa = stats[1:].T
    pieces = _letterlike(pw, ph, pa, dpi) & (pa >= RUN_PIECE * pa.sum())
    in_line = _type_rows(px, py, pw, ph, pieces, pieces)
    return bool(pa[in_line].sum() >= RUN_TOGETHER * pa.sum())


def _frame(labels: np.ndarray, box, label: int, dpi: float) -> bool:
    """Whether component `label` is a frame: ruled lines running along the edges of its box that
    leave the inside empty (a ruled box around a notice, too short or too doubled to be taken for a
    rule). A solid block shows as a broad rim, the inside matching the paper estimated around it."""
    x, y, w, h = box[:4]
    edge = max(2, round(FRAME_EDGE_IN * dpi), round(FRAME_EDGE_SHARE * min(w, h)))
    if min(w, h) <= 4 * edge or box[4] > 2 * (w + h) * RULE_THICKNESS_IN * dpi:
        return False
    ink = labels[y:y + h, x:x + w] == label
    return int(ink[edge:-edge, edge:-edge].sum()) < FRAME_INSIDE * int(ink.sum())


def page_edge(x, y, w, h, area, shape: tuple[int, int], dpi: float) -> np.ndarray:
    """Ink along the border of the image, thin or kept to a narrow band there: the edge of the sheet,
    a torn corner, the scanner bed showing past a page that is not square to it."""
    height, width = shape
    near = max(1, round(EDGE_NEAR_IN * dpi))  # the trimmed scanner bed leaves a pixel or two of paper
    top, left, bottom, right = y < near, x < near, y + h > height - near, x + w > width - near
    band = ((top & (y + h < EDGE_BAND * height)) | (left & (x + w < EDGE_BAND * width))
            | (bottom & (y > (1 - EDGE_BAND) * height)) | (right & (x > (1 - EDGE_BAND) * width)))
    touches = top | left | bottom | right
    return band | (touches & (area < EDGE_THICKNESS_IN * dpi * np.maximum(w, h)))


def _dark_throughout(ink: np.ndarray, core: float, labels: np.ndarray, stats: np.ndarray, chosen: np.ndarray,
                     text_height: float, dpi: float) -> np.ndarray:
    """Which of the `chosen` components (one flag per label, from label 1) are still large in their
    darkest ink.

    Heavily inked or blurred type runs together into blobs several lines tall, but through ink
    lighter than the letters themselves; at a stricter threshold the blob falls apart into letters,
    while a pen line or a woodcut's black stays whole. The components' darkest ink is labelled in one
    pass: each dark piece lies inside one component, as components never touch."""
    still = np.zeros(chosen.size + 1, bool)
    if not chosen.any():
        return still[1:]
    keep = np.zeros(chosen.size + 1, bool)
    keep[1:] = chosen
    boxes = stats[1:][chosen]  # labelled within the box around them all
    x0, y0 = boxes[:, 0].min(), boxes[:, 1].min()
    x1, y1 = (boxes[:, 0] + boxes[:, 2]).max(), (boxes[:, 1] + boxes[:, 3]).max()
    labels, ink = labels[y0:y1, x0:x1], ink[y0:y1, x0:x1]
    # Made a band of rows at a time, and labelled in 2 bytes a pixel where the pieces are few enough: on a newspaper
    # page the analysis's peak was here, with the page's labels, 18 MB of these labels and 9 of flags beside them.
    darkest = np.empty(labels.shape, np.uint8)
    for top in range(0, labels.shape[0], BAND_ROWS):
        rows = slice(top, top + BAND_ROWS)
        np.logical_and(ink[rows] >= core, keep[labels[rows]], out=darkest[rows], casting="unsafe")
    try:
        _, pieces, found, _ = cv2.connectedComponentsWithStats(darkest, connectivity=8, ltype=cv2.CV_16U)
    except cv2.error:  # more than 65,534 pieces
        _, pieces, found, _ = cv2.connectedComponentsWithStats(darkest, connectivity=8)
    for piece in 1 + np.flatnonzero(large_ink(found[1:, 2], found[1:, 3], text_height, dpi)):
        x, y, w = found[piece, :3]  # the piece's top row holds one of its pixels
        at = x + int(np.argmax(pieces[y, x:x + w] == piece))
        still[labels[y, at]] = True
    return still[1:]


def rules(ink: np.ndarray, dpi: float) -> np.ndarray:
    """Long thin horizontal and vertical lines standing alone (rules, frames, column lines), slightly
    widened. Lines with parallel neighbours close by are an engraving's hatching, not rules."""
    length = max(3, round(RULE_LENGTH_IN * dpi))
    thick = max(3, round(RULE_THICKNESS_IN * dpi))
    reach = max(thick + 2, round(HATCHING_PITCH_IN * dpi))
    lines = np.zeros_like(ink)
    for run, across in (((length, 1), (1, thick)), ((1, length), (thick, 1))):
        straight = cv2.morphologyEx(ink, cv2.MORPH_OPEN, cv2.getStructuringElement(cv2.MORPH_RECT, run))
        solid = cv2.morphologyEx(straight, cv2.MORPH_OPEN, cv2.getStructuringElement(cv2.MORPH_RECT, across))
        thin = straight & ~solid
        # Another thin line a little above or below (left or right): a kernel with its middle left out.
        beside = np.ones((2 * reach + 1, 1) if run[0] > 1 else (1, 2 * reach + 1), np.uint8)
        beside[(slice(reach - thick // 2 - 1, reach + thick // 2 + 2), slice(None)) if run[0] > 1 else
               (slice(None), slice(reach - thick // 2 - 1, reach + thick // 2 + 2))] = 0
        lines |= thin & ~cv2.dilate(thin, beside)
    return cv2.dilate(lines, np.ones((3, 3), np.uint8))


def letter_sized(w, h, area, dpi: float) -> np.ndarray:
    """Components of the size and shape of body-text letters."""
    return (area >= 3) & (h >= LETTER_MIN_IN * dpi) & (h <= LETTER_MAX_IN * dpi) & (w <= 3 * h)


def _plate(mask: np.ndarray, pictures: list[Picture]) -> bool:
    """Whether the page is a plate: most of its ink is in its figures (what is left is figure
    numbers and a title), where a page of text, printed or written, has most of its ink outside them."""
    inside = sum(int(np.count_nonzero(mask[p.box[1]:p.box[3], p.box[0]:p.box[2]])) for p in pictures)  # boxes apart
    return inside >= PLATE_INK * int(np.count_nonzero(mask))


def _one_plate(pictures: list[Picture], dpi: float) -> list[Picture]:
    """The figures of a plate as one picture: the plate is printed, cropped and trained on whole."""
    if len(pictures) < 2:
        return pictures
    x0, y0 = min(p.box[0] for p in pictures), min(p.box[1] for p in pictures)
    x1, y1 = max(p.box[2] for p in pictures), max(p.box[3] for p in pictures)
    area = (x1 - x0) * (y1 - y0)
    cover = sum(p.cover * (p.box[2] - p.box[0]) * (p.box[3] - p.box[1]) for p in pictures) / area
    return [Picture(box=(x0, y0, x1, y1), area=area / dpi / dpi, cover=cover)]


def _type_rows(x, y, w, h, letters, neighbours) -> np.ndarray:
    """The shapes standing in a line of type with one of the large `letters`: mastheads, headlines,
    ad lettering, handwriting.

    A line is followed from letter to letter among the `neighbours` (shapes that may be letters or
    words), two steps from each large letter: each stands beside the next, overlapping it in height,
    like-sized (a capital among small letters, an ascender, a descender). What makes it a line is that
    it stays one row: its letters stand side by side, not above one another, in a band hardly taller
    than they are, where the pieces of a drawing linked the same way spread up and down as well as
    across. Handwriting is such a line without a regular letter height; a blackletter masthead one of
    ornate, heavy letters."""
    index = np.flatnonzero(neighbours | letters)
    index = index[np.argsort(y[index], kind="stable")]  # by top: what can overlap a letter is a slice
    tops = y[index]
    parent: dict[int, int] = {}

    def root(i: int) -> int:
        parent.setdefault(i, i)
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    def alike(i: int) -> np.ndarray:
        near = index[np.searchsorted(tops, y[i] - TYPE_HEIGHTS * h[i]):np.searchsorted(tops, y[i] + h[i])]
        gaps = np.maximum(x[near] - (x[i] + w[i]), x[i] - x[near] - w[near])  # negative where boxes overlap
        beside = (gaps < TYPE_GAP * h[i]) & (gaps > -TYPE_OVERLAP * np.minimum(w[near], w[i]))  # not one inside another
        overlap = np.minimum(y[near] + h[near], y[i] + h[i]) - np.maximum(y[near], y[i])
        level = overlap >= TYPE_LEVEL * np.minimum(h[near], h[i])
        return near[level & (h[near] < TYPE_HEIGHTS * h[i]) & (h[near] > h[i] / TYPE_HEIGHTS) & beside]

    seen = set(np.flatnonzero(letters).tolist())
    step = list(seen)
    for _ in range(TYPE_STEPS):
        following = []
        for i in step:
            for j in alike(i).tolist():
                parent[root(j)] = root(i)
                if j not in seen:
                    seen.add(j)
                    following.append(j)
        step = following
    lines: dict[int, list[int]] = {}
    for i in list(parent):
        lines.setdefault(root(i), []).append(i)
    rows = np.zeros_like(letters)
    for members in lines.values():
        if len(members) < TYPE_ROW_MIN:
            continue
        members = np.array(members)
        band = (y[members] + h[members]).max() - y[members].min()
        across = (x[members] + w[members]).max() - x[members].min()
        if band <= TYPE_BAND * np.median(h[members]) and w[members].sum() <= TYPE_STACK * across:
            rows[members] = True
    return rows


def _masthead_emblem(picture: Picture, display: np.ndarray, page_height: int) -> bool:
    """A vignette set between the words of the title at the head of the page: the paper's emblem,
    printed on every issue's front page, not a picture of its own."""
    x0, y0, x1, y1 = picture.box
    if y0 > MASTHEAD_TOP * page_height:
        return False
    reach = x1 - x0
    # The title's letters, level with it and sized to it: type beside a cartoon is far smaller than it.
    beside = ((display[:, 1] >= y0) & (display[:, 1] + display[:, 3] <= y1)
              & (display[:, 3] >= MASTHEAD_LETTERS * (y1 - y0)))
    left = beside & (display[:, 0] + display[:, 2] <= x0 + reach * 0.1) & (display[:, 0] + display[:, 2] >= x0 - reach)
    right = beside & (display[:, 0] >= x1 - reach * 0.1) & (display[:, 0] <= x1 + reach)
    return bool(left.any() and right.any())


def solid_regions(mask: np.ndarray, dpi: float) -> np.ndarray:
    """Where fine hatching, stippling or a halftone closes into solid ink thicker than any line of
    type: a dense picture whose strokes are too short to stand out one by one."""
    side = max(3, round(SOLID_SIDE_IN * dpi))
    closed = cv2.morphologyEx(mask, cv2.MORPH_CLOSE, np.ones((3, 3), np.uint8))
    return cv2.morphologyEx(closed, cv2.MORPH_OPEN, np.ones((side, side), np.uint8))


def _group(strokes: np.ndarray, stats: np.ndarray, mask: np.ndarray, solid: np.ndarray, dpi: float) -> list[Picture]:
    """Strokes and solid regions near each other form one picture; keep those shaped and filled like one."""
    boxes = solid.copy()
    for i in strokes:
        x, y, w, h = stats[i, :4]
        boxes[y:y + h, x:x + w] = 1
    pictures = []
    for (x, y, w, h), (x0, y0, x1, y1) in near_regions(boxes, dpi, GROUP_IN):
        if min(w, h) < PICTURE_SIDE_MIN_IN * dpi or max(w, h) > PICTURE_ASPECT_MAX * min(w, h):
            continue
        covered = float(boxes[y0:y1, x0:x1].sum())
        cover = covered / ((x1 - x0) * (y1 - y0))
        if cover >= PICTURE_COVER_MIN:
            box = _with_rim(mask, (x0, y0, x1, y1), round(RIM_IN * dpi))
            pictures.append(Picture(box=box, area=(box[2] - box[0]) * (box[3] - box[1]) / dpi / dpi, cover=cover))
    return sorted(pictures, key=lambda p: p.area, reverse=True)


def near_regions(boxes: np.ndarray, dpi: float, near_in: float):
    """Filled boxes closer than `near_in` inches joined into regions: each region's (x, y, w, h) on the grid
    and the tight box (x0, y0, x1, y1) of what is filled in it."""
    # Which strokes are near each other is decided on a grid four times coarser: a quarter of a
    # stroke's box is as good as the whole for that, at a sixteenth of the cost.
    coarse = cv2.dilate(boxes, np.ones((GRID, GRID), np.uint8), anchor=(0, 0))[::GRID, ::GRID]
    near = max(1, round(near_in * dpi / GRID))
    grown = cv2.dilate(coarse, cv2.getStructuringElement(cv2.MORPH_RECT, (near, near)))
    _, _, regions, _ = cv2.connectedComponentsWithStats(grown, connectivity=8)
    for x, y, w, h, _ in regions[1:] * GRID:
        inside = boxes[y:y + h, x:x + w]
        rows, cols = np.flatnonzero(inside.any(axis=1)), np.flatnonzero(inside.any(axis=0))
        if rows.size:
            yield (x, y, w, h), (x + cols[0], y + rows[0], x + cols[-1] + 1, y + rows[-1] + 1)


def _with_rim(mask: np.ndarray, box: tuple[int, int, int, int], rim: int) -> tuple[int, int, int, int]:
    """The box grown to the ink lying within `rim` pixels of it."""
    x0, y0 = max(0, box[0] - rim), max(0, box[1] - rim)
    x1, y1 = min(mask.shape[1], box[2] + rim), min(mask.shape[0], box[3] + rim)
    near = mask[y0:y1, x0:x1]
    rows, cols = np.flatnonzero(near.any(axis=1)), np.flatnonzero(near.any(axis=0))
    return (int(min(box[0], x0 + cols[0])), int(min(box[1], y0 + rows[0])),
            int(max(box[2], x0 + cols[-1] + 1)), int(max(box[3], y0 + rows[-1] + 1)))
