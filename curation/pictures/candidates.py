"""Candidate pictures on a page, tuned for recall, each with the page analysis's measures of it.

A picture missed here is lost; a wrong candidate costs one look by the verdict. So candidates come
from several readings of the same ink, and overlap freely:

- the rule-based finder's own pictures (curation.scoring.pictures), at the page's ink threshold and
  at half of it (faint hatching, a pale woodcut);
- the ink that is not text (the text detector's lines taken out), grouped by nearness, at two
  distances (cuts standing apart, or one picture's scattered strokes), at both thresholds;
- the same with every long straight line taken out as well: the ruled frames of a book page join
  its figures to the frame otherwise.

The measures describe the box the way the analysis sees it (size, shape, text inside and around,
ink, strokes, solid areas); the verdict weighs them with the crop's embedding.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

from ..scoring import pictures as analysis
from ..scoring.features import PageAnalysis
from .text import text_mask

THRESHOLDS = (1.0, 0.5)  # shares of the page's ink threshold
GROUPINGS_IN = (0.15, 0.4)  # strokes this close belong to one candidate
STROKE_MIN_IN = 0.15  # ink not in text and at least this long may be part of a picture
SIDE_MIN_IN = 0.25
ASPECT_MAX = 10.0
LINE_MIN_IN = 1.0  # straight runs this long and thin are ruled lines, with neighbours or not
LINE_THICKNESS_IN = 0.05
MEASURES = (
    "log_area", "log_aspect", "page_share", "top", "text", "text_around", "ink", "ink_faint",
    "solid", "letters", "components", "largest", "stroke", "stroke_p90", "gray_spread", "text_height",
    "at_border", "hollow", "from_finder", "from_free_ink", "from_bare_ink", "faint",
)


@dataclass(frozen=True)
class Candidate:
    box: tuple[int, int, int, int]  # x0, y0, x1, y1 in the page's pixels
    area: float  # square inches of the box
    measures: dict[str, float]

    def vector(self) -> np.ndarray:
        return np.array([self.measures[name] for name in MEASURES], np.float64)


def propose(page: PageAnalysis, content_text: np.ndarray) -> list[Candidate]:
    """Every candidate on an analysed page; `content_text` is its text mask (`text_over_content`)."""
    found: dict[tuple[int, int, int, int], str] = {}
    for share in THRESHOLDS:
        ink = (page.ink >= page.threshold * share).astype(np.uint8)
        ink &= ~analysis.rules(ink, page.dpi)
        free = ink & ~cv2.dilate(content_text, np.ones((3, 3), np.uint8))
        for mask, origin in ((free, "free"), (free & ~straight_lines(free, page.dpi), "bare")):
            strokes = _stroke_boxes(mask, page.dpi)
            for near in GROUPINGS_IN:
                for box in _regions(strokes, page.dpi, near):
                    found.setdefault(box, f"{origin}-{share}")
        for picture in analysis.find_pictures(page.ink, page.threshold * share, page.dpi).pictures:
            found.setdefault(tuple(int(v) for v in picture.box), f"finder-{share}")
    measure = _Measurer(page, content_text)
    return [Candidate(page.to_page(box), _area(box, page.dpi), measure(box, origin)) for box, origin in found.items()]


def text_over_content(page: PageAnalysis, text: np.ndarray) -> np.ndarray:
    """The text mask over the page's content, at the analysis resolution, from the text detector's map
    over the whole page."""
    left, top = page.offset
    height, width = page.content.shape
    inside = text[top:top + height, left:left + width]
    return text_mask(cv2.resize(inside, page.ink.shape[::-1], interpolation=cv2.INTER_AREA))


def straight_lines(ink: np.ndarray, dpi: float) -> np.ndarray:
    """Every long thin horizontal or vertical run, slightly widened: frames and ruled borders, and an
    engraving's long straight hatching too, which the candidates with lines left in still hold."""
    length = max(3, round(LINE_MIN_IN * dpi))
    thick = max(3, round(LINE_THICKNESS_IN * dpi))
    lines = np.zeros_like(ink)
    for run, across in (((length, 1), (1, thick)), ((1, length), (thick, 1))):
        straight = cv2.morphologyEx(ink, cv2.MORPH_OPEN, cv2.getStructuringElement(cv2.MORPH_RECT, run))
        solid = cv2.morphologyEx(straight, cv2.MORPH_OPEN, cv2.getStructuringElement(cv2.MORPH_RECT, across))
        lines |= straight & ~solid
    return cv2.dilate(lines, np.ones((3, 3), np.uint8))


def _stroke_boxes(mask: np.ndarray, dpi: float) -> np.ndarray:
    """The boxes of the strokes long enough to belong to a picture, and the solid areas, filled."""
    _, labels, stats, _ = cv2.connectedComponentsWithStats(mask, connectivity=8)
    x, y, w, h, area = stats[1:].T
    thin = (area < analysis.RULE_THICKNESS_IN * dpi * np.maximum(w, h)) & (
        np.maximum(w, h) > analysis.LINE_ASPECT * np.minimum(w, h))
    edge = analysis.page_edge(x, y, w, h, area, labels.shape, dpi)
    boxes = analysis.solid_regions(mask, dpi).copy()
    for i in np.flatnonzero((np.maximum(w, h) > STROKE_MIN_IN * dpi) & ~thin & ~edge):
        boxes[y[i]:y[i] + h[i], x[i]:x[i] + w[i]] = 1
    return boxes


def _regions(boxes: np.ndarray, dpi: float, near_in: float) -> list[tuple[int, int, int, int]]:
    """Filled boxes closer than `near_in` joined into regions; each region's tight box."""
    found = []
    for _, (x0, y0, x1, y1) in analysis.near_regions(boxes, dpi, near_in):
        short, long = sorted((x1 - x0, y1 - y0))
        if short >= SIDE_MIN_IN * dpi and long <= ASPECT_MAX * short:
            found.append((int(x0), int(y0), int(x1), int(y1)))
    return found


def _area(box, dpi: float) -> float:
    return (box[2] - box[0]) * (box[3] - box[1]) / dpi / dpi


class _Measurer:
    """The measures of candidate boxes on one page (analysis pixels), from maps made once a page."""

    def __init__(self, page: PageAnalysis, text: np.ndarray):
        self.page, self.text = page, text
        self.ink = (page.ink >= page.threshold).astype(np.uint8)
        self.faint = (page.ink >= page.threshold * THRESHOLDS[-1]).astype(np.uint8)
        self.solid = analysis.solid_regions(self.faint, page.dpi)
        self.stroke_width = cv2.distanceTransform(self.faint, cv2.DIST_L2, 3)
        _, labels, stats, _ = cv2.connectedComponentsWithStats(self.ink, connectivity=8)
        x, y, w, h, self.component_area = stats[1:].T
        self.letters = analysis.letter_sized(w, h, self.component_area, page.dpi)
        self.text_height = float(np.median(h[self.letters])) if self.letters.any() else (
            analysis.DEFAULT_TEXT_HEIGHT_IN * page.dpi)
        self.centre_x, self.centre_y = x + w / 2, y + h / 2

    def __call__(self, box, origin: str) -> dict[str, float]:
        page, dpi = self.page, self.page.dpi
        height, width = self.ink.shape
        x0, y0, x1, y1 = box
        w, h = x1 - x0, y1 - y0
        inside = np.s_[y0:y1, x0:x1]
        around = np.s_[max(0, y0 - h // 4):y1 + h // 4, max(0, x0 - w // 4):x1 + w // 4]
        core = np.s_[y0 + h // 5:y1 - h // 5, x0 + w // 5:x1 - w // 5]
        components = ((self.centre_x >= x0) & (self.centre_x < x1) & (self.centre_y >= y0) & (self.centre_y < y1))
        faint = self.faint[inside]
        widths = self.stroke_width[inside][faint > 0]
        ink_share = float(self.ink[inside].mean())
        scale = page.scale
        gray = page.content[int(y0 * scale):int(y1 * scale), int(x0 * scale):int(x1 * scale)]
        return {
            "log_area": float(np.log(w * h / dpi / dpi + 1e-3)),
            "log_aspect": float(abs(np.log(w / h))),
            "page_share": w * h / (width * height),
            "top": y0 / height,
            "text": float(self.text[inside].mean()),
            "text_around": float(self.text[around].mean()),
            "ink": ink_share,
            "ink_faint": float(faint.mean()),
            "solid": float(self.solid[inside].mean()),
            "letters": float(self.letters[components].mean()) if components.any() else 0.0,
            "components": float(np.log1p(components.sum() / (w * h / dpi / dpi))),
            "largest": float(self.component_area[components].max() / max(1, faint.sum())) if components.any() else 0.0,
            "stroke": float(np.median(widths)) / dpi * 100 if widths.size else 0.0,
            "stroke_p90": float(np.percentile(widths, 90)) / dpi * 100 if widths.size else 0.0,
            "gray_spread": float(gray.std() / 64) if gray.size else 0.0,
            "text_height": self.text_height / dpi * 10,
            "at_border": float(min(x0, y0, width - x1, height - y1) < analysis.EDGE_NEAR_IN * dpi),
            "hollow": float(self.ink[core].mean() / max(1e-3, ink_share)) if w > 5 and h > 5 else 1.0,
            "from_finder": float(origin.startswith("finder")),
            "from_free_ink": float(origin.startswith("free")),
            "from_bare_ink": float(origin.startswith("bare")),
            "faint": float(not origin.endswith("-1.0")),
        }
