"""An ONNX network run on the CPU as the page stages run theirs: ONNX Runtime, on one thread.

The picture finder, the text detector and the legends' recogniser are ONNX files (the finder's exported here, the
other two inside rapidocr's wheel). On one core ONNX Runtime runs each in 0.6 to 0.8 of the time OpenCV's dnn took,
for the same outputs within 1e-5 (`python bench/bench_onnx.py`). One thread: an ingest worker is one process
a core, and a network that started threads of its own would run them against the other workers.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np


class OnnxNetwork:
    """The ONNX file at `path`, loaded once; called with its input, it gives its first output.

    `varying_inputs`: its inputs come in many sizes (the legends' lines). The runtime's memory arena keeps what
    the largest input seen needed, so there each run's memory goes back instead: in a worker reading legends over
    400 pages the blocks mapped apart from its heap stay at 48 MB where the arena took them to 96, and its peak is
    352-363 MB instead of 377 (bench/bench_worker_memory.py). A network whose inputs are about one size (the
    finder's page, the picture job's crops) keeps its arena: without one each run asks the system for its
    activations again, and the finder took 1.7 times as long on a newspaper page (205 ms from 120); an arena grown
    by what each run asks and no more (the runtime's kSameAsRequested) held more, not less, over pages of several
    sizes (262 MB against 147 after five newspaper pages). That arena is the process's one, one large block from its
    first run (`_register_arena`). No network keeps a packed copy of its weights beside the model's own (25 MB for the
    recogniser), for the same time.
    """

    def __init__(self, path, *, varying_inputs: bool = False):
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = options.inter_op_num_threads = 1
        # Pages and lines change size from one input to the next, so a memory plan kept for the last size is no
        # help: without it the finder's process holds about 8 MB less, in the same time.
        options.enable_mem_pattern = False
        options.enable_cpu_mem_arena = not varying_inputs
        if not varying_inputs:
            _register_arena()
            options.add_session_config_entry("session.use_env_allocators", "1")
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


ARENA_BYTES = 256 << 20
_arena_registered = False


def _register_arena() -> None:
    """The process's one arena for the networks that keep one: one block of ARENA_BYTES from its first run.

    A session's own arena starts at 1 MB and adds blocks of twice the size each time it grows (1 + 2 + ... + 128 MB);
    newspaper pages read at the finder's large side spread their activations (about 110 MB) over all of those blocks,
    and a worker held the whole 256 MB. One block is reserved whole but resident only where written: over the 20 real
    newspaper pages the finder's runs held 112 MB instead of 174, for the same cells and the same time
    (bench/bench_worker_memory.py --newspapers); since the finder's first blocks run in bands of the page
    (finder.ExportedNetwork) they hold about 60 MB. A first block of 160 or 192 MB held 180-190 MB (not looked into
    further); this size is the address space the session's own arena reached.
    """
    global _arena_registered
    if _arena_registered:
        return
    import onnxruntime

    next_power_of_two = 0  # arena_extend_strategy; kSameAsRequested (1) held 260-350 MB on the same pages
    memory = onnxruntime.OrtMemoryInfo("Cpu", onnxruntime.OrtAllocatorType.ORT_ARENA_ALLOCATOR, 0,
                                       onnxruntime.OrtMemType.DEFAULT)
    onnxruntime.create_and_register_allocator(memory, onnxruntime.OrtArenaCfg(0, next_power_of_two, ARENA_BYTES, -1))
    _arena_registered = True
