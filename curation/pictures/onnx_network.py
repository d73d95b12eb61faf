"""An ONNX network run on the CPU as the page stages run theirs: ONNX Runtime, on one thread.

The picture finder, the text detector and the legends' recogniser are ONNX files (the finder's exported here, the
other two inside rapidocr's wheel). On one core ONNX Runtime runs each in 0.6 to 0.8 of the time OpenCV's dnn took,
for the same outputs within 1e-5 (`python bench/bench_onnx.py`). One thread: an ingest worker is one process
a core, and a network that started threads of its own would run them against the other workers.
"""

from __future__ import annotations

import numpy as np


class OnnxNetwork:
    """The ONNX file at `path`, loaded once; called with its input, it gives its first output.

    `varying_inputs`: its inputs come in many sizes (the legends' lines). The runtime's memory arena keeps what
    the largest input seen needed, so there each run's memory goes back instead: in a worker reading legends over
    400 pages the blocks mapped apart from its heap stay at 48 MB where the arena took them to 96, and its peak is
    352-363 MB instead of 377 (bench/bench_worker_memory.py). A network whose input is always about one size (the
    finder's page at 512 pixels) keeps its arena: without it, the same few large buffers each page leave the
    worker's heap in pieces, and its memory grows page after page.
    """

    def __init__(self, path, *, varying_inputs: bool = False):
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = options.inter_op_num_threads = 1
        # Pages and lines change size from one input to the next, so a memory plan kept for the last size is no
        # help: without it the finder's process holds about 8 MB less, in the same time.
        options.enable_mem_pattern = False
        options.enable_cpu_mem_arena = not varying_inputs
        self.session = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        self.input = self.session.get_inputs()[0].name

    def __call__(self, blob: np.ndarray) -> np.ndarray:
        return self.session.run(None, {self.input: blob})[0]

    @property
    def metadata(self) -> dict[str, str]:
        """The file's own metadata (key → value)."""
        return dict(self.session.get_modelmeta().custom_metadata_map)
