"""Where the lines of text are on a page: the PP-OCRv6 text detector that rapidocr's wheel carries.

The detector (PaddleOCR's DB text detection, Apache-2.0; its ONNX file ships inside the `rapidocr`
wheel, so nothing is downloaded) marks printed type, display type and handwriting alike, in any
script, and leaves drawings alone. It runs in ONNX Runtime on one thread (curation.pictures.onnx_network).
"""

from __future__ import annotations

import functools
import importlib.resources

import cv2
import numpy as np

from .onnx_network import OnnxNetwork

MODEL_FILE = "PP-OCRv6_det_small.onnx"
MAX_SIDE = 1600  # pixels: a newspaper's body text stays a few pixels tall at 144 dpi scaled to this
STEP = 32  # the network's input sides are multiples of its total stride
MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)  # ImageNet's, as PaddleOCR normalises
TEXT_PROBABILITY = 0.3  # PaddleOCR's own binarisation threshold for the map


def model_path() -> str:
    """The ONNX file inside the installed rapidocr package."""
    try:
        path = importlib.resources.files("rapidocr") / "models" / MODEL_FILE
    except ModuleNotFoundError:
        path = None
    if path is None or not path.is_file():
        raise RuntimeError(f"the text detector ({MODEL_FILE}) comes with the rapidocr package, which is not "
                           "installed here: pip install -r requirements.txt")
    return str(path)


@functools.cache
def _network() -> OnnxNetwork:
    """The network, loaded once a process: loading takes 0.1 s, a page's detection 0.5-2 s on a CPU."""
    return OnnxNetwork(model_path())


def text_map(gray: np.ndarray, max_side: int = MAX_SIDE) -> np.ndarray:
    """The detector's text probability (0..255) at every pixel of `gray`."""
    h, w = gray.shape
    probability = _network()(network_input(gray, max_side))[0, 0]
    return cv2.resize((probability * 255).astype(np.uint8), (w, h), interpolation=cv2.INTER_LINEAR)


def network_input(gray: np.ndarray, max_side: int = MAX_SIDE) -> np.ndarray:
    """The page as the detector reads it: at most `max_side` pixels a side, each a multiple of STEP, normalised
    as PaddleOCR does (1, 3, H, W)."""
    h, w = gray.shape
    scale = min(1.0, max_side / max(h, w))
    size = (max(STEP, round(w * scale / STEP) * STEP), max(STEP, round(h * scale / STEP) * STEP))
    image = cv2.resize(gray, size, interpolation=cv2.INTER_AREA).astype(np.float32) / 255
    return np.stack([(image - mean) / std for mean, std in zip(MEAN, STD)])[None].astype(np.float32)


def text_mask(probability: np.ndarray) -> np.ndarray:
    """1 where the map says text (PaddleOCR's own threshold), else 0."""
    return (probability >= 255 * TEXT_PROBABILITY).astype(np.uint8)
