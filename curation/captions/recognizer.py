"""Lines of type read by PaddleOCR's PP-OCRv6 text recognizer: one model for Chinese, Japanese (kanji and
kana), English and the Latin-script languages, which reads what Tesseract has no language data for.

Its ONNX file (`PP-OCRv6_rec_small.onnx`, Apache-2.0) ships inside the `rapidocr` wheel beside the text
detector (curation/pictures/text.py), so nothing is downloaded; it runs in OpenCV's `dnn`, with no ONNX
runtime. Its character list is the model's own metadata ("character"), read from the file; its output is
decoded greedily as CTC (the most likely symbol at each step, repeats and blanks dropped).
"""

from __future__ import annotations

import functools
import importlib.resources
import threading
import unicodedata

import cv2
import numpy as np

MODEL_FILE = "PP-OCRv6_rec_small.onnx"
HEIGHT = 48  # the network's input height; lines are scaled to it
MIN_WIDTH = 320  # its narrowest input (PaddleOCR pads shorter lines to this)
STEP = 8  # widths are padded to a multiple of the network's horizontal stride
MAX_WIDTH = 3200  # a longer line is squeezed: no legend's line is 66 times as wide as it is tall
METADATA_FIELD = 14  # ModelProto.metadata_props in onnx.proto
CHARACTER_KEY = "character"
SPACE_PITCHES = 1.5  # between one character's pitch (no space) and two (a full-width space)

_local = threading.local()  # an OpenCV dnn Net is not thread-safe


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
    """The symbol of each of the network's outputs: CTC's blank first, the model's list, a space last (as
    PaddleOCR decodes it)."""
    path = model_path()
    if path is None:
        raise RuntimeError(f"the text recognizer ({MODEL_FILE}) comes with the rapidocr package, which is not "
                           "installed here: pip install -r requirements.txt")
    with open(path, "rb") as file:
        metadata = onnx_metadata(file.read())
    return ("", *metadata[CHARACTER_KEY].splitlines(), " ")


def onnx_metadata(model: bytes) -> dict[str, str]:
    """An ONNX file's metadata (key → value), read from its protobuf encoding without the onnx package:
    the top-level fields are walked and the large ones (the weights) skipped."""
    metadata = {}
    for number, value in _fields(memoryview(model)):
        if number == METADATA_FIELD:
            entry = dict(_fields(value))
            metadata[bytes(entry[1]).decode()] = bytes(entry.get(2, b"")).decode()
    return metadata


def _fields(data: memoryview):
    """(field number, value) of each field of a protobuf message; a length-delimited value as a view."""
    at = 0
    while at < len(data):
        key, at = _varint(data, at)
        number, kind = key >> 3, key & 7
        if kind == 0:
            value, at = _varint(data, at)
        elif kind == 2:
            size, at = _varint(data, at)
            value, at = data[at:at + size], at + size
        elif kind in (1, 5):
            size = 8 if kind == 1 else 4
            value, at = data[at:at + size], at + size
        else:
            raise ValueError(f"not an ONNX file: protobuf wire type {kind}")
        yield number, value


def _varint(data: memoryview, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, at


def _network():
    if getattr(_local, "net", None) is None:
        _local.net = cv2.dnn.readNetFromONNX(model_path())  # 0.2 s
    return _local.net


def read_line(gray: np.ndarray) -> tuple[str, float]:
    """The text of one line of type (gray, dark on light, cropped close), with its confidence: the mean of
    the network's probability for each character it read (0..1; 0 when it read none)."""
    h, w = gray.shape
    width = min(MAX_WIDTH, max(1, round(HEIGHT * w / max(h, 1))))
    line = cv2.resize(gray, (width, HEIGHT), interpolation=cv2.INTER_AREA if h > HEIGHT else cv2.INTER_CUBIC)
    padded = max(MIN_WIDTH, -(-width // STEP) * STEP)
    blob = np.zeros((1, 3, HEIGHT, padded), np.float32)  # PaddleOCR pads with 0, mid-gray once normalised
    blob[0, :, :, :width] = line.astype(np.float32) / 127.5 - 1
    net = _network()
    net.setInput(blob)
    probabilities = net.forward()[0]  # steps x symbols, softmax
    return decode(probabilities)


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
