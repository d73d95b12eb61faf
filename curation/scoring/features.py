"""Cheap page features beside sigma, computed from the same 144 dpi luma the score is taken from.

sigma alone is fooled by scans: dark scanner-bed borders and bleed-through lift text pages, faded
engravings fall low. These features look at what is on the paper instead of how much it varies:

- `sigma_content`: sigma inside the content box, with dark scanner-bed bands trimmed away.
- `ink_tone`: how dark the darkest ink is relative to the paper around it (0 paper, 1 black);
  lighting is flattened first, so uneven light and yellowing do not count as ink.
- `ink_coverage`: share of the content covered by ink.
- `picture_area`: square inches of the page's largest picture, its box (curation.scoring.pictures: ink
  that is not text, rules or frames); `picture_count` how many pictures it holds, `picture_share` the share
  of the content they cover, `text_height` the body-text letter height in inches.
- `picture_box`: the largest picture's bounding box, in reference pixels; `pictures` every picture's.
- `phash`: a 64-bit perceptual hash of the plate (else of the content), to find a plate printed twice.
"""

from __future__ import annotations

import json
import zlib
from dataclasses import asdict, dataclass

import cv2
import numpy as np

from .pictures import find_pictures

FEATURES_VERSION = 4  # raise when a feature's definition changes: `rescore` recomputes older rows
FEATURE_SCALE = 2  # the content box and the hash are found at half the reference resolution
BORDER_DARKNESS = 0.5  # a row or column darker than half the paper tone is scanner bed, not page
BACKGROUND_KERNEL = 9
BACKGROUND_BLUR = 25
INK_FLOOR = 0.1
INK_FRACTION = 0.45  # ink is whatever reaches this share of the page's own darkest ink
REFERENCE_DPI = 144
ANALYSIS_DPI = 80  # the page analysis runs at this resolution at most


@dataclass(frozen=True)
class PageFeatures:
    sigma_content: float
    ink_tone: float
    ink_coverage: float
    picture_share: float
    picture_area: float
    picture_count: int
    text_height: float
    pictures: tuple[tuple[int, int, int, int, float], ...]  # x0, y0, x1, y1, square inches; largest first
    phash: int

    @property
    def picture_box(self) -> tuple[int, int, int, int] | None:
        return self.pictures[0][:4] if self.pictures else None

    def as_columns(self) -> dict:
        values = asdict(self)
        values["pictures"] = json.dumps([list(p) for p in self.pictures])
        values.update(zip(("picture_x0", "picture_y0", "picture_x1", "picture_y1"), self.picture_box or (None,) * 4))
        return values


def feature_columns(gray: np.ndarray, box_scale: float = 1.0) -> dict:
    """The features as manifest columns; `box_scale` maps `gray`'s pixels to reference pixels."""
    columns = page_features(gray, dpi=REFERENCE_DPI / box_scale, box_scale=box_scale).as_columns()
    columns["features_version"] = FEATURES_VERSION
    return columns


@dataclass(frozen=True)
class PageAnalysis:
    """A page as the analysis sees it: the content inside the scanner bed, and its ink map at the
    analysis resolution (`dpi`), where ink is what reaches `threshold`."""

    content: np.ndarray  # the gray content, at the page's own resolution
    offset: tuple[int, int]  # the content's left and top in the page's pixels
    ink: np.ndarray
    threshold: float
    tone: float
    dpi: float
    scale: float  # analysis pixels to the page's

    def to_page(self, box, box_scale: float = 1.0) -> tuple[int, int, int, int]:
        """A box in analysis pixels, in the page's pixels (times `box_scale`)."""
        left, top = self.offset
        return tuple(round((v * self.scale + o) * box_scale) for v, o in zip(box, (left, top, left, top)))


# The analysis of the page in hand: the scorer and the picture finder read the same decoded page in a worker, and
# the second asks for what the first worked out (about 5 ms a page). One page's, kept until the next is analysed;
# known by its pixels' checksum (half a millisecond), so a page drawn on since is analysed again.
_last: tuple[tuple, tuple] | None = None


def analyse_page(gray: np.ndarray, dpi: float = REFERENCE_DPI) -> tuple[PageAnalysis | None, np.ndarray]:
    """The page analysis of a grayscale page at `dpi` (None for a page with no content inside its
    scanner bed), and the page at half size, which the content box and the hash are read from. Neither is
    to be written to: the same page asked for again at the same `dpi` gets the same ones."""
    global _last
    key = (gray.shape, dpi, zlib.crc32(np.ascontiguousarray(gray)))
    if _last is not None and _last[0] == key:
        return _last[1]
    forget_page()  # the page before's pixels go before this one's analysis is made beside them
    analysed = _analyse(gray, dpi)
    _last = (key, analysed)
    return analysed


def forget_page() -> None:
    """Let the analysis of the page in hand go, and the page's pixels it holds (its content): a worker is done with
    a page before it decodes the next, which need not be made beside them (a newspaper's: 20-30 MB)."""
    global _last
    _last = None


def _analyse(gray: np.ndarray, dpi: float) -> tuple[PageAnalysis | None, np.ndarray]:
    h, w = gray.shape
    small = cv2.resize(gray, (max(1, w // FEATURE_SCALE), max(1, h // FEATURE_SCALE)), interpolation=cv2.INTER_AREA)
    top, bottom, left, right = (v * FEATURE_SCALE for v in content_box(small))
    content = gray[top:bottom, left:right]
    if content.size == 0:
        return None, small
    s = FEATURE_SCALE
    work, work_dpi = _analysis_image(content, dpi)
    ink = ink_map(work, work_dpi / 72, paper_from=small[top // s:bottom // s, left // s:right // s])
    tone = _percentile_u8(ink, 99.5) / 255
    threshold = 255 * max(INK_FRACTION * tone, INK_FLOOR)
    return PageAnalysis(content, (left, top), ink, threshold, tone, work_dpi, dpi / work_dpi), small


def page_features(gray: np.ndarray, dpi: float = REFERENCE_DPI, box_scale: float = 1.0) -> PageFeatures:
    """Features of a page from its grayscale image at `dpi` (the reference resolution by default);
    boxes come out in `gray`'s pixels times `box_scale`."""
    analysis, small = analyse_page(gray, dpi)
    if analysis is None:
        return PageFeatures(0.0, 0.0, 0.0, 0.0, 0.0, 0, 0.0, (), perceptual_hash(small))
    s = FEATURE_SCALE
    left, top = analysis.offset
    content, ink, threshold, tone, scale = analysis.content, analysis.ink, analysis.threshold, analysis.tone, analysis.scale
    small_content = small[top // s:(top + content.shape[0]) // s, left // s:(left + content.shape[1]) // s]
    layout = find_pictures(ink, threshold, analysis.dpi)
    boxes = tuple((*analysis.to_page(p.box, box_scale), round(p.area, 3))
                  for p in layout.pictures)
    # The plate itself identifies a reprint; borders and the text around it differ between issues.
    plate = small_content
    if layout.pictures:
        x0, y0, x1, y1 = (int(v * scale) // s for v in layout.pictures[0].box)
        plate = plate[y0:y1 + 1, x0:x1 + 1]
    return PageFeatures(
        sigma_content=float(cv2.meanStdDev(content)[1][0, 0]),
        ink_tone=float(tone),
        ink_coverage=np.count_nonzero(ink >= threshold) / ink.size,
        picture_share=layout.picture_share,
        picture_area=layout.picture_area,
        picture_count=len(layout.pictures),
        text_height=layout.text_height,
        pictures=boxes,
        phash=perceptual_hash(plate),
    )


def _analysis_image(content: np.ndarray, dpi: float) -> tuple[np.ndarray, float]:
    """The content at ANALYSIS_DPI at most, with its resolution: what the page analysis needs of
    letters and strokes survives there, at a third of the pixels of 144 dpi."""
    if dpi <= ANALYSIS_DPI:
        return content, dpi
    scale = ANALYSIS_DPI / dpi
    size = (max(1, round(content.shape[1] * scale)), max(1, round(content.shape[0] * scale)))
    return cv2.resize(content, size, interpolation=cv2.INTER_AREA), ANALYSIS_DPI


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


def ink_map(content: np.ndarray, scale: float = 1.0, paper_from: np.ndarray | None = None) -> np.ndarray:
    """Ink strength 0..255 relative to the local paper tone (a dilated, blurred background);
    `scale` is the image's resolution over 72 dpi. The paper tone changes slowly, so it may be
    estimated on `paper_from`, the same content at a lower resolution, at a fraction of the cost."""
    source = content if paper_from is None else paper_from
    scale *= source.shape[1] / content.shape[1]
    kernel, blur = max(3, round(BACKGROUND_KERNEL * scale)), max(3, round(BACKGROUND_BLUR * scale))
    paper = cv2.blur(cv2.dilate(source, np.ones((kernel, kernel), np.uint8)), (blur, blur))
    if paper_from is not None:
        paper = cv2.resize(paper, (content.shape[1], content.shape[0]), interpolation=cv2.INTER_LINEAR)
    paper = np.maximum(paper, content)
    ink = cv2.divide(cv2.subtract(paper, content), np.maximum(paper, 1), scale=255)
    return ink


def perceptual_hash(gray: np.ndarray) -> int:
    """64-bit DCT hash (pHash): near-identical images differ in a few bits."""
    small = area_resize(gray, (32, 32)).astype(np.float32)
    low = cv2.dct(small)[:8, :8].flatten()
    bits = low > np.median(low[1:])
    value = int(np.packbits(bits).view(">u8")[0])
    return value - (1 << 64) if value >= 1 << 63 else value  # SQLite integers are signed


def area_resize(image: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """`image` shrunk to `size` (width, height) by area averaging. OpenCV's area filter is fast only
    for whole-number factors: the image is first cut to a multiple of the largest whole factor (a few
    edge pixels at most) and shrunk by it, and only the small rest is resized by the general filter."""
    h, w = image.shape[:2]
    step = min(w // size[0], h // size[1])
    if step > 1:
        image = image[:h - h % step, :w - w % step]
        image = cv2.resize(image, (w // step, h // step), interpolation=cv2.INTER_AREA)
    if image.shape[1] == size[0] and image.shape[0] == size[1]:
        return image
    return cv2.resize(image, size, interpolation=cv2.INTER_AREA)


def hamming(a: int, b: int) -> int:
    return ((a ^ b) & ((1 << 64) - 1)).bit_count()


def _percentile_u8(values: np.ndarray, q: float) -> float:
    counts = cv2.calcHist([values], [0], None, [256], [0, 256]).ravel().astype(np.int64)  # exact to 2**24 a bin
    return float(np.searchsorted(np.cumsum(counts), q / 100 * values.size))
