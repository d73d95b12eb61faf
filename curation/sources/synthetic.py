"""Synthetic scanned periodical pages, for tests, benchmarks and the sample archive.

Pages imitate a 1885-1917 fashion periodical as a flatbed scanner sees it: yellowed paper with uneven
light and grain, text in columns, engravings drawn with hatching, mixed pages, and the artifacts that
fool a plain sigma cutoff (dark scanner-bed borders, bleed-through from the reverse, faded ink).
Every page comes with its kind, so quality work can measure precision and recall against it.
"""

from __future__ import annotations

import dataclasses
import pathlib
from collections.abc import Iterable, Iterator

import cv2
import numpy as np
import pymupdf

LETTER_IN = (8.5, 11.0)
NEWSPAPER_IN = (23.0, 35.0)  # a broadsheet's page (the Evening Star's and the Omaha Bee's are 22-24 x 31-35 in)
ILLUSTRATION_KINDS = frozenset({"engraving", "mixed", "faded_engraving"})
TEXT_KINDS = frozenset({"text", "ornament", "blank"})


@dataclasses.dataclass(frozen=True)
class PageSpec:
    """What to draw on one page. `kind` is the ground truth a curator would decide on."""

    kind: str = "text"
    seed: int = 0
    dpi: int = 300
    border: bool = False
    bleed: bool = False
    uneven: bool = True
    inches: tuple[float, float] = LETTER_IN
    rescan: int = 0  # the same printed page scanned again: new paper, light, grain and placement

    @property
    def is_illustration(self) -> bool:
        return self.kind in ILLUSTRATION_KINDS


def page_image(spec: PageSpec) -> np.ndarray:
    """Render one synthetic scan as an RGB uint8 array."""
    return page_image_and_pictures(spec)[0]


def page_image_and_pictures(spec: PageSpec) -> tuple[np.ndarray, list[tuple[int, int, int, int]]]:
    """One synthetic scan (RGB uint8) and the box of each engraving on it (x0, y0, x1, y1 in its pixels, tight
    around the plate's ink): the ground truth a picture finder is measured and trained against."""
    rng = np.random.default_rng(spec.seed)
    w, h = (round(side * spec.dpi) for side in spec.inches)
    ink = np.zeros((h, w), np.uint8)  # 0 = paper, 255 = full ink
    scale = spec.dpi / 300
    margin = int(0.07 * min(spec.inches) * spec.dpi)
    body = (margin, margin, w - margin, h - margin)
    pictures = []
    if spec.kind in ("text", "ornament"):
        if rng.random() < 0.4:
            body = _heading(ink, body, rng, scale)
        _text_columns(ink, body, rng, scale)
        if spec.kind == "ornament":
            _ornament(ink, body, rng, scale)
    elif spec.kind in ("engraving", "faded_engraving"):
        pictures.append(_engraving(ink, body, rng, scale))
    elif spec.kind == "mixed":
        x0, y0, x1, y1 = body
        split = y0 + int((y1 - y0) * rng.uniform(0.35, 0.6))
        # The plate spans the page, or sits in one half with text beside it.
        if rng.random() < 0.5:
            pictures.append(_engraving(ink, (x0, y0, x1, split - int(40 * scale)), rng, scale))
        else:
            mid = (x0 + x1) // 2
            left = rng.random() < 0.5
            pictures.append(_engraving(ink, (x0, y0, mid - int(20 * scale), split) if left else
                                       (mid + int(20 * scale), y0, x1, split), rng, scale))
            _text_columns(ink, (mid + int(20 * scale), y0, x1, split) if left else (x0, y0, mid - int(20 * scale), split), rng, scale)
        _text_columns(ink, (x0, split + int(20 * scale), x1, y1), rng, scale)
    elif spec.kind == "newspaper":
        pictures = _newspaper(ink, _heading(ink, body, rng, scale), rng, scale)
    elif spec.kind != "blank":
        raise ValueError(f"unknown page kind {spec.kind!r}")
    strength = rng.uniform(0.3, 0.45) if spec.kind == "faded_engraving" else rng.uniform(0.8, 0.95)
    if spec.rescan:
        rng = np.random.default_rng((spec.seed, spec.rescan))
        shift = rng.integers(-int(0.05 * spec.dpi), int(0.05 * spec.dpi) + 1, 2)
        ink = np.roll(ink, tuple(int(v) for v in shift), axis=(0, 1))
        dy, dx = (int(v) for v in shift)
        pictures = [(max(0, x0 + dx), max(0, y0 + dy), min(w, x1 + dx), min(h, y1 + dy)) for x0, y0, x1, y1 in pictures]
    return _scan(ink.astype(np.float32) * (strength / 255), spec, rng), pictures


def _text_columns(ink, box, rng, scale):
    x0, y0, x1, y1 = box
    columns = int(rng.integers(2, 4))
    gutter = int(40 * scale)
    col_w = (x1 - x0 - gutter * (columns - 1)) // columns
    line_h = int(rng.uniform(34, 42) * scale)
    font_scale = 0.9 * scale
    thickness = max(1, round(2 * scale))
    letters = np.array(list("abcdefghilmnoprstuvw"))
    for c in range(columns):
        cx = x0 + c * (col_w + gutter)
        y = y0 + line_h
        while y < y1:
            x = cx
            while True:
                word = "".join(rng.choice(letters, int(rng.integers(2, 9))))
                (tw, _), _ = cv2.getTextSize(word, cv2.FONT_HERSHEY_SIMPLEX, font_scale, thickness)
                if x + tw > cx + col_w:
                    break
                cv2.putText(ink, word, (x, y), cv2.FONT_HERSHEY_SIMPLEX, font_scale, 255, thickness, cv2.LINE_AA)
                x += tw + int(14 * scale)
            y += line_h
            if rng.random() < 0.08:
                y += line_h  # paragraph break


def _newspaper(ink, box, rng, scale, cuts: int = 3):
    """A broadsheet's body: columns of type two by two, and `cuts` halftone cuts a column or two wide, each with a
    line of capitals under it; the cuts' boxes."""
    x0, y0, x1, y1 = box
    bands = max(1, (x1 - x0) // int(1200 * scale))
    band_w = (x1 - x0) // bands
    cut_bands = set(rng.choice(bands, min(cuts, bands), replace=False).tolist())
    pictures = []
    for b in range(bands):
        bx0, bx1 = x0 + b * band_w + int(20 * scale), x0 + (b + 1) * band_w - int(20 * scale)
        top = y0
        if b in cut_bands:
            cut_h = int((bx1 - bx0) * rng.uniform(0.6, 1.0))
            cy0 = y0 + int((y1 - y0 - cut_h) * rng.uniform(0.1, 0.6))
            pictures.append(_halftone(ink, (bx0, cy0, bx1, cy0 + cut_h), rng, scale))
            legend_y = cy0 + cut_h + int(45 * scale)
            words = " ".join("".join(rng.choice(list("ABCDEFGHILMNOPRSTUW"), int(rng.integers(3, 9))))
                             for _ in range(4))
            cv2.putText(ink, words, (bx0, legend_y), cv2.FONT_HERSHEY_SIMPLEX, 1.1 * scale, 255, max(1, round(2 * scale)),
                        cv2.LINE_AA)
            _text_columns(ink, (bx0, top, bx1, cy0 - int(40 * scale)), rng, scale)
            top = legend_y + int(30 * scale)
        _text_columns(ink, (bx0, top, bx1, y1), rng, scale)
    return pictures


def _halftone(ink, box, rng, scale):
    """A photograph printed through a screen: dots whose size follows a smooth random scene; its box."""
    x0, y0, x1, y1 = box
    h, w = y1 - y0, x1 - x0
    scene = cv2.resize(rng.random((6, 6)).astype(np.float32), (w, h), interpolation=cv2.INTER_CUBIC)
    pitch = max(3, round(8 * scale))  # a coarse newspaper screen
    yy, xx = np.mgrid[0:h, 0:w]
    screen = (np.cos(2 * np.pi * xx / pitch) * np.cos(2 * np.pi * yy / pitch) + 1) / 2
    ink[y0:y1, x0:x1] = np.where(screen < np.clip(scene, 0.05, 0.95), 255, 0).astype(np.uint8)
    return x0, y0, x1, y1


def _heading(ink, box, rng, scale):
    """A masthead or title in large bold capitals; returns the body left below it."""
    x0, y0, x1, y1 = box
    title = "".join(rng.choice(list("ABCDEFGILMNOPRSTU "), int(rng.integers(8, 16)))).strip() or "LA MODE"
    font_scale, thickness = rng.uniform(2.2, 3.4) * scale, max(2, round(rng.uniform(5, 9) * scale))
    (tw, th), _ = cv2.getTextSize(title, cv2.FONT_HERSHEY_TRIPLEX, font_scale, thickness)
    if tw > x1 - x0:
        font_scale *= (x1 - x0) / tw
        (tw, th), _ = cv2.getTextSize(title, cv2.FONT_HERSHEY_TRIPLEX, font_scale, thickness)
    cv2.putText(ink, title, (x0 + (x1 - x0 - tw) // 2, y0 + th), cv2.FONT_HERSHEY_TRIPLEX, font_scale, 255,
                thickness, cv2.LINE_AA)
    rule_y = y0 + th + int(30 * scale)
    cv2.line(ink, (x0, rule_y), (x1, rule_y), 255, max(1, round(3 * scale)))
    return x0, rule_y + int(30 * scale), x1, y1


def _engraving(ink, box, rng, scale):
    """Line work: a framed plate with figures shaded by hatching and cross-hatching."""
    x0, y0, x1, y1 = box
    plate = np.zeros((y1 - y0, x1 - x0), np.float32)
    ph, pw = plate.shape
    tone = np.zeros_like(plate)
    for _ in range(int(rng.integers(3, 7))):
        center = (int(rng.integers(0, pw)), int(rng.integers(0, ph)))
        axes = (int(rng.integers(pw // 10, pw // 3)), int(rng.integers(ph // 8, ph // 2)))
        cv2.ellipse(tone, center, axes, float(rng.uniform(0, 180)), 0, 360, float(rng.uniform(0.3, 1)), -1)
    tone = cv2.GaussianBlur(tone, (0, 0), 25 * scale)
    yy, xx = np.mgrid[0:ph, 0:pw].astype(np.float32)
    spacing = rng.uniform(5, 11) * scale
    width = rng.uniform(0.15, 0.3)  # share of each hatching period that is line
    for level, angle in ((0.15, rng.uniform(0, 1)), (0.45, rng.uniform(1.5, 2.5)), (0.75, rng.uniform(1, 1.4))):
        phase = (xx * np.cos(angle) + yy * np.sin(angle)) / spacing
        lines = (np.abs(phase - np.round(phase)) < width).astype(np.float32)
        plate = np.maximum(plate, lines * (tone > level))
    edges = cv2.Canny((tone * 255).astype(np.uint8), 20, 60)
    plate = np.maximum(plate, cv2.dilate(edges, np.ones((3, 3), np.uint8)).astype(np.float32) / 255)
    if rng.random() < 0.6:  # a framed plate; otherwise a vignette fading into the paper
        cv2.rectangle(plate, (4, 4), (pw - 5, ph - 5), 1.0, max(2, int(5 * scale)))
    ink[y0:y1, x0:x1] = np.maximum(ink[y0:y1, x0:x1], (plate * 255).astype(np.uint8))
    ys, xs = np.nonzero(plate > 0.5)
    return (x0 + int(xs.min()), y0 + int(ys.min()), x0 + int(xs.max()) + 1, y0 + int(ys.max()) + 1) if len(xs) else box


def _ornament(ink, box, rng, scale):
    """A small decoration: a rosette of rings, or a hatched tailpiece between paragraphs."""
    x0, y0, x1, y1 = box
    cx = (x0 + x1) // 2
    if rng.random() < 0.5:
        size = int(rng.uniform(60, 110) * scale)
        patch = np.zeros((2 * size, 2 * size), np.uint8)
        for r in range(size // 4, size, max(3, int(9 * scale))):
            cv2.circle(patch, (size, size), r, 255, max(1, int(2 * scale)))
    else:
        pw, ph = int(rng.uniform(400, 600) * scale), int(rng.uniform(60, 120) * scale)
        yy, xx = np.mgrid[0:ph, 0:pw]
        hatch = ((xx + yy) % max(3, int(8 * scale)) < max(1, int(2 * scale)))
        shape = np.zeros((ph, pw), np.uint8)
        cv2.ellipse(shape, (pw // 2, ph // 2), (pw // 2 - 2, ph // 2 - 2), 0, 0, 360, 1, -1)
        patch = (hatch & (shape > 0)).astype(np.uint8) * 255
    ph, pw = patch.shape
    top = y0 + int(rng.uniform(0, 0.8) * max(1, (y1 - y0 - ph)))
    left = cx - pw // 2
    region = ink[top:top + ph, left:left + pw]
    region[:] = np.where(patch > 0, patch, region // 4)  # text makes way for the ornament


def _scan(ink, spec, rng):
    h, w = ink.shape
    tone = rng.uniform(205, 240)  # yellowed paper: warm, never tinted green or pink
    paper = np.array([tone, tone * rng.uniform(0.92, 0.97), tone * rng.uniform(0.72, 0.86)], np.float32)
    light = np.ones((h, w), np.float32)
    if spec.uneven:
        yy, xx = np.mgrid[0:h:8, 0:w:8].astype(np.float32)
        cx, cy = rng.uniform(0.2, 0.8) * w, rng.uniform(0.2, 0.8) * h
        falloff = 1 - rng.uniform(0.1, 0.25) * (((xx - cx) / w) ** 2 + ((yy - cy) / h) ** 2) * 2
        light = cv2.resize(falloff, (w, h), interpolation=cv2.INTER_LINEAR)
    if spec.bleed:
        ghost = np.zeros((h, w), np.uint8)
        margin = int(0.07 * min(spec.inches) * spec.dpi)
        _text_columns(ghost, (margin, margin, w - margin, h - margin), rng, spec.dpi / 300)
        ghost = cv2.GaussianBlur(ghost[:, ::-1], (0, 0), 2).astype(np.float32) / 255
        ink = np.maximum(ink, ghost * rng.uniform(0.15, 0.3))
    ink_color = np.array([35, 30, 28], np.float32)
    rgb = paper + (ink_color - paper) * ink[..., None]
    rgb *= light[..., None]
    rgb += rng.normal(0, 3, (h, w, 1)).astype(np.float32)  # scanner grain
    if spec.border:
        _scanner_bed(rgb, rng, spec.dpi)
    return np.clip(rgb, 0, 255).astype(np.uint8)


def _scanner_bed(rgb, rng, dpi):
    """Dark bands where the scan overshoots the paper."""
    h, w, _ = rgb.shape
    for side in rng.choice(["left", "right", "top", "bottom"], int(rng.integers(1, 3)), replace=False):
        band = int(rng.uniform(0.25, 0.6) * dpi)
        value = rng.uniform(10, 35)
        if side == "left":
            rgb[:, :band] = value
        elif side == "right":
            rgb[:, w - band:] = value
        elif side == "top":
            rgb[:band] = value
        else:
            rgb[h - band:] = value


def jpeg_bytes(rgb: np.ndarray, quality: int = 80) -> bytes:
    ok, data = cv2.imencode(".jpg", cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR), [cv2.IMWRITE_JPEG_QUALITY, quality])
    if not ok:
        raise RuntimeError("JPEG encoding failed")
    return data.tobytes()


def write_pdf(path: pathlib.Path | str, specs: Iterable[PageSpec], quality: int = 80) -> pathlib.Path:
    """Write a PDF whose every page is one full-page JPEG scan, page by page."""
    path = pathlib.Path(path)
    doc = pymupdf.open()
    for spec in specs:
        rgb = page_image(spec)
        h, w, _ = rgb.shape
        page = doc.new_page(width=w * 72 / spec.dpi, height=h * 72 / spec.dpi)
        page.insert_image(page.rect, stream=jpeg_bytes(rgb, quality))
        del rgb
    path.parent.mkdir(parents=True, exist_ok=True)
    doc.save(path)
    doc.close()
    return path


def periodical_specs(pages: int, seed: int = 0, dpi: int = 300, inches: tuple[float, float] = LETTER_IN) -> Iterator[PageSpec]:
    """An issue's worth of pages in the proportions of the founding archive (about 70 % text)."""
    rng = np.random.default_rng(seed)
    kinds = ["text", "engraving", "mixed", "faded_engraving", "ornament", "blank"]
    weights = [0.6, 0.14, 0.08, 0.06, 0.08, 0.04]
    for i in range(pages):
        yield PageSpec(
            kind=str(rng.choice(kinds, p=weights)),
            seed=seed * 100_003 + i,
            dpi=dpi,
            border=bool(rng.random() < 0.25),
            bleed=bool(rng.random() < 0.25),
            inches=inches,
        )


def write_archive(folder: pathlib.Path | str, documents: int, pages: int, seed: int = 0, dpi: int = 300,
                  inches: tuple[float, float] = LETTER_IN) -> list[pathlib.Path]:
    """A folder of periodical PDFs, the shape of a curator's archive."""
    folder = pathlib.Path(folder)
    return [
        write_pdf(folder / f"issue-{seed:03d}-{d:03d}.pdf",
                  periodical_specs(pages, seed=seed * 1000 + d, dpi=dpi, inches=inches))
        for d in range(documents)
    ]
