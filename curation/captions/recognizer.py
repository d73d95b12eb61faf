"""Lines of type read by PaddleOCR's PP-OCRv6 text recognizer: one model for Chinese, Japanese (kanji and
kana), English and the Latin-script languages, which reads what Tesseract has no language data for.

Its ONNX file (`PP-OCRv6_rec_small.onnx`, Apache-2.0) ships inside the `rapidocr` wheel beside the text
detector (curation/pictures/text.py), so nothing is downloaded; it runs in ONNX Runtime on one thread
(curation.pictures.onnx_network). Its character list is the model's own metadata ("character"); its output is
decoded greedily as CTC (the most likely symbol at each step, repeats and blanks dropped).
"""

from __future__ import annotations

import functools
import importlib.resources
import unicodedata

import cv2
import numpy as np

from ..pictures.onnx_network import OnnxNetwork

MODEL_FILE = "PP-OCRv6_rec_small.onnx"
HEIGHT = 48  # the network's input height; lines are scaled to it
MIN_WIDTH = 320  # its narrowest input (PaddleOCR pads shorter lines to this)
STEP = 8  # widths are padded to a multiple of the network's horizontal stride
MAX_WIDTH = 3200  # a longer line is squeezed: no legend's line is 66 times as wide as it is tall
# The widest piece of a line read at once: the network's memory grows with its input's width (in OpenCV's dnn a
# process reading a 3,200-pixel line peaked about 140 MB above one reading 960), so a longer line is read in pieces
# cut where the type stands apart.
PIECE_WIDTH = 960
WORD_GAP = 0.15  # of HEIGHT: a cut in paper this wide lies between two words (letters stand closer)
CHARACTER_KEY = "character"
SPACE_PITCHES = 1.5  # between one character's pitch (no space) and two (a full-width space)


def model_path() -> str | None:
    """The ONNX file inside the installed rapidocr package; None without it."""
    try:
        path = importlib.resources.files("rapidocr") / "models" / MODEL_FILE
    except ModuleNotFoundError:
        return None
    return str(path) if path.is_file() else None


def available() -> bool:
    return model_path() is not None


@functools.cache
def characters() -> tuple[str, ...]:
    """The symbol of each of the network's outputs: CTC's blank first, the model's list (its metadata), a space
    last (as PaddleOCR decodes it)."""
    return ("", *_network().metadata[CHARACTER_KEY].splitlines(), " ")


@functools.cache
def _network() -> OnnxNetwork:
    """The network, loaded once a process (0.2 s): ONNX Runtime runs it from any thread."""
    path = model_path()
    if path is None:
        raise RuntimeError(f"the text recognizer ({MODEL_FILE}) comes with the rapidocr package, which is not "
                           "installed here: pip install -r requirements.txt")
    return OnnxNetwork(path, varying_inputs=True)


def read_line(gray: np.ndarray) -> tuple[str, float]:
    """The text of one line of type (gray, dark on light, cropped close), with its confidence: the mean of
    the network's probability for each character it read (0..1; 0 when it read none). A line wider than
    PIECE_WIDTH (once HEIGHT tall) is read in pieces (`_pieces`)."""
    h, w = gray.shape
    width = min(MAX_WIDTH, max(1, round(HEIGHT * w / max(h, 1))))
    line = cv2.resize(gray, (width, HEIGHT), interpolation=cv2.INTER_AREA if h > HEIGHT else cv2.INTER_CUBIC)
    text, weighted, characters_read = "", 0.0, 0
    for start, end, after_space in _pieces(line):
        piece, confidence = decode(_probabilities(line[:, start:end]))
        if not piece:
            continue
        if text and after_space and not (is_wide(text[-1]) and is_wide(piece[0])):
            text += " "
        text += piece
        weighted += confidence * len(piece)
        characters_read += len(piece)
    return text, weighted / characters_read if characters_read else 0.0


def _probabilities(line: np.ndarray) -> np.ndarray:
    """The network's symbol probabilities at each step of a line HEIGHT tall."""
    width = line.shape[1]
    padded = max(MIN_WIDTH, -(-width // STEP) * STEP)
    blob = np.zeros((1, 3, HEIGHT, padded), np.float32)  # PaddleOCR pads with 0, mid-gray once normalised
    blob[0, :, :, :width] = line.astype(np.float32) / 127.5 - 1
    return _network()(blob)[0]  # steps x symbols, softmax


def _pieces(line: np.ndarray) -> list[tuple[int, int, bool]]:
    """The line (HEIGHT tall) as pieces at most PIECE_WIDTH wide: (start, end, whether a word's space lies before
    it). Each cut is made in the widest run of paper in the second half of the piece, so no character is cut; where
    none is, at the piece's end."""
    width = line.shape[1]
    paper = line.min(axis=0) > (int(line.min()) + int(line.max())) / 2  # columns no stroke crosses
    pieces, start, space = [], 0, False
    while width - start > PIECE_WIDTH:
        window = paper[start + PIECE_WIDTH // 2:start + PIECE_WIDTH]
        cut, run = _widest_run(window)
        cut = start + PIECE_WIDTH // 2 + cut if run else start + PIECE_WIDTH
        pieces.append((start, cut, space))
        start, space = cut, run >= WORD_GAP * HEIGHT
    pieces.append((start, width, space))
    return pieces


def _widest_run(flags: np.ndarray) -> tuple[int, int]:
    """The middle and the length of the longest run of True in `flags` ((0, 0) where none is)."""
    edges = np.flatnonzero(np.diff(np.r_[0, flags.astype(np.int8), 0]))
    if not len(edges):
        return 0, 0
    starts, ends = edges[::2], edges[1::2]
    i = int(np.argmax(ends - starts))
    return int((starts[i] + ends[i]) // 2), int(ends[i] - starts[i])


def decode(probabilities: np.ndarray) -> tuple[str, float]:
    """CTC greedy decoding: the likeliest symbol at each step, a repeat of the step before and blanks dropped;
    the text and the mean probability of the symbols kept. The network writes no space between Chinese or
    Japanese characters; one is put where they stand apart (`_spaced`)."""
    best = probabilities.argmax(axis=1)
    keep = (best != 0) & np.r_[True, best[1:] != best[:-1]]
    symbols = characters()
    text = _spaced([symbols[i] for i in best[keep]], np.flatnonzero(keep))
    confidence = float(probabilities.max(axis=1)[keep].mean()) if keep.any() else 0.0
    return text.strip(), confidence


def _spaced(symbols: list[str], steps: np.ndarray) -> str:
    """The symbols read at `steps`, with a space between two wide (Chinese, Japanese) characters whose steps
    lie further apart than SPACE_PITCHES times the usual step between two wide characters: such type is set
    on a square, one character a square, and a space is an empty square, so a gap is one pitch without and
    two with one. (Digits and points are set on half a square: they do not set the pitch.)"""
    wide = [is_wide(symbol) for symbol in symbols]
    gaps = np.diff(steps)
    pitches = [gap for gap, a, b in zip(gaps, wide, wide[1:]) if a and b]
    if len(pitches) < 2:
        return "".join(symbols)
    pitch = float(np.median(pitches))
    out = [symbols[0]]
    for before, after, symbol, gap in zip(wide, wide[1:], symbols[1:], gaps):
        if gap > SPACE_PITCHES * pitch and before and after:
            out.append(" ")
        out.append(symbol)
    return "".join(out)


def is_wide(symbol: str) -> bool:
    """Whether a character is Chinese, Japanese or Korean (East Asian wide or full-width)."""
    return unicodedata.east_asian_width(symbol[:1] or " ") in "WF"
