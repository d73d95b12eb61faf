"""Captions benchmark: what reading the pictures' printed legends costs and how well it reads them, and
what the captioning model costs on this machine.

- legend cost: a generated archive (synthetic periodical scans, --legend-docs x --legend-pages at
  300 dpi) is ingested twice in the same run, without legends and with them (1 worker each, end to
  end), and each page with a picture has its legends read again in this process, timed per picture:
  ms per picture, and the legends' share of ingest time per page;
- legends on real pages, where --real (default `../shared/realdata`) has `pictures.jsonl` with each
  picture's printed `legend`: bench/legend_quality.py's report, leave one source out (every picture's
  legend read from its labelled box, and from the boxes ingest finds; per source and pooled: the
  character accuracy over the printed legends and the legends read where none is printed);
- caption job: `python -m curation caption --all`'s work on a generated archive (ingested first),
  with the tiny model: seconds per picture of the whole job (reading the picture from its page as
  the export does, captioning, saving), so what the job adds to the model's own time;
- captioner cost: the captioner's load time and seconds per picture, on generated engravings (a
  crop of a synthetic engraving page, 600 x 800 pixels), with the tiny Florence-2 of the tests
  (random weights: its time says what the job around the model costs, not the model) and, where a
  real model folder is present (--model, else $CAPTIONER_MODEL_DIR, else models/captioners/florence-2-base),
  with it. Loading runs in the model slot as the caption job does; imports are not counted.

    python bench/bench_captions.py [--sections legends,real,job,captioner] [--real FOLDER]
        [--legend-docs 4] [--legend-pages 20] [--model DIR] [--pictures 8] [--batch 4] [--pages 12]
        [--out bench/out/captions]
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
import time

import numpy as np
import pymupdf

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from curation import Manifest, ingest  # noqa: E402
from curation.captions.edit import Pictures  # noqa: E402
from curation.captions.job import caption_pictures  # noqa: E402
from curation.captions.legend import engine_note, read_legends  # noqa: E402
from curation.scoring.scorer import score_page_and_scan  # noqa: E402
from curation.sources.synthetic import PageSpec, page_image, write_archive, write_pdf  # noqa: E402
from inference.captioner import default_model_dir, loaded_captioner  # noqa: E402
import legend_quality  # noqa: E402

REAL = ROOT.parent / "shared" / "realdata"
SECTIONS = ("legends", "real", "job", "captioner")


def ingest_seconds(folder: pathlib.Path, db: pathlib.Path, legend_languages: str) -> tuple[float, int]:
    if db.exists():
        db.unlink()
    with Manifest(db) as manifest:
        started = time.perf_counter()
        report = ingest(manifest, [folder], workers=1, legend_languages=legend_languages)
        return time.perf_counter() - started, report.pages_scored


def legend_times(folder: pathlib.Path) -> tuple[list[float], int]:
    """ms per picture of reading legends, page by page (the engine loaded first, as a worker keeps it)."""
    per_picture, pages = [], 0
    for path in sorted(folder.glob("*.pdf")):
        with pymupdf.open(path) as doc:
            for number in range(doc.page_count):
                scored, scan = score_page_and_scan(doc, number)  # as a worker: the scan, where decoded whole
                boxes = [p[:4] for p in json.loads(scored.features["pictures"])]
                if not boxes:
                    continue
                if not per_picture:
                    read_legends(doc, number, boxes, scan=scan)  # loads the engine: once per worker
                started = time.perf_counter()
                read_legends(doc, number, boxes, scan=scan)
                per_picture += [1000 * (time.perf_counter() - started) / len(boxes)] * len(boxes)
                pages += 1
    return per_picture, pages


def legend_cost(out: pathlib.Path, docs: int, pages: int) -> None:
    print("== legend cost (generated archive, 300 dpi scans, 1 worker) ==")
    folder = out / "archive"
    if not folder.exists():
        write_archive(folder, docs, pages, dpi=300)
    without, scored = ingest_seconds(folder, out / "without.sqlite", "")
    with_legends, _ = ingest_seconds(folder, out / "with.sqlite", "eng+deu+fra")
    times, picture_pages = legend_times(folder)
    print(f"pages: {scored}, with a picture: {picture_pages}, pictures: {len(times)}")
    print(f"ingest without legends: {1000 * without / scored:.0f} ms/page; with legends (eng+deu+fra): "
          f"{1000 * with_legends / scored:.0f} ms/page; legends' share: {(with_legends - without) / with_legends:.0%}")
    if times:
        print(f"legend OCR per picture: median {np.median(times):.0f} ms, mean {np.mean(times):.0f} ms, "
              f"max {max(times):.0f} ms; per page with a picture: {sum(times) / picture_pages:.0f} ms")


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
    parser.add_argument("--sections", default=",".join(SECTIONS), help=f"which of {', '.join(SECTIONS)}")
    parser.add_argument("--real", type=pathlib.Path, default=REAL)
    parser.add_argument("--languages", default="eng+deu+fra")
    parser.add_argument("--legend-docs", type=int, default=4)
    parser.add_argument("--legend-pages", type=int, default=20)
    parser.add_argument("--model", type=pathlib.Path, default=None)
    parser.add_argument("--pictures", type=int, default=8)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--pages", type=int, default=12)
    parser.add_argument("--out", type=pathlib.Path, default=ROOT / "bench" / "out" / "captions")
    args = parser.parse_args()
    sections = set(args.sections.split(","))
    args.out.mkdir(parents=True, exist_ok=True)
    note = engine_note()
    if note and sections & {"legends", "real"}:
        print(note)
    elif "legends" in sections:
        legend_cost(args.out, args.legend_docs, args.legend_pages)
    if not note and "real" in sections:
        if (args.real / "pictures.jsonl").exists():
            legend_quality.report(args.real, args.out / "real", args.languages)
        else:
            print(f"no real pages at {args.real}: legends on real pages not measured")
    if "job" in sections:
        caption_job_cost(args.out, args.pages)
    if "captioner" in sections:
        captioner_cost(args.out, args.model, args.pictures, args.batch)


if __name__ == "__main__":
    main()
