"""An ONNX network run on the CPU as the page stages run theirs: ONNX Runtime, on one thread.

The picture finder, the text detector and the legends' recogniser are ONNX files (the finder's exported here, the
other two inside rapidocr's wheel). On one core ONNX Runtime runs each in 0.6 to 0.8 of the time OpenCV's dnn took,
for the same outputs within 1e-5 (`python bench/bench_onnx.py`). One thread: an ingest worker is one process
a core, and a network that started threads of its own would run them against the other workers.
"""

from __future__ import annotations

import numpy as np


class OnnxNetwork:
    """The ONNX file at `path`, loaded once; called with its input, it gives its first output."""

    def __init__(self, path):
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = options.inter_op_num_threads = 1
        # Pages and lines change size from one input to the next, so a memory plan kept for the last size is no
        # help: without it the finder's process holds about 8 MB less, in the same time.
        options.enable_mem_pattern = False
        self.session = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        self.input = self.session.get_inputs()[0].name

    def __call__(self, blob: np.ndarray) -> np.ndarray:
        return self.session.run(None, {self.input: blob})[0]

    @property
    def metadata(self) -> dict[str, str]:
        """The file's own metadata (key → value)."""
        return dict(self.session.get_modelmeta().custom_metadata_map)
