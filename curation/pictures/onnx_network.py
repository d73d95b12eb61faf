"""An ONNX network run on the CPU as the page stages run theirs: ONNX Runtime, on one thread.

The picture finder, the text detector and the legends' recogniser are ONNX files (the finder's exported here, the
other two inside rapidocr's wheel). On one core ONNX Runtime runs each in 0.6 to 0.8 of the time OpenCV's dnn took,
for the same outputs within 1e-5 (`python bench/bench_onnx.py`). One thread: an ingest worker is one process
a core, and a network that started threads of its own would run them against the other workers.
"""

from __future__ import annotations

import ctypes
from pathlib import Path

import numpy as np


class OnnxNetwork:
    """The ONNX file at `path`, loaded once; called with its input, it gives its first output.

    Each run's memory goes back when it ends, instead of staying in the runtime's arena (which keeps what the
    largest input seen needed, in blocks of powers of two: 256 MB for a newspaper page read at the finder's large
    side, 64 for a legend's long line); the large blocks a run takes are mapped apart from the heap
    (`large_blocks_mapped`), so they neither stay nor leave the heap in pieces, and a worker's memory goes back to
    what it was between pages. Weights are not packed again beside the model's own (a copy: 25 MB for the
    recogniser), in the same time.
    """

    def __init__(self, path):
        import onnxruntime

        large_blocks_mapped()
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = options.inter_op_num_threads = 1
        # Pages and lines change size from one input to the next, so a memory plan kept for the last size is no
        # help: without it the finder's process holds about 8 MB less, in the same time.
        options.enable_mem_pattern = False
        options.enable_cpu_mem_arena = False
        options.add_session_config_entry("session.disable_prepacking", "1")
        self.session = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        self.input = self.session.get_inputs()[0].name

    def __call__(self, blob: np.ndarray) -> np.ndarray:
        return self.session.run(None, {self.input: blob})[0]

    @property
    def metadata(self) -> dict[str, str]:
        """The file's own metadata (key → value)."""
        return dict(self.session.get_modelmeta().custom_metadata_map)


def gpu_visible() -> bool:
    """Whether torch sees a GPU, asked only where a GPU's device file exists: torch is not imported otherwise."""
    if not any(Path(p).exists() for p in ("/dev/nvidia0", "/dev/nvidiactl", "/dev/kfd")):
        return False
    import torch

    return torch.cuda.is_available()


LARGE_BLOCK = 1 << 20  # bytes: a block this large is mapped apart from the heap, and unmapped when freed


def large_blocks_mapped() -> None:
    """From now on every block of LARGE_BLOCK bytes or more this process allocates (a page's image, a network's
    activations) is mapped apart and given back to the system when freed (glibc's M_MMAP_THRESHOLD, fixed: by
    default it rises to the largest block freed, after which such blocks come from the heap and leave it in
    pieces, 100 MB and more held free in a worker reading newspaper pages). Elsewhere than glibc, nothing."""
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(M_MMAP_THRESHOLD, LARGE_BLOCK)
    except (OSError, AttributeError):
        pass


M_MMAP_THRESHOLD = -3  # glibc's malloc.h
