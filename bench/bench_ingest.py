"""Ingest benchmark: the engine against the original loop and pdf2image, side by side in one run.

Generates a realistic corpus (JPEG scans at 200-400 dpi of text columns, engravings and mixed pages on
yellowed paper with uneven light, some with scanner-bed borders, bleed-through or faded ink), then:

- reference: the original loop, get_pixmap(Matrix(2, 2)) RGB, cv2 gray, std(), del, gc.collect()
- pdf2image: one page at a time at 144 dpi (convert_from_path with first_page = last_page)
- engine: `python -m curation ingest` with 1 and with 2 workers, end to end (hashing, pool start-up and
  manifest writes included)

and prints pages/s, the ratios, the peak RSS of every process, its growth when the archive is 4x larger,
and the largest |sigma - sigma_ref|.

    python bench/bench_ingest.py [--docs 4] [--pages 12] [--out bench/out]
"""

from __future__ import annotations

import argparse
import gc
import pathlib
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
from curation.synthetic import periodical_specs, write_pdf  # noqa: E402

DPIS = (300, 300, 200, 400)


def make_corpus(folder: pathlib.Path, docs: int, pages: int) -> list[pathlib.Path]:
    paths = []
    for d in range(docs):
        path = folder / f"periodical-{d:02d}.pdf"
        if not path.exists():
            write_pdf(path, periodical_specs(pages, seed=1000 + d, dpi=DPIS[d % len(DPIS)]))
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
    from curation import scorer

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


def entropy_decode_floor(corpus) -> float:
    """Milliseconds per page to decode each page's JPEG at 1/8 scale: nearly no IDCT, only the
    entropy decoding every exact path must do. No scorer of embedded JPEGs can go below this."""
    from curation.scorer import full_page_jpeg

    count, seconds = 0, 0.0
    for path in corpus:
        doc = pymupdf.open(path)
        for page in doc:
            jpeg, _w, _h = full_page_jpeg(doc, page)
            start = time.perf_counter()
            cv2.imdecode(np.frombuffer(jpeg, np.uint8), cv2.IMREAD_REDUCED_GRAYSCALE_8)
            seconds += time.perf_counter() - start
            count += 1
        doc.close()
    return seconds / count * 1000


def run_engine(folder: pathlib.Path, db: pathlib.Path, workers: int) -> tuple[float, int, int]:
    for suffix in ("", "-wal", "-shm"):
        pathlib.Path(f"{db}{suffix}").unlink(missing_ok=True)
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "curation", "ingest", str(folder), "--db", str(db),
                             "--workers", str(workers), "--quiet"], cwd=ROOT, stdout=subprocess.DEVNULL)
    peak, _cpu = watch_tree(proc)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"ingest failed with exit code {proc.returncode}")
    with Manifest(db) as m:
        pages = m.summary()["scored"]
    return pages / seconds, peak, pages


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=4)
    parser.add_argument("--pages", type=int, default=12)
    parser.add_argument("--out", type=pathlib.Path, default=ROOT / "bench" / "out" / "ingest")
    parser.add_argument("--skip-pdf2image", action="store_true")
    args = parser.parse_args()

    corpus_dir = args.out / "corpus"
    corpus = make_corpus(corpus_dir, args.docs, args.pages)
    size_mb = sum(p.stat().st_size for p in corpus) / 1e6
    pages = sum(pymupdf.open(p).page_count for p in corpus)
    print(f"corpus: {len(corpus)} PDFs, {pages} pages, {size_mb:.0f} MB ({size_mb / pages:.2f} MB/page), dpi {DPIS[:args.docs]}")

    ref_rate, ref_sigmas = reference_loop(corpus)
    print(f"reference loop     {ref_rate:7.2f} pages/s   1.00x")
    if not args.skip_pdf2image:
        p2i_rate = pdf2image_loop(corpus)
        print(f"pdf2image          {p2i_rate:7.2f} pages/s   {p2i_rate / ref_rate:.2f}x")
    db = args.out / "bench.sqlite"
    rss = {}
    for workers in (1, 2):
        rate, rss[workers], scored = run_engine(corpus_dir, db, workers)
        print(f"engine, {workers} worker{'s' if workers > 1 else ' '}  {rate:7.2f} pages/s   {rate / ref_rate:.2f}x"
              f"   peak RSS of any process {rss[workers] / 2**20:.0f} MB")
    with Manifest(db) as m:
        worst = max(abs(r["sigma"] - ref_sigmas[(r["doc"], r["page"])]) for r in m.pages())
        methods = dict(m.conn.execute("SELECT method, COUNT(*) FROM pages GROUP BY method").fetchall())
    print(f"largest |sigma - sigma_ref|: {worst:.3f} over {scored} pages (paths: {methods})")

    with_features, without = feature_cost(corpus)
    print(f"score_page: {with_features:.1f} ms/page with the features, {without:.1f} without "
          f"(features cost {with_features / without - 1:+.1%} of scoring throughput)")
    floor = entropy_decode_floor(corpus)
    print(f"entropy decoding alone (JPEG at 1/8): {floor:.1f} ms/page; one worker can be at most "
          f"{1000 / floor / ref_rate:.1f}x the reference loop, whatever else it does")

    big_dir = args.out / "corpus-x4"
    enlarge(corpus, big_dir, 4)
    rate4, rss4, scored4 = run_engine(big_dir, args.out / "bench-x4.sqlite", 2)
    growth = rss4 / rss[2] - 1
    print(f"engine, 2 workers, 4x archive ({scored4} pages): {rate4:.2f} pages/s, peak RSS {rss4 / 2**20:.0f} MB "
          f"({growth:+.1%} vs 1x)")


if __name__ == "__main__":
    main()
