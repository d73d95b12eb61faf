"""Ingest benchmark: the engine against the original loop and the decode floor, side by side in one run.

For each scan resolution asked for (default 200 and 300 dpi) it generates a realistic archive (JPEG
scans of text columns, engravings and mixed pages on yellowed paper with uneven light, some with
scanner-bed borders, bleed-through or faded ink; --docs x --pages, 600 pages by default), then:

- reference: the original loop, get_pixmap(Matrix(2, 2)) RGB, cv2 gray, std(), del, gc.collect()
- floor: every page's embedded JPEG read from its PDF and decoded to gray at full size by
  libjpeg-turbo, in 1 and in 2 processes that do nothing else: an exact sigma must at least do this
- engine: `python -m curation ingest` with 1 and with 2 workers, end to end (start-up, hashing, pool,
  page analysis, thumbnails and manifest writes included; the picture job that follows an ingest is left
  off: bench_archive.py measures the whole chain)
- pdf2image (with --pdf2image): one page at a time at 144 dpi

and prints pages/s, the engine's share of the floor with as many processes, its ratio to the original
loop, the peak RSS of every process and the largest |sigma - sigma_ref| over every page, and where a
worker's time per page goes (bench/profile_score.py: decode, resize, features, colour preview,
thumbnail, legends). With --x4 it also ingests the archive copied 4 times, for memory growth.

    python bench/bench_ingest.py [--dpi 200,300] [--docs 10] [--pages 60] [--out bench/out/ingest] [--x4]
"""

from __future__ import annotations

import argparse
import gc
import multiprocessing
import pathlib
import os
import shutil
import subprocess
import sys
import time

import cv2
import numpy as np
import pymupdf

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from curation import Manifest  # noqa: E402
from process_tree import watch_tree  # noqa: E402
from curation.sources.synthetic import periodical_specs, write_pdf  # noqa: E402
from profile_score import stage_split  # noqa: E402

DPIS = (300, 300, 200, 400)  # the mixed archive other benchmarks build with make_corpus


def make_corpus(folder: pathlib.Path, docs: int, pages: int, dpis=DPIS) -> list[pathlib.Path]:
    paths = []
    for d in range(docs):
        path = folder / f"periodical-{d:02d}.pdf"
        if not path.exists():
            write_pdf(path, periodical_specs(pages, seed=1000 + d, dpi=dpis[d % len(dpis)]))
        paths.append(path)
    return paths


def enlarge(corpus: list[pathlib.Path], folder: pathlib.Path, factor: int) -> None:
    """`factor` distinct copies of the corpus: a trailing comment makes each copy a new document."""
    folder.mkdir(parents=True, exist_ok=True)
    for copy in range(factor):
        for path in corpus:
            target = folder / f"{path.stem}-copy{copy}.pdf"
            if not target.exists():
                target.write_bytes(path.read_bytes() + f"\n% copy {copy}\n".encode())


def reference_loop(corpus) -> tuple[float, dict]:
    sigmas, count = {}, 0
    start = time.perf_counter()
    for path in corpus:
        doc = pymupdf.open(path)
        for number, page in enumerate(doc):
            pix = page.get_pixmap(matrix=pymupdf.Matrix(2, 2))
            rgb = np.frombuffer(pix.samples, np.uint8).reshape(pix.h, pix.w, pix.n)
            gray = cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY)
            sigmas[(str(path.resolve()), number)] = float(gray.std())
            del pix, rgb, gray
            gc.collect()
            count += 1
        doc.close()
    return count / (time.perf_counter() - start), sigmas


def pdf2image_loop(corpus) -> float:
    from pdf2image import convert_from_path, pdfinfo_from_path

    count, start = 0, time.perf_counter()
    for path in corpus:
        for number in range(1, pdfinfo_from_path(path)["Pages"] + 1):
            image = convert_from_path(path, dpi=144, first_page=number, last_page=number)[0]
            gray = cv2.cvtColor(np.asarray(image.convert("RGB")), cv2.COLOR_RGB2GRAY)
            gray.std()
            del image, gray
            gc.collect()
            count += 1
    return count / (time.perf_counter() - start)


def feature_cost(corpus) -> tuple[float, float]:
    """Milliseconds per page of score_page with and without the features beside sigma, in process."""
    from curation.scoring import scorer

    def timed() -> float:
        count, start = 0, time.perf_counter()
        for path in corpus:
            doc = pymupdf.open(path)
            for number in range(doc.page_count):
                scorer.score_page(doc, number)
                pymupdf.TOOLS.store_shrink(100)
                count += 1
            doc.close()
        return (time.perf_counter() - start) / count * 1000

    timed()  # warm the file cache and the libraries first
    with_features = timed()
    original, scorer.feature_columns = scorer.feature_columns, lambda gray, scale=1.0: {}
    try:
        without = timed()
    finally:
        scorer.feature_columns = original
    return min(with_features, timed()), without


def legend_languages() -> str | None:
    """The languages an ingest reads legends in by default, where the OCR engine is present."""
    from curation.captions.legend import DEFAULT_LANGUAGES, installed_languages

    return DEFAULT_LANGUAGES if set(DEFAULT_LANGUAGES.split("+")) <= installed_languages() else None


def decode_floor(corpus, processes: int) -> float:
    """Pages/s of `processes` processes that only read each page's JPEG and decode it to gray at full
    size with libjpeg-turbo; their start-up is not counted."""
    jobs = [(str(path), number) for path in corpus for number in range(pymupdf.open(path).page_count)]
    shares = [jobs[i::processes] for i in range(processes)]
    with multiprocessing.get_context("spawn").Pool(processes) as pool:
        pool.map(_decode_pages, [[] for _ in range(processes)])  # start the processes and import
        start = time.perf_counter()
        pool.map(_decode_pages, shares)
        return len(jobs) / (time.perf_counter() - start)


def _decode_pages(jobs) -> None:
    from curation.scoring.scorer import full_page_jpeg

    cv2.setNumThreads(1)
    docs = {}
    for path, number in jobs:
        doc = docs.setdefault(path, pymupdf.open(path))
        jpeg, _w, _h = full_page_jpeg(doc, doc[number])
        cv2.imdecode(np.frombuffer(jpeg, np.uint8), cv2.IMREAD_GRAYSCALE)


def run_engine(folder: pathlib.Path, db: pathlib.Path, workers: int) -> tuple[float, int, int]:
    for suffix in ("", "-wal", "-shm"):
        pathlib.Path(f"{db}{suffix}").unlink(missing_ok=True)
    start = time.perf_counter()
    # Ingest alone: the picture job that follows it (loading a network, embedding) is bench_archive.py's.
    proc = subprocess.Popen([sys.executable, "-m", "curation", "ingest", str(folder), "--db", str(db),
                             "--workers", str(workers), "--quiet"], cwd=ROOT, stdout=subprocess.DEVNULL,
                            env={**os.environ, "CURATION_PICTURE_JOB": "off"})
    peak, _cpu = watch_tree(proc)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"ingest failed with exit code {proc.returncode}")
    with Manifest(db) as m:
        pages = m.summary()["scored"]
    return pages / seconds, peak, pages


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dpi", default="200,300", help="scan resolutions, one archive each")
    parser.add_argument("--docs", type=int, default=10)
    parser.add_argument("--pages", type=int, default=60)
    parser.add_argument("--out", type=pathlib.Path, default=ROOT / "bench" / "out" / "ingest")
    parser.add_argument("--pdf2image", action="store_true", help="time pdf2image too (slow)")
    parser.add_argument("--x4", action="store_true", help="ingest the archive copied 4 times too, for memory growth")
    args = parser.parse_args()
    for dpi in (int(value) for value in args.dpi.split(",")):
        bench_resolution(args, dpi)


def bench_resolution(args, dpi: int) -> None:
    corpus_dir = args.out / f"corpus-{dpi}dpi-{args.docs}x{args.pages}"
    corpus = make_corpus(corpus_dir, args.docs, args.pages, dpis=(dpi,))
    size_mb = sum(p.stat().st_size for p in corpus) / 1e6
    pages = sum(pymupdf.open(p).page_count for p in corpus)
    print(f"\n{dpi} dpi: {len(corpus)} PDFs, {pages} pages, {size_mb:.0f} MB ({size_mb / pages:.2f} MB/page)")

    ref_rate, ref_sigmas = reference_loop(corpus)
    print(f"  reference loop        {ref_rate:7.1f} pages/s")
    if args.pdf2image:
        p2i_rate = pdf2image_loop(corpus)
        print(f"  pdf2image             {p2i_rate:7.1f} pages/s   {p2i_rate / ref_rate:.2f}x the loop")
    db = args.out / f"bench-{dpi}dpi.sqlite"
    rss = {}
    for workers in (1, 2):
        floor = decode_floor(corpus, workers)
        rate, rss[workers], scored = run_engine(corpus_dir, db, workers)
        print(f"  floor, {workers} process{'es' if workers > 1 else '  '}    {floor:7.1f} pages/s")
        print(f"  engine, {workers} worker{'s' if workers > 1 else ' '}      {rate:7.1f} pages/s   "
              f"{rate / floor:.0%} of the floor   {rate / ref_rate:.2f}x the loop   "
              f"peak RSS of any process {rss[workers] / 2**20:.0f} MB")
    with Manifest(db) as m:
        worst = max(abs(r["sigma"] - ref_sigmas[(r["doc"], r["page"])]) for r in m.pages())
        methods = dict(m.conn.execute("SELECT method, COUNT(*) FROM pages GROUP BY method").fetchall())
    print(f"  largest |sigma - sigma_ref|: {worst:.3f} over {scored} pages (paths: {methods})")

    with_features, without = feature_cost(corpus[:2])
    print(f"  score_page in process: {with_features:.1f} ms/page, {without:.1f} without the page analysis")
    split, profiled = stage_split(corpus[:2], legend_languages())
    print(f"  a worker's page in process, CPU ms over {profiled} pages: "
          + ", ".join(f"{stage} {ms:.1f}" for stage, ms in split.items()))
    if args.x4:
        big_dir = args.out / f"corpus-{dpi}dpi-x4"
        enlarge(corpus, big_dir, 4)
        rate4, rss4, scored4 = run_engine(big_dir, args.out / f"bench-{dpi}dpi-x4.sqlite", 2)
        print(f"  engine, 2 workers, 4x archive ({scored4} pages): {rate4:.1f} pages/s, peak RSS "
              f"{rss4 / 2**20:.0f} MB ({rss4 / rss[2] - 1:+.1%} vs 1x)")


if __name__ == "__main__":
    main()
