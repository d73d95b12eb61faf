"""Composed pages for the picture finder's training, made from real material, every box known exactly.

Real boxed pages are scarce (a few hundred, a few dozen pictures a collection), so the finder learns mostly from
pages composed of them: real pages (newspapers, manuscripts, notebooks, book pages, registers) as the ground, with
pictures cut from other real pages' counted boxes set into them on cleared paper, often with a strip of a real
page's type under them as a legend would be; plates of one or two pictures on bare paper; every page then worn
the way scans are (faded, binarised, blurred, lit unevenly, showing the other side through, photographed on a
dark bed, JPEG). Beside the real pictures, two more materials: real photographs turned into halftone screens, and
the generator's engravings (curation.sources.synthetic), one material among the others, never alone.

Each composed page remembers the sources of all it was made of, so that a fold of the training that holds a
source out learns from no page holding any of its material.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import cv2
import numpy as np

WORK_SIDE = 1024  # pages are composed at this longer side: the network reads half of it
PICTURE_SIDE = 640  # a picture's material is kept at most this large
COUNTED, IGNORED = 1, -1  # a box a picture lies in; a box whose content teaches nothing (an ornament, a seal)


@dataclass
class Sheet:
    """A real page as material: gray at WORK_SIDE, its boxes in fractions of the page with COUNTED or IGNORED."""

    gray: np.ndarray
    boxes: list[tuple[tuple[float, float, float, float], int]]
    source: str
    name: str = ""

    @property
    def blank(self) -> bool:
        """No box at all: its text may be cut as a legend's strip."""
        return not self.boxes


@dataclass
class Material:
    """A picture to set into a page: its gray pixels (paper near white) and where it came from."""

    gray: np.ndarray
    source: str


@dataclass
class Composed:
    gray: np.ndarray
    boxes: list[tuple[tuple[float, float, float, float], int]]
    sources: set[str] = field(default_factory=set)


def at_work_side(gray: np.ndarray, side: int = WORK_SIDE) -> np.ndarray:
    scale = side / max(gray.shape)
    size = (max(1, round(gray.shape[1] * scale)), max(1, round(gray.shape[0] * scale)))
    return cv2.resize(gray, size, interpolation=cv2.INTER_AREA if scale < 1 else cv2.INTER_LINEAR)


def cut_pictures(gray: np.ndarray, boxes, source: str) -> list[Material]:
    """The counted pictures of a full-resolution page as material, their paper brought to white."""
    h, w = gray.shape
    pieces = []
    for (x0, y0, x1, y1), kind in boxes:
        if kind != COUNTED:
            continue
        crop = gray[int(y0 * h):int(np.ceil(y1 * h)), int(x0 * w):int(np.ceil(x1 * w))]
        if min(crop.shape) < 12:
            continue
        pieces.append(Material(whitened(at_work_side(crop, PICTURE_SIDE) if max(crop.shape) > PICTURE_SIDE else crop),
                               source))
    return pieces


def whitened(gray: np.ndarray) -> np.ndarray:
    """Gray stretched so its paper (the 95th percentile) is white and its darkest ink black."""
    paper, ink = np.percentile(gray, 95), np.percentile(gray, 1)
    return np.clip((gray.astype(np.float32) - ink) * 255 / max(paper - ink, 1), 0, 255).astype(np.uint8)


def halftone(photo: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A photograph as a printed halftone: a screen of dots at 45 degrees, their size following the tone."""
    gray = at_work_side(photo, int(rng.integers(200, PICTURE_SIDE)))
    period = float(rng.uniform(3.0, 6.0))
    yy, xx = np.mgrid[0:gray.shape[0], 0:gray.shape[1]].astype(np.float32)
    u, v = (xx + yy) / (period * np.sqrt(2)), (xx - yy) / (period * np.sqrt(2))
    screen = (np.cos(2 * np.pi * u) * np.cos(2 * np.pi * v) + 1) / 2  # 0..1, a dot's centre at 1
    dots = np.where(gray.astype(np.float32) / 255 < screen, 0, 255).astype(np.uint8)
    return cv2.GaussianBlur(dots, (0, 0), 0.6)


def engraving(seed: int) -> np.ndarray:
    """One of the generator's engravings, scanned and cut to its box."""
    from ..sources.synthetic import PageSpec, page_image_and_pictures

    rgb, boxes = page_image_and_pictures(PageSpec(kind="engraving", seed=seed, dpi=100, border=False, uneven=False))
    gray = cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY)
    x0, y0, x1, y1 = boxes[0]
    return whitened(gray[y0:y1, x0:x1])


def compose(rng: np.random.Generator, sheets: list[Sheet], pictures: list[Material]) -> Composed:
    """One page: a real page with pictures set into it, or a plate; then worn like a scan."""
    ground = sheets[int(rng.integers(len(sheets)))]
    plate = rng.random() < 0.2
    if plate:
        page, boxes, sources = _bare_paper(ground, rng), [], {ground.source}
    else:
        page, boxes, sources = ground.gray.copy(), list(ground.boxes), {ground.source}
    legends = [s for s in sheets if s.blank]
    by_source: dict[str, list[Material]] = {}
    for picture in pictures:
        by_source.setdefault(picture.source, []).append(picture)
    names = sorted(by_source)
    for _ in range(int(rng.integers(1, 3 if plate else 4))):
        chosen = by_source[names[int(rng.integers(len(names)))]]  # every source alike: one would otherwise rule
        picture = chosen[int(rng.integers(len(chosen)))]
        placed = _place(page, picture.gray, rng, large=plate, avoid=[b for b, kind in boxes if kind == COUNTED])
        if placed is None:
            continue
        box, clear = placed
        boxes = [(b, IGNORED if kind == COUNTED and _overlaps(b, clear) else kind) for b, kind in boxes
                 if not _inside(b, clear)]
        boxes.append((box, COUNTED))
        sources.add(picture.source)
        if legends and rng.random() < 0.5:
            strip = legends[int(rng.integers(len(legends)))]
            if _legend(page, strip.gray, box, rng):
                sources.add(strip.source)
    page, boxes = _worn(page, boxes, sheets, rng)
    return Composed(page, boxes, sources)


def _bare_paper(ground: Sheet, rng: np.random.Generator) -> np.ndarray:
    h, w = ground.gray.shape
    tone = float(np.percentile(ground.gray, 90))
    return np.clip(rng.normal(tone, 2.0, (h, w)), 0, 255).astype(np.uint8)


def _place(page: np.ndarray, picture: np.ndarray, rng: np.random.Generator, large: bool, avoid=()):
    """Set `picture` into `page` on a cleared patch of its paper, clear of the pictures in `avoid` where one of a
    few tries finds room; (its box, the cleared box) in fractions."""
    h, w = page.shape
    ph, pw = picture.shape
    width = rng.uniform(0.35, 0.85) if large else rng.uniform(0.12, 0.6)
    scale = min(width * w / pw, (0.7 if large else 0.5) * h / ph)
    size = (max(8, round(pw * scale)), max(8, round(ph * scale)))
    if size[0] >= w - 4 or size[1] >= h - 4:
        return None
    if rng.random() < 0.5:
        picture = picture[:, ::-1]
    resized = cv2.resize(picture, size, interpolation=cv2.INTER_AREA if scale < 1 else cv2.INTER_LINEAR)
    pad = int(rng.uniform(0.005, 0.03) * min(h, w))
    for _ in range(8):
        x, y = int(rng.integers(0, w - size[0])), int(rng.integers(0, h - size[1]))
        spot = ((x - pad) / w, (y - pad) / h, (x + size[0] + pad) / w, (y + size[1] + pad) / h)
        if not any(_overlaps(spot, b) for b in avoid):
            break
    cx0, cy0, cx1, cy1 = max(0, x - pad), max(0, y - pad), min(w, x + size[0] + pad), min(h, y + size[1] + pad)
    paper = float(np.percentile(page, 90))
    page[cy0:cy1, cx0:cx1] = np.clip(rng.normal(paper, 2.0, (cy1 - cy0, cx1 - cx0)), 0, 255).astype(np.uint8)
    patch = page[y:y + size[1], x:x + size[0]]
    darkness = rng.uniform(0.6, 1.0)  # a faded impression prints lighter than the page's type
    ink = 255 - (255 - resized.astype(np.float32)) * darkness
    page[y:y + size[1], x:x + size[0]] = np.minimum(patch, ink * paper / 255).astype(np.uint8)
    ys, xs = np.nonzero(resized < 200)
    if not len(xs):
        return None
    box = ((x + xs.min()) / w, (y + ys.min()) / h, (x + xs.max() + 1) / w, (y + ys.max() + 1) / h)
    return box, (cx0 / w, cy0 / h, cx1 / w, cy1 / h)


def _legend(page: np.ndarray, text: np.ndarray, box, rng: np.random.Generator) -> bool:
    """A strip of a real page's type set under (or over) the picture at `box`, as a legend is printed."""
    h, w = page.shape
    th, tw = text.shape
    x0, y0, x1, y1 = (round(v * s) for v, s in zip(box, (w, h, w, h)))
    height = int(rng.uniform(0.012, 0.035) * h)
    width = min(x1 - x0, tw - 2, int((x1 - x0) * rng.uniform(0.4, 1.0)))
    gap = int(rng.uniform(0.004, 0.015) * h)
    top = y1 + gap if rng.random() < 0.8 else y0 - gap - height
    if width < 20 or height < 4 or top < 0 or top + height > h or height >= th:
        return False
    sx, sy = int(rng.integers(0, tw - width)), int(rng.integers(0, th - height))
    strip = text[sy:sy + height, sx:sx + width]
    if (strip < 160).mean() < 0.02:  # bare paper: no legend
        return False
    left = x0 + (x1 - x0 - width) // 2
    page[top:top + height, left:left + width] = np.minimum(page[top:top + height, left:left + width], strip)
    return True


def _worn(page: np.ndarray, boxes, sheets: list[Sheet], rng: np.random.Generator):
    """The page worn as scans are; boxes moved where the page moves (a dark bed around it)."""
    out = page.astype(np.float32)
    h, w = out.shape
    if rng.random() < 0.2:  # the other side showing through
        other = sheets[int(rng.integers(len(sheets)))].gray
        back = cv2.resize(other, (w, h))[:, ::-1].astype(np.float32)
        out = np.minimum(out, 255 - (255 - back) * rng.uniform(0.1, 0.3))
    if rng.random() < 0.3:  # faded
        out = 255 - (255 - out) * rng.uniform(0.45, 0.8)
    if rng.random() < 0.3:  # uneven light
        ramp = np.linspace(rng.uniform(0.75, 1.0), rng.uniform(0.95, 1.1), w if rng.random() < 0.5 else h)
        out = out * (ramp[None, :] if len(ramp) == w else ramp[:, None])
    if rng.random() < 0.3:
        out = cv2.GaussianBlur(out, (0, 0), rng.uniform(0.5, 1.3))
    out += rng.normal(0, rng.uniform(0, 6), out.shape)
    out = np.clip(out, 0, 255).astype(np.uint8)
    if rng.random() < 0.15:  # bitonal
        _, out = cv2.threshold(out, 0, 255, cv2.THRESH_BINARY + cv2.THRESH_OTSU)
    if rng.random() < 0.12:  # an open book photographed on a dark bed
        out, boxes = _on_dark_bed(out, boxes, rng)
    if rng.random() < 0.5:
        ok, data = cv2.imencode(".jpg", out, [cv2.IMWRITE_JPEG_QUALITY, int(rng.integers(35, 90))])
        out = cv2.imdecode(data, cv2.IMREAD_GRAYSCALE)
    return out, boxes


def _on_dark_bed(page: np.ndarray, boxes, rng: np.random.Generator):
    h, w = page.shape
    left, right, top, bottom = (int(rng.uniform(0, 0.12) * s) for s in (w, w, h, h))
    bed = np.clip(rng.normal(rng.uniform(15, 70), 6, (h + top + bottom, w + left + right)), 0, 255).astype(np.uint8)
    bed[top:top + h, left:left + w] = page
    H, W = bed.shape
    moved = [(((b[0] * w + left) / W, (b[1] * h + top) / H, (b[2] * w + left) / W, (b[3] * h + top) / H), kind)
             for b, kind in boxes]
    return bed, moved


def _overlaps(a, b) -> bool:
    return min(a[2], b[2]) > max(a[0], b[0]) and min(a[3], b[3]) > max(a[1], b[1])


def _inside(a, b) -> bool:
    return a[0] >= b[0] and a[1] >= b[1] and a[2] <= b[2] and a[3] <= b[3]
