"""The Export page's size estimate against the ZIP then written, on labelled real pages (../shared/realdata and
../shared/boxed as PDFs, bench/realdata.py) and on generated ones. Beside the page's estimate (ESTIMATE_SAMPLE
images encoded, weighed by their thumbnails: preview.estimate_export), the one before it (the mean of 12 images
spread over the export), each printed as its ratio to the ZIP's size; then, every image of the export encoded
once, both estimators over random samples (--draws): the median and the 90th percentile of their miss.

    python bench/bench_estimate.py ../shared/realdata --extra ../shared/boxed [--workers 2]
"""

from __future__ import annotations

import argparse
import dataclasses
import pathlib
import sys
import tempfile

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from curation import Manifest, ingest  # noqa: E402
from curation.export import (ExportSettings, count_export, estimate_export, export, preview, select,  # noqa: E402
                             thumbnail_sizes)
from curation.export.preview import ENLARGED_POWER, ESTIMATE_SAMPLE, Counted, estimate, estimate_items  # noqa: E402
from curation.sources.synthetic import PageSpec, write_pdf  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import realdata  # noqa: E402

SETTINGS = {"pictures": ExportSettings(), "pictures, 512 px minimum": ExportSettings(min_source_side=512),
            "pages": ExportSettings(crop="page"), "pages, buckets of 768": ExportSettings(crop="page", mode="bucket",
                                                                                         size=768)}
BEFORE_SAMPLE = 12  # the estimate before: the mean of this many images, unweighed


def generated(folder: pathlib.Path) -> pathlib.Path:
    for n, dpi in enumerate((72, 110, 150, 200)):
        write_pdf(folder / f"issue-{n}.pdf", [PageSpec(kind=("engraving", "mixed")[p % 2], seed=10 * n + p, dpi=dpi,
                                                       inches=(6.0, 8.0)) for p in range(8)])
    return folder


def drawn(counted: Counted, pool, shown: dict, sizes: list, zip_size: int, draws: int, seed: int = 54
          ) -> tuple[list[float], list[float]]:
    """Over `draws` random samples of the written images (each previewed once, `shown` by name): the miss of the
    estimate before (BEFORE_SAMPLE, unweighed) and of the page's (ESTIMATE_SAMPLE, weighed), as shares of the ZIP."""
    rng = np.random.default_rng(seed)
    before, weighed = [], []
    sized = dict(zip((item.name for item in pool), sizes))
    for _ in range(draws):
        for count, misses, weigh in ((BEFORE_SAMPLE, before, None), (ESTIMATE_SAMPLE, weighed, sized)):
            chosen = [pool[i] for i in sorted(rng.choice(len(pool), min(count, len(pool)), replace=False))]
            guess = estimate_export(pool, dataclasses.replace(counted, left_out=()),
                                    lambda sample, chosen=chosen: [shown[item.name] for item in chosen],
                                    None if weigh is None else lambda items: [weigh[i.name] for i in items])
            misses.append(abs(guess.bytes / zip_size - 1))
    return before, weighed


def measured(db: pathlib.Path, out: pathlib.Path, draws: int) -> list[str]:
    lines = []
    with Manifest(db) as manifest:
        for name, settings in SETTINGS.items():
            items = select(manifest, crop=settings.crop).items
            counted = count_export(items, settings)
            pool = counted.written(items)
            previewed = lambda chosen: [preview(i, settings) for i in chosen]  # noqa: E731
            thumbnails = lambda chosen: thumbnail_sizes(manifest, chosen)  # noqa: E731
            shipped = estimate_export(items, counted, previewed, thumbnails)
            before = estimate(previewed(estimate_items(pool, BEFORE_SAMPLE)), len(pool), counted.images)
            report = export(manifest, out / "estimate.zip", settings)
            size = (out / "estimate.zip").stat().st_size
            line = (f"{name:26s} {counted.images:4d} images  ZIP {size / 1e6:6.1f} MB   the page's estimate "
                    f"{shipped.bytes / size:5.3f}   before (12, unweighed) {before.bytes / size:5.3f}")
            if draws:
                shown = {item.name: p for item, p in zip(pool, previewed(pool))}
                plain, weighed = drawn(counted, pool, shown, thumbnails(pool), size, draws)
                line += (f"   over {draws} random samples, miss median / 90th: before {np.median(plain):.3f} / "
                         f"{np.quantile(plain, 0.9):.3f}, the page's {np.median(weighed):.3f} / "
                         f"{np.quantile(weighed, 0.9):.3f}")
            lines.append(line + ("" if report.images == counted.images else "   (counted images differ)"))
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("realdata", type=pathlib.Path, nargs="?")
    parser.add_argument("--extra", type=pathlib.Path, action="append", default=[])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--draws", type=int, default=200, help="random samples per export (0: none)")
    parser.add_argument("--keep", type=pathlib.Path, help="a folder to work in and keep (the manifests, the ZIP)")
    args = parser.parse_args(argv)
    print(f"the thumbnails' weight: their bytes times the enlargement to {ENLARGED_POWER}")
    with tempfile.TemporaryDirectory() as temporary:
        work = args.keep or pathlib.Path(temporary)
        archives = {"generated (32 pages, 72-200 dpi)": generated(work / "generated")}
        for folder, corpus in [(args.realdata, "real")] * bool(args.realdata) + [(f, f.name) for f in args.extra]:
            realdata.build(folder, work / corpus)
            archives[f"real ({folder})"] = work / corpus
        for name, folder in archives.items():
            db = work / f"{folder.name}.sqlite"
            if not db.exists():
                with Manifest(db) as manifest:
                    ingest(manifest, [folder], workers=args.workers)
                    manifest.rule, manifest.threshold = "sigma", 0.0  # every page kept
            print(name)
            print("\n".join("  " + line for line in measured(db, work, args.draws)))


if __name__ == "__main__":
    main()
