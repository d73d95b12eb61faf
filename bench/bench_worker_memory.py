"""An ingest worker's memory over a long run: one process scores the pages of an archive as a worker does (ingest's
own task function, PAGES_PER_TASK pages a task), and its memory is read every --every pages.

A worker lives for hundreds of tasks, thousands of pages, so what matters is not its memory after the first pages but
whether it settles. Each line gives the resident memory, its peak so far, and the C heap's state (glibc's
mallinfo2): the memory in use, the memory free but still held (a heap in pieces: it grows page after page while
what is in use stays put), and what is mapped apart (large blocks, ONNX Runtime's arenas). Each configuration runs in
a fresh process, one after another, so the figures do not mix:

- rules: the page analysis's own pictures (the reference: what a worker holds without the finder);
- network: the picture finder;
- each again with legends read (where Tesseract and its languages are installed).

The archive is bench_ingest's (as bench_archive.py makes it: JPEG scans of text columns, engravings, mixed pages),
and after it a newspaper-sized issue (--broadsheets pages of 22.5 x 31 inches at 150 dpi, as the real front pages:
the finder reads such a page at its large side, and its legends' lines run long). With --real, the real newspaper
pages of a folder laid out like ../shared/realdata instead (those at least the finder's LARGE_IN long, one PDF a page,
read --repeat times over): what a worker holds on an archive of newspapers.

    python bench/bench_worker_memory.py [--dpi 300] [--docs 4] [--pages 100] [--every 50] [--broadsheets 4]
        [--real ../shared/realdata --repeat 3]
"""

from __future__ import annotations

import argparse
import ctypes
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))


BROADSHEET_IN = (22.5, 31.0)  # a newspaper's front page (the Evening Star's, 1859-1870)
BROADSHEET_DPI = 150


class HeapInfo(ctypes.Structure):
    """glibc's struct mallinfo2."""
    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
                 "keepcost")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dpi", type=int, default=300)
    parser.add_argument("--docs", type=int, default=4)
    parser.add_argument("--pages", type=int, default=100, help="pages per document")
    parser.add_argument("--every", type=int, default=50, help="pages between readings")
    parser.add_argument("--out", type=pathlib.Path, default=ROOT / "bench" / "out" / "archive")
    parser.add_argument("--broadsheets", type=int, default=4, help="newspaper-sized pages after the archive")
    parser.add_argument("--real", type=pathlib.Path, default=None,
                        help="a folder like ../shared/realdata: its newspaper pages instead of generated ones")
    parser.add_argument("--repeat", type=int, default=3, help="passes over the real pages")
    parser.add_argument("--child", nargs=2, metavar=("PICTURES", "LEGENDS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    from bench_ingest import legend_languages

    corpus = real_newspapers(args.real, args.out) * args.repeat if args.real else generated(args)
    if args.child:
        run_worker(corpus, *args.child, args.every)
        return
    from curation.pictures import finder

    finder.check_installed()  # as ingest does before its workers start: the finder's ONNX export is made here
    languages = legend_languages()
    what = (f"{len(corpus) // args.repeat} real newspaper pages, {args.repeat} times over" if args.real else
            f"{args.dpi} dpi: {args.docs} PDFs of {args.pages} pages, then {args.broadsheets} newspaper-sized pages")
    print(f"{what}; legends: {languages or 'not installed'}")
    peaks = {}
    for legends in ("none", languages):
        if legends is None:
            continue
        for pictures in ("rules", "network"):
            print(f"\n{pictures}, legends {legends}:", flush=True)
            options = ["--dpi", str(args.dpi), "--docs", str(args.docs), "--pages", str(args.pages), "--every",
                       str(args.every), "--out", str(args.out), "--broadsheets", str(args.broadsheets),
                       "--repeat", str(args.repeat)] + (["--real", str(args.real)] if args.real else [])
            lines = subprocess.run([sys.executable, __file__, *options, "--child", pictures, legends], check=True,
                                   capture_output=True, text=True)
            print(lines.stdout, end="")
            peaks[pictures, legends] = float(lines.stdout.split()[-1])
    print()
    for legends in ("none", languages):
        if ("rules", legends) in peaks:
            rules, network = peaks["rules", legends], peaks["network", legends]
            print(f"peak, legends {legends}: rules {rules:.0f} MB, network {network:.0f} MB "
                  f"({network / rules:.2f}x, {network - rules:+.0f} MB)")


def generated(args) -> list[pathlib.Path]:
    """bench_ingest's archive, then a newspaper-sized issue."""
    from bench_ingest import make_corpus

    from curation.sources.synthetic import periodical_specs, write_pdf

    corpus = make_corpus(args.out / f"corpus-{args.dpi}dpi-{args.docs}x{args.pages}", args.docs, args.pages,
                         dpis=(args.dpi,))
    if args.broadsheets:
        issue = args.out / f"broadsheets-{BROADSHEET_DPI}dpi-{args.broadsheets}.pdf"
        if not issue.exists():
            write_pdf(issue, periodical_specs(args.broadsheets, seed=77, dpi=BROADSHEET_DPI, inches=BROADSHEET_IN))
        corpus.append(issue)
    return corpus


def real_newspapers(folder: pathlib.Path, out: pathlib.Path) -> list[pathlib.Path]:
    """The real pages of `folder` at least the finder's LARGE_IN long, one PDF each."""
    import realdata

    from curation.pictures.finder import LARGE_IN

    labels = realdata.build(folder, out / "realdata")
    return [pathlib.Path(pdf) for pdf, label in sorted(labels.items())
            if _long_side_in(folder / "pages" / label["file"], label["dpi"]) >= LARGE_IN]


def _long_side_in(image: pathlib.Path, dpi: float) -> float:
    import PIL.Image

    with PIL.Image.open(image) as picture:  # the header only
        return max(picture.size) / dpi


def run_worker(corpus: list[pathlib.Path], pictures: str, legends: str, every: int) -> None:
    import pymupdf

    from curation.manifest.rules import DEFAULT_PICTURE_SCORE_MIN
    from curation.runs.ingest import PAGES_PER_TASK
    from curation.runs.ingest_task import Task, run_task
    from curation.runs.worker_pool import _init_worker

    _init_worker()  # as a pool's worker starts (its malloc's settings, OpenCV on one thread), without a memory cap
    libc = ctypes.CDLL("libc.so.6")
    libc.mallinfo2.restype = HeapInfo
    done = 0
    for path in corpus:
        count = pymupdf.open(path).page_count
        for first in range(0, count, PAGES_PER_TASK):
            pages = tuple(range(first, min(count, first + PAGES_PER_TASK)))
            run_task(Task(doc_id=1, path=str(path), pages=pages, picture_finder=pictures,
                          legend_languages=None if legends == "none" else legends, embedding_inputs=True,
                          score_min=DEFAULT_PICTURE_SCORE_MIN))
            before, done = done, done + len(pages)
            if done // every > before // every or (path == corpus[-1] and pages[-1] == count - 1):
                heap = libc.mallinfo2()
                print(f"  {done:5d} pages: resident {_status('VmRSS'):4.0f} MB, peak {_status('VmHWM'):4.0f} MB; "
                      f"heap in use {heap.uordblks / 2**20:4.0f} MB, free but held {heap.fordblks / 2**20:4.0f} MB, "
                      f"mapped apart {heap.hblkhd / 2**20:4.0f} MB", flush=True)
    print(f"  peak {_status('VmHWM'):.0f}")


def _status(key: str) -> float:
    """A line of /proc/self/status in MB."""
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) / 1024 for line in status if line.startswith(key + ":"))


if __name__ == "__main__":
    main()
