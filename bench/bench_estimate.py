"""The Export page's size estimate against the ZIP then written, on labelled real pages (../shared/realdata as
PDFs, bench/realdata.py) and on generated ones: the sample's mean image (what the page showed before) beside the
same sample scaled by the pages' σ (a ratio estimator: σ is known for every page without encoding it, and busy
pages make large JPEGs). Each estimate is printed as its ratio to the ZIP's size.

    python bench/bench_estimate.py ../shared/realdata [--workers 2]
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from curation import Manifest, ingest  # noqa: E402
from curation.export import ExportSettings, count_export, estimate_export, export, preview, select  # noqa: E402
from curation.export.preview import MEMBER_OVERHEAD, estimate, estimate_items  # noqa: E402
from curation.sources.synthetic import PageSpec, write_pdf  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import realdata  # noqa: E402

SETTINGS = {"pictures": ExportSettings(), "pictures, 512 px minimum": ExportSettings(min_source_side=512),
            "pages": ExportSettings(crop="page"), "pages, buckets of 768": ExportSettings(crop="page", mode="bucket",
                                                                                         size=768)}


def generated(folder: pathlib.Path) -> pathlib.Path:
    for n, dpi in enumerate((72, 110, 150, 200)):
        write_pdf(folder / f"issue-{n}.pdf", [PageSpec(kind=("engraving", "mixed")[p % 2], seed=10 * n + p, dpi=dpi,
                                                       inches=(6.0, 8.0)) for p in range(8)])
    return folder


def sigma_scaled(previews, pool, written: int) -> float:
    """The sample's mean image scaled by the pool's mean σ over the sample's."""
    shown = [p for p in previews if p.image is not None]
    per_image = sum(len(p.image.jpeg) + len(p.caption.encode()) for p in shown) / len(shown)
    factor = (sum(i.sigma or 0 for i in pool) / len(pool)) / max(sum(p.item.sigma or 0 for p in shown) / len(shown), 1e-6)
    return written * (per_image * factor + MEMBER_OVERHEAD) + 4096


def measured(db: pathlib.Path, out: pathlib.Path) -> list[str]:
    lines = []
    with Manifest(db) as manifest:
        for name, settings in SETTINGS.items():
            items = select(manifest, crop=settings.crop).items
            counted = count_export(items, settings)
            pool = counted.written(items)
            sample = estimate_items(pool)
            previews = [preview(item, settings) for item in sample]
            plain = estimate(previews, len(pool), counted.images)
            by_sigma = sigma_scaled(previews, pool, counted.images)
            shipped = estimate_export(items, counted, lambda chosen: [preview(i, settings) for i in chosen])
            report = export(manifest, out / "estimate.zip", settings)
            size = (out / "estimate.zip").stat().st_size
            lines.append(f"{name:28s} {counted.images:4d} images  ZIP {size / 1e6:7.1f} MB   sample's mean "
                         f"{plain.bytes / size:5.3f}   scaled by σ {by_sigma / size:5.3f}   "
                         f"the page's estimate {shipped.bytes / size:5.3f}"
                         + ("" if report.images == counted.images else "   (counted images differ)"))
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("realdata", type=pathlib.Path, nargs="?")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--keep", type=pathlib.Path, help="a folder to work in and keep (the manifests, the ZIP)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as temporary:
        work = args.keep or pathlib.Path(temporary)
        archives = {"generated (32 pages, 72-200 dpi)": generated(work / "generated")}
        if args.realdata:
            realdata.build(args.realdata, work / "real")
            archives[f"real ({args.realdata})"] = work / "real"
        for name, folder in archives.items():
            db = work / f"{folder.name}.sqlite"
            if not db.exists():
                with Manifest(db) as manifest:
                    ingest(manifest, [folder], workers=args.workers)
                    manifest.rule, manifest.threshold = "sigma", 0.0  # every page kept
            print(name)
            print("\n".join("  " + line for line in measured(db, work)))


if __name__ == "__main__":
    main()
