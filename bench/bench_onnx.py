"""The page stages' ONNX networks in ONNX Runtime (as ingest runs them) against OpenCV's dnn (as it ran them), on one
core: milliseconds, the ratio, the largest difference between their outputs, and each runtime's peak memory.

The networks and their inputs, as ingest gives them:
- the picture finder (encoder and the shipped heads, its ONNX export): generated periodical pages at 144 dpi brought
  to its input (curation.pictures.finder.network_input);
- the PP-OCRv6 text detector (the learned verdict): the same pages at its input (at most 1600 px a side);
- the PP-OCRv6 recogniser (legends): inputs of a line's shape, 48 pixels tall and 320 or 960 wide (the widest piece
  it reads), of random values (its time depends on the shape alone).

The memory is measured apart, for each network and runtime in a fresh process that reads the inputs from a file: its
resident memory at its peak while it loads the network and runs the inputs, less its memory before (psutil, sampled
every 5 ms; the runtime's import is counted, OpenCV's is not: a worker has it anyway).

    python bench/bench_onnx.py [--pages 12] [--repeat 3]
"""

from __future__ import annotations

import argparse
import pathlib
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import cv2
import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

KINDS = ("text", "engraving", "mixed", "faded_engraving", "ornament")
LINE_WIDTHS = (320, 960)


def pages(count: int) -> list[np.ndarray]:
    from curation.sources.synthetic import PageSpec, page_image

    return [cv2.cvtColor(page_image(PageSpec(kind=KINDS[n % len(KINDS)], seed=n, dpi=144)), cv2.COLOR_RGB2GRAY)
            for n in range(count)]


def networks(count: int) -> dict[str, tuple[str, list[np.ndarray]]]:
    """Each network's ONNX file and the inputs it is timed on."""
    from curation.captions import recognizer
    from curation.pictures import finder, text

    finder.check_installed()
    page_list = pages(count)
    rng = np.random.default_rng(0)
    lines = {width: [rng.uniform(-1, 1, (1, 3, recognizer.HEIGHT, width)).astype(np.float32) for _ in range(count)]
             for width in LINE_WIDTHS}
    record = finder.record()
    heads = len(record["heads"]) * len(record["seeds"])
    return {
        f"picture finder (encoder, {heads} heads)": (str(finder.exported(finder.shipped_weights())),
                                              [finder.network_input(p)[None, None] for p in page_list]),
        "text detector (1600 px)": (text.model_path(), [text.network_input(p) for p in page_list[:max(2, count // 4)]]),
        **{f"recogniser ({width} px line)": (recognizer.model_path(), lines[width]) for width in LINE_WIDTHS},
    }


def runner(runtime: str, path: str):
    """A function running the network at `path` in `runtime` (dnn, onnxruntime) on one input."""
    if runtime == "dnn":
        net = cv2.dnn.readNetFromONNX(path)

        def run(blob):
            net.setInput(blob)
            return net.forward()
        return run
    from curation.pictures.onnx_network import OnnxNetwork

    return OnnxNetwork(path)


def timing(runtime: str, path: str, inputs: list[np.ndarray], repeat: int) -> tuple[float, list[np.ndarray]]:
    """The median milliseconds of a run (each input `repeat` times), and the outputs."""
    run = runner(runtime, path)
    outputs = [run(blob) for blob in inputs]  # the first runs plan the memory: not timed
    times = []
    for _ in range(repeat):
        for blob in inputs:
            started = time.perf_counter()
            run(blob)
            times.append(1000 * (time.perf_counter() - started))
    return statistics.median(times), outputs


def peak_memory(runtime: str, path: str, inputs: list[np.ndarray]) -> float:
    """MB: the peak resident memory of a fresh process running the network at `path` in `runtime` on `inputs`,
    above its memory once the inputs are loaded (which it reads from a file: nothing else was allocated before)."""
    with tempfile.TemporaryDirectory() as folder:
        saved = pathlib.Path(folder) / "inputs.npz"
        np.savez(saved, *inputs)
        done = subprocess.run([sys.executable, __file__, "--measure", runtime, path, str(saved)],
                              capture_output=True, text=True, check=True)
    return float(done.stdout.split()[-1])


def measure(runtime: str, path: str, saved: str) -> None:
    import psutil

    # The package's own imports are not the runtime's memory (onnxruntime's import is: it loads with the network).
    import curation.pictures.onnx_network  # noqa: F401

    cv2.setNumThreads(1)
    with np.load(saved) as file:
        inputs = [file[name] for name in file.files]
    process = psutil.Process()
    before, peak, running = process.memory_info().rss, [0], [True]

    def sample():
        while running[0]:
            peak[0] = max(peak[0], process.memory_info().rss)
            time.sleep(0.005)

    watcher = threading.Thread(target=sample)
    watcher.start()
    run = runner(runtime, path)
    for blob in inputs:
        run(blob)
    running[0] = False
    watcher.join()
    print((peak[0] - before) / 2**20)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=int, default=12)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--measure", nargs=3, metavar=("RUNTIME", "ONNX", "INPUTS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        return measure(*args.measure)
    cv2.setNumThreads(1)
    print(f"one thread; {args.pages} generated pages at 144 dpi, each input run {args.repeat} times")
    print(f"{'network':36s} {'dnn ms':>8s} {'runtime ms':>10s} {'ratio':>6s} {'max diff':>9s} "
          f"{'dnn MB':>7s} {'runtime MB':>10s}")
    for name, (path, inputs) in networks(args.pages).items():
        dnn_ms, expected = timing("dnn", path, inputs, args.repeat)
        runtime_ms, outputs = timing("onnxruntime", path, inputs, args.repeat)
        difference = max(float(np.abs(a - b).max()) for a, b in zip(expected, outputs))
        memory = [peak_memory(runtime, path, inputs) for runtime in ("dnn", "onnxruntime")]
        print(f"{name:36s} {dnn_ms:8.1f} {runtime_ms:10.1f} {runtime_ms / dnn_ms:6.2f} {difference:9.1e} "
              f"{memory[0]:7.0f} {memory[1]:10.0f}")


if __name__ == "__main__":
    main()
