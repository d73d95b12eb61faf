"""Archive benchmark: the curator's wait, from a folder of PDFs to an exported set of checked pictures.

For each scan resolution asked for (default 200 and 300 dpi) it generates the archive bench_ingest.py builds
(its make_corpus: JPEG scans of text columns, engravings and mixed pages; --docs x --pages), then runs, as
a curator would, with every feature on:

- ingest: `python -m curation ingest` with --workers (2) workers: page analysis, thumbnails, picture cards,
  legends (where Tesseract and its languages are installed), the pictures found by --pictures (rules, network:
  the picture finder, learned: the learned verdict)
- the picture job that ingest starts when it finishes (every picture embedded; on the GPU where torch sees one)
- export: `python -m curation export --crop pictures` with as many workers

and prints each stage's wall time and CPU seconds (the CPU of all its processes: less sensitive to a loaded
machine; the picture job's is its process's from when it starts, and its readers'), the picture job's one-off
loading of its network apart from its embedding, pages per second end to end, the original loop's rate on the same pages (bench_ingest's reference
loop, which does none of this) and the ratio, the exact-decode floor's share of the end-to-end time (the
pages decoded in as many processes that do nothing else: bench_ingest's floor), and 30,000 pages
extrapolated (the network's loading counted once; every other start-up, of ingest's pool and of the export,
is scaled with the pages, so a small archive overstates the time: measure with a few hundred pages or more),
and the peak memory of each process: the ingest's own (coordinator), its workers, the picture job's network.

    python bench/bench_archive.py [--dpi 200,300] [--docs 4] [--pages 30] [--workers 2] [--pictures network]
"""

from __future__ import annotations

import argparse
import datetime
import os
import pathlib
import shutil
import sqlite3
import subprocess
import sys
import threading
import time

import psutil

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_ingest import decode_floor, legend_languages, make_corpus, reference_loop  # noqa: E402
from process_tree import watch_processes, watch_tree  # noqa: E402

from curation import Manifest  # noqa: E402
from curation.runs.embed import KIND as PICTURE_JOB, missing_parts  # noqa: E402

EXTRAPOLATED = 30_000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dpi", default="200,300", help="scan resolutions, one archive each")
    parser.add_argument("--docs", type=int, default=4)
    parser.add_argument("--pages", type=int, default=30, help="pages per document")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--pictures", choices=("rules", "network", "learned"), default="rules",
                        help="who finds the pictures at ingest (network: the picture finder; learned: the picture "
                             "stage's verdict, slow on a CPU)")
    parser.add_argument("--out", type=pathlib.Path, default=ROOT / "bench" / "out" / "archive")
    args = parser.parse_args()
    problem = missing_parts()
    if problem:
        raise SystemExit(f"the picture job cannot run here, and it is part of what is measured: {problem}")
    languages = legend_languages()
    print(f"legends: {languages or 'not read (Tesseract or its languages missing)'}; pictures: {args.pictures}; "
          f"{args.workers} workers")
    for dpi in (int(value) for value in args.dpi.split(",")):
        bench_resolution(args, dpi, languages)


def bench_resolution(args, dpi: int, languages: str | None) -> None:
    import pymupdf

    corpus_dir = args.out / f"corpus-{dpi}dpi-{args.docs}x{args.pages}"
    corpus = make_corpus(corpus_dir, args.docs, args.pages, dpis=(dpi,))
    pages = sum(pymupdf.open(path).page_count for path in corpus)
    print(f"\n{dpi} dpi: {len(corpus)} PDFs, {pages} pages")
    loop_rate, _ = reference_loop(corpus)
    floor_rate = decode_floor(corpus, args.workers)

    db = args.out / f"archive-{dpi}dpi.sqlite"
    for suffix in ("", "-wal", "-shm"):
        pathlib.Path(f"{db}{suffix}").unlink(missing_ok=True)
    ingest = ["ingest", str(corpus_dir), "--workers", str(args.workers), "--pictures", args.pictures]
    ingest += ["--legend-languages", languages] if languages else []
    stages, peaks = ingest_stages(db, ingest)
    with Manifest(db) as manifest:
        scored = manifest.summary()["scored"]
        pictures = manifest.conn.execute("SELECT COUNT(*) FROM pictures WHERE NOT deleted").fetchone()[0]
        embedded = manifest.conn.execute("SELECT COUNT(*) FROM picture_embeddings").fetchone()[0]
        job = manifest.latest_job(PICTURE_JOB)
    # The job's rate counts from its first page, after the network is loaded: what loading costs is paid once.
    job_seconds, _ = stages["picture job"]
    embedding = embedded / job["rate"] if job and job["rate"] else job_seconds
    once = max(0.0, job_seconds - embedding)
    out = args.out / f"export-{dpi}dpi.zip"
    out.unlink(missing_ok=True)
    stages["export --crop pictures"] = timed(["export", "--db", str(db), "--out", str(out), "--crop", "pictures",
                                              "--workers", str(args.workers)])
    total = sum(seconds for seconds, _ in stages.values())
    print(f"  {scored} pages scored, {pictures} pictures, {embedded} embedded "
          f"(picture job: {job['message'] if job else 'did not run'})")
    for stage, (seconds, cpu) in stages.items():
        cpu_text = f"{cpu:7.1f} s CPU"
        print(f"  {stage:24s} {seconds:7.1f} s wall {cpu_text}   {seconds / pages * 1000:6.1f} ms/page")
    print(f"    of the picture job: loading the network {once:.1f} s (once a run), embedding {embedding:.1f} s")
    print("  peak memory, each process of the ingest and its picture job: " +
          ", ".join(f"{role} {peak / 2**20:.0f} MB" for role, peak in peaks))
    rate = pages / total
    print(f"  end to end              {total:7.1f} s   {rate:6.1f} pages/s")
    print(f"  original loop           {pages / loop_rate:7.1f} s   {loop_rate:6.1f} pages/s   "
          f"end to end is {rate / loop_rate:.2f}x the loop")
    floor_seconds = pages / floor_rate
    print(f"  exact-decode floor      {floor_seconds:7.1f} s   {floor_rate:6.1f} pages/s in {args.workers} "
          f"processes: {floor_seconds / total:.0%} of the end-to-end time")
    at_scale = once + (total - once) * EXTRAPOLATED / pages
    print(f"  {EXTRAPOLATED:,} pages: end to end {duration(at_scale)} (the network's loading counted once), "
          f"the original loop {duration(EXTRAPOLATED / loop_rate)}: {EXTRAPOLATED / loop_rate / at_scale:.2f}x")


def ingest_stages(db: pathlib.Path, ingest: list[str]) -> tuple[dict[str, tuple[float, float | None]], list]:
    """Wall and CPU seconds of ingest and of the picture job that follows it in the same process, split where
    the picture job's row appears in the manifest: the job's CPU is its process's from then on, and that of
    any process started after (its network's, its readers'); and the peak memory of each process by role,
    largest first (a process started after the split is the picture job's)."""
    env = {**os.environ, "CURATION_PICTURE_JOB": "on"}
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "curation", *ingest, "--db", str(db), "--quiet"], cwd=ROOT,
                            stdout=subprocess.DEVNULL, env=env)
    handed_over: list[tuple[float, dict[int, float]]] = []
    by_pid: dict[int, float] = {}
    watcher = threading.Thread(target=watch_for_picture_job, args=(db, proc, by_pid, handed_over), daemon=True)
    watcher.start()
    created: dict[int, float] = {}
    processes, cpu = watch_processes(proc, by_pid, created)
    end = time.perf_counter()
    watcher.join()
    if proc.returncode != 0:
        raise SystemExit(f"ingest failed with exit code {proc.returncode}")
    before = handed_over[0][1] if handed_over else by_pid
    job_started = handed_over[0][2] if handed_over else float("inf")
    roles: dict[str, int] = {}
    for pid, (role, peak) in processes.items():
        if role == "worker":  # the job's row is written before it starts its network's process
            role = "ingest worker" if created.get(pid, 0) < job_started else "picture job's process"
        roles[role] = max(roles.get(role, 0), peak)
    peaks = sorted(roles.items(), key=lambda item: -item[1])
    if not handed_over:
        print("  (the picture job's row was not seen while it ran: its time, its CPU and its process's memory are "
              "counted as ingest's; run again)")
        return {"ingest": (end - start, cpu), "picture job": (0.0, 0.0)}, peaks
    split = handed_over[0][0]
    job_cpu = sum(seconds - (0.0 if created.get(pid, 0) >= job_started else before.get(pid, 0.0))
                  for pid, seconds in by_pid.items() if pid == proc.pid or created.get(pid, 0) >= job_started)
    return {"ingest": (split - start, cpu - job_cpu), "picture job": (end - split, job_cpu)}, peaks


def watch_for_picture_job(db: pathlib.Path, proc: subprocess.Popen, by_pid: dict[int, float],
                          seen: list[tuple[float, dict[int, float], float]]) -> None:
    """When the picture job's row appears: the time, each process's CPU seconds so far, and when the job
    started by its row."""
    while proc.poll() is None:
        try:
            with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1) as conn:
                row = conn.execute("SELECT started_at FROM jobs WHERE kind = ?", (PICTURE_JOB,)).fetchone()
                if row:
                    seen.append((time.perf_counter(), _cpu_now(proc.pid, by_pid), _epoch(row[0])))
                    return
        except sqlite3.Error:  # not created yet, or busy
            pass
        time.sleep(0.05)


def _epoch(iso: str) -> float:
    return datetime.datetime.fromisoformat(iso).timestamp()


def _cpu_now(root: int, polled: dict[int, float]) -> dict[int, float]:
    """The CPU seconds of each process of the tree: as polled, the root's read now."""

    now = dict(polled)
    try:
        times = psutil.Process(root).cpu_times()
        now[root] = times.user + times.system
    except psutil.Error:
        pass
    return now


def timed(command: list[str]) -> tuple[float, float]:
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "curation", *command, "--quiet"], cwd=ROOT,
                            stdout=subprocess.DEVNULL)
    _peak, cpu = watch_tree(proc)
    if proc.returncode != 0:
        raise SystemExit(f"{command[0]} failed with exit code {proc.returncode}")
    return time.perf_counter() - start, cpu


def duration(seconds: float) -> str:
    hours, rest = divmod(round(seconds), 3600)
    return f"{hours} h {rest // 60:02d} min" if hours else f"{rest // 60} min {rest % 60:02d} s"


if __name__ == "__main__":
    if shutil.which("nvidia-smi"):
        print("a GPU is present: the picture job embeds there")
    main()
