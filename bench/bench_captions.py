"""Captions benchmark: what the captioning model costs on this machine.

- caption job: `python -m curation caption --all`'s work on a generated archive (ingested first),
  with the tiny model: seconds per picture of the whole job (reading the picture from its page as
  the export does, captioning, saving), so what the job adds to the model's own time;
- captioner cost: the captioner's load time and seconds per picture, on generated engravings (a
  crop of a synthetic engraving page, 600 x 800 pixels), with the tiny Florence-2 of the tests
  (random weights: its time says what the job around the model costs, not the model) and, where a
  real model folder is present (--model, else $CAPTIONER_MODEL_DIR, else models/captioners/florence-2-base),
  with it. Loading runs in the model slot as the caption job does; imports are not counted.

    python bench/bench_captions.py [--model DIR] [--pictures 8] [--batch 4] [--pages 12] [--out bench/out/captions]
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from curation import Manifest, ingest  # noqa: E402
from curation.captions.edit import Pictures  # noqa: E402
from curation.captions.job import caption_pictures  # noqa: E402
from curation.sources.synthetic import PageSpec, page_image, write_pdf  # noqa: E402
from inference.captioner import default_model_dir, loaded_captioner  # noqa: E402


def engravings(count: int) -> list:
    """`count` generated engraving crops, 600 x 800 pixels, each from its own page."""
    from PIL import Image

    pictures = []
    for seed in range(count):
        page = page_image(PageSpec(kind="engraving", seed=seed, dpi=150, inches=(6.0, 8.0), uneven=False))
        pictures.append(Image.fromarray(page[200:1000, 150:750]))
    return pictures


def time_captioner(folder: pathlib.Path, pictures: list, batch: int) -> dict:
    """Load, caption `pictures` in batches, unload; the loader's times and seconds per picture."""
    started = time.perf_counter()
    with loaded_captioner(folder, device="cpu") as model:
        first = model.caption(pictures[:1])  # the first generate() sets up kernels and caches
        warm = model.captioning_seconds
        for start in range(1, len(pictures), batch):
            model.caption(pictures[start:start + batch])
    total = time.perf_counter() - started
    seconds = model.seconds
    per_picture = (seconds["caption"] - warm) / max(1, len(pictures) - 1)
    return {"name": model.name, "load": seconds["load"], "first": warm, "per_picture": per_picture,
            "unload": seconds["unload"], "total": total, "example": first[0],
            "rss_mb": (model.loaded.memory["rss_after_bytes"] - model.loaded.memory["rss_before_bytes"]) / 2**20}


def print_timing(label: str, timing: dict, batch: int) -> None:
    print(f"{label}: {timing['name']}")
    print(f"  load {timing['load']:.2f} s · first picture {timing['first']:.2f} s · then "
          f"{timing['per_picture']:.2f} s per picture (batches of {batch}) · unload {timing['unload']:.2f} s · "
          f"RSS left after unload {timing['rss_mb']:+.0f} MB")
    print(f"  example caption: {timing['example'][:200]!r}")


def captioner_cost(out: pathlib.Path, model: pathlib.Path | None, count: int, batch: int) -> None:
    print("== captioner cost (this CPU, generated engravings 600 x 800) ==")
    from captioner_support import write_tiny_captioner

    import torch

    print(f"torch threads: {torch.get_num_threads()}")
    pictures = engravings(count)
    tiny = write_tiny_captioner(out / "tiny-florence")
    print_timing("tiny Florence-2 (random weights)", time_captioner(tiny, pictures, batch), batch)
    real = model or default_model_dir()
    if (real / "config.json").is_file():
        print_timing("real model", time_captioner(real, pictures, batch), batch)
    else:
        print(f"no real model at {real}: install it with `python -m inference install-captioner` to measure it")


def caption_job_cost(out: pathlib.Path, pages: int) -> None:
    print(f"== caption job (generated archive, {pages} engraving pages at 150 dpi, tiny model, --all) ==")
    from captioner_support import write_tiny_captioner

    tiny = write_tiny_captioner(out / "tiny-florence")
    pdf = write_pdf(out / "job" / "issue.pdf", [PageSpec(kind="engraving", seed=n, dpi=150) for n in range(pages)])
    db = out / "job" / "manifest.sqlite"
    db.unlink(missing_ok=True)
    with Manifest(db) as manifest:
        ingest(manifest, [pdf], workers=1)
        report = caption_pictures(manifest, tiny, pictures=Pictures(), overwrite=True)
    print(f"pictures: {report.pictures}, captioned: {report.captioned}, unreadable: {len(report.failed)}")
    if report.captioned:  # the job's time: reading, captioning and saving, the model's load not included
        print(f"job: {report.seconds_per_image:.3f} s per picture (model load {report.load_seconds:.2f} s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=pathlib.Path, default=None)
    parser.add_argument("--pictures", type=int, default=8)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--pages", type=int, default=12)
    parser.add_argument("--out", type=pathlib.Path, default=ROOT / "bench" / "out" / "captions")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    caption_job_cost(args.out, args.pages)
    captioner_cost(args.out, args.model, args.pictures, args.batch)


if __name__ == "__main__":
    main()
