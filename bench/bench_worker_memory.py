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

With --newspapers, where a newspaper's memory goes: the finder and legends on, a worker (ingest's own task function
in a fresh process) over the real newspaper pages of --real (../shared/realdata by default; skipped, saying so, where
it is absent) and over generated broadsheets (NEWSPAPER_IN, 23 x 35 in at --broadsheet-dpi, columns of type and
halftone cuts with their legends), --repeat times over. Its peak, and each stage's: the page's render or decode, the
page analysis, the finder's network, the rest of the finder (the boxes fitted), the picture job's inputs, the
thumbnail, the legends (the page read around the pictures, Tesseract, the recogniser) and the cards. A stage's peak is
the process's largest resident memory while it ran (the kernel's own high-water mark, VmHWM, set back to the resident
memory at each stage's start and end through /proc/self/clear_refs, so nothing between two readings is missed), its
rise that peak less the memory when it began (the largest over the pages), its time the CPU a page. Then the same
pages ingested by `python -m curation ingest` with its picture job (two workers), and the peak of each process.

    python bench/bench_worker_memory.py --newspapers [--real ../shared/realdata] [--repeat 2]
"""

from __future__ import annotations

import argparse
import ctypes
import os
import pathlib
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))


BROADSHEET_IN = (22.5, 31.0)  # a newspaper's front page (the Evening Star's, 1859-1870)
BROADSHEET_DPI = 150
REALDATA = ROOT.parent / "shared" / "realdata"


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
    parser.add_argument("--newspapers", action="store_true", help="where a worker's memory goes on newspaper pages")
    parser.add_argument("--broadsheet-dpi", type=int, default=200, help="the generated broadsheets' resolution")
    parser.add_argument("--child", nargs=2, metavar=("PICTURES", "LEGENDS"), help=argparse.SUPPRESS)
    parser.add_argument("--stages-of", nargs="*", type=pathlib.Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    from bench_ingest import legend_languages

    if args.stages_of:
        stage_peaks(args.stages_of * args.repeat)
        return
    if args.newspapers:
        newspapers(args, legend_languages())
        return

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


def newspapers(args, languages: str | None) -> None:
    """Each newspaper corpus's worker by stage, then its ingest with the picture job, process by process."""
    from curation.pictures import finder

    finder.check_installed()
    print(f"legends: {languages or 'not installed: not read'}; the picture finder")
    corpora = {}
    real = args.real or REALDATA
    if (real / "labels.jsonl").exists():
        corpora["real newspaper pages"] = real_newspapers(real, args.out)
    else:
        print(f"real newspaper pages: skipped, {real} is not here")
    corpora[f"generated broadsheets, {args.broadsheet_dpi} dpi"] = [generated_broadsheet(args.out, args.broadsheet_dpi,
                                                                                         seed) for seed in (1, 2)]
    for name, pdfs in corpora.items():
        print(f"\n{name}: {len(pdfs)} pages, {args.repeat} times over; a worker by stage", flush=True)
        options = ["--repeat", str(args.repeat), "--stages-of", *map(str, pdfs)]
        env = {**os.environ, "BENCH_LEGENDS": languages or "none"}
        lines = subprocess.run([sys.executable, __file__, *options], check=True, capture_output=True, text=True,
                               env=env)
        print(lines.stdout, end="", flush=True)
        print(f"  ingest with its picture job (2 workers), peak memory of each process: {ingest_peaks(pdfs, languages, args.out)}",
              flush=True)


def generated_broadsheet(out: pathlib.Path, dpi: int, seed: int) -> pathlib.Path:
    """A newspaper page of NEWSPAPER_IN at `dpi` (columns of type, halftone cuts with their legends), one PDF."""
    from curation.sources.synthetic import NEWSPAPER_IN, PageSpec, write_pdf

    path = out / f"broadsheet-{dpi}dpi-{seed}.pdf"
    if not path.exists():
        write_pdf(path, [PageSpec(kind="newspaper", seed=seed, dpi=dpi, inches=NEWSPAPER_IN)])
    return path


def ingest_peaks(pdfs: list[pathlib.Path], languages: str | None, out: pathlib.Path) -> str:
    """`python -m curation ingest` of `pdfs` with its picture job: the peak of each process, by role."""
    import shutil

    from bench_archive import ingest_stages

    folder = out / "newspapers"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    for pdf in pdfs:
        shutil.copy(pdf, folder / pdf.name)
    db = out / "newspapers.sqlite"
    for suffix in ("", "-wal", "-shm"):
        pathlib.Path(f"{db}{suffix}").unlink(missing_ok=True)
    command = ["ingest", str(folder), "--workers", "2", "--pictures", "network"]
    _stages, peaks = ingest_stages(db, command + (["--legend-languages", languages] if languages else []))
    return ", ".join(f"{role} {peak / 2**20:.0f} MB" for role, peak in peaks)


def stage_peaks(corpus: list[pathlib.Path]) -> None:
    """A worker's pages, one task each, the finder and legends (BENCH_LEGENDS) on: its peak, and each stage's."""
    from curation.manifest.rules import DEFAULT_PICTURE_SCORE_MIN
    from curation.runs.ingest_task import Task, run_task
    from curation.runs.worker_pool import _init_worker

    _init_worker()
    legends = os.environ.get("BENCH_LEGENDS", "none")
    stages = Stages()
    stages.watch()
    for path in corpus:
        run_task(Task(doc_id=1, path=str(path), pages=(0,), picture_finder="network",
                      legend_languages=None if legends == "none" else legends, embedding_inputs=True,
                      score_min=DEFAULT_PICTURE_SCORE_MIN))
    stages.read()
    print(f"  peak of the worker {stages.overall:.0f} MB, reached in {stages.at_peak} (resident at the end "
          f"{_status('VmRSS'):.0f} MB)")
    print(f"  {'stage':34s} {'peak':>7s} {'rise':>7s} {'CPU a page':>11s}")
    for name, (peak, rise, cpu) in stages.table(len(corpus)):
        print(f"  {name:34s} {peak:4.0f} MB {rise:4.0f} MB {cpu:7.1f} ms")


class Stages:
    """Each stage's peak resident memory, its rise above its start and its CPU, read from the kernel's high-water
    mark, which is set back at every stage's start and end (so a stage's peak is its own, nested stages included)."""

    # (module, function, stage): where each stage is called from (a class's method: "Class.method")
    WATCHED = (
        ("curation.runs.ingest_task", "_score_and_shrink", "the whole page"),
        ("curation.scoring.scorer", "_gray_at_reference", "render or decode"),
        ("curation.scoring.scorer", "feature_columns", "page analysis"),
        ("curation.pictures.finder", "Finder.cells", "finder: network"),
        ("curation.pictures.finder", "pictures_from_cells", "finder: boxes fitted"),
        ("curation.runs.ingest_task", "encoded_inputs", "picture job's inputs"),
        ("curation.scoring.scorer", "thumbnail_jpeg", "thumbnail"),
        ("curation.runs.ingest_task", "with_legends", "legends"),
        ("curation.captions.legend", "read_area", "legends: page read around pictures"),
        ("curation.captions.legend", "read_text", "legends: Tesseract"),
        ("curation.captions.recognizer", "_probabilities", "legends: recogniser"),
        ("curation.export.card", "with_picture_cards", "cards"),
    )

    def __init__(self):
        self.stack: list[list] = []
        self.peaks: dict[str, list[float]] = {}
        self.overall = 0.0
        self.at_peak = "between stages"

    def watch(self) -> None:
        import importlib

        for module_name, function, name in self.WATCHED:
            owner = importlib.import_module(module_name)
            if "." in function:
                owner_name, function = function.split(".")
                owner = getattr(owner, owner_name)
            setattr(owner, function, self._watched(name, getattr(owner, function)))

    def _watched(self, name: str, function):
        def watched(*args, **kwargs):
            self.read()
            frame = [_status("VmRSS"), 0.0, name]
            self.stack.append(frame)
            cpu = time.process_time()
            try:
                return function(*args, **kwargs)
            finally:
                cpu = time.process_time() - cpu
                self.read()
                self.stack.pop()
                peak, rise, total = self.peaks.get(name, [0.0, 0.0, 0.0])
                self.peaks[name] = [max(peak, frame[1]), max(rise, frame[1] - frame[0]), total + cpu]
        return watched

    def read(self) -> None:
        """The high-water mark since the last reading, into every running stage's peak; then set back."""
        mark = _status("VmHWM")
        if mark > self.overall:
            self.overall, self.at_peak = mark, self.stack[-1][2] if self.stack else "between stages"
        for frame in self.stack:
            frame[1] = max(frame[1], mark)
        with open("/proc/self/clear_refs", "w") as clear:
            clear.write("5")

    def table(self, pages: int) -> list[tuple[str, tuple[float, float, float]]]:
        return [(name, (self.peaks[name][0], self.peaks[name][1], self.peaks[name][2] / pages * 1000))
                for *_, name in self.WATCHED if name in self.peaks]


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
