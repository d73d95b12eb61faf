"""The processes a killed ingest leaves behind: `python -m curation ingest` on an archive, killed with SIGKILL once
its workers have scored pages for --after seconds (as the kernel's OOM killer, a crashed server or `kill -9` would);
then each process its tree had that still runs, with its memory, after 1 s and after --wait seconds. Expected: 0.

The workers and helpers (forkserver, resource tracker) die with the job (guards/lifeline.py). Before they did, the forkserver,
two workers and the resource tracker stayed, 310 MB with the defaults, reparented to init until killed by hand.
What is left is killed here.

    python bench/bench_killed_job.py [--docs 2] [--pages 300] [--workers 2] [--after 8] [--wait 10]
"""

from __future__ import annotations

import argparse
import os
import pathlib
import signal
import subprocess
import sys
import time

import psutil

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_ingest import make_corpus  # noqa: E402
from process_tree import left_behind  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=2)
    parser.add_argument("--pages", type=int, default=300, help="pages per document")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--after", type=float, default=8.0, help="seconds of scoring before the kill")
    parser.add_argument("--wait", type=float, default=10.0, help="seconds after the kill to look again")
    parser.add_argument("--out", type=pathlib.Path, default=ROOT / "bench" / "out" / "killed-job")
    args = parser.parse_args()
    corpus = make_corpus(args.out / f"corpus-{args.docs}x{args.pages}", args.docs, args.pages, dpis=(150,))
    db = args.out / "manifest.sqlite"
    for stale in args.out.glob("manifest.sqlite*"):
        stale.unlink()
    job = subprocess.Popen([sys.executable, "-m", "curation", "ingest", *map(str, corpus), "--db", str(db),
                            "--workers", str(args.workers), "--quiet"], cwd=ROOT, stderr=subprocess.DEVNULL,
                           env={**os.environ, "CURATION_PICTURE_JOB": "off"})
    pids, deadline = set(), None
    while job.poll() is None and (deadline is None or time.monotonic() < deadline):
        under = psutil.Process(job.pid).children(recursive=True)
        pids |= {process.pid for process in under}
        if deadline is None and sum(process.ppid() != job.pid for process in under) >= args.workers:
            deadline = time.monotonic() + args.after  # the workers have started
        time.sleep(0.05)
    if job.poll() is not None:
        sys.exit("the ingest ended before it was killed: try more --pages")
    print(f"ingest of {args.docs} x {args.pages} pages, {args.workers} workers: {len(pids)} processes under it; "
          f"killed with SIGKILL after {args.after:g} s of scoring")
    os.kill(job.pid, signal.SIGKILL)
    job.wait()
    waited = 0.0
    for seconds in (1.0, args.wait):
        left = left_behind(pids, seconds - waited)
        waited = seconds
        total = sum(rss for _, rss in left.values())
        print(f"  {seconds:4.0f} s after: {len(left)} processes left, {total / 2**20:.0f} MB")
        for pid, (role, rss) in sorted(left.items()):
            print(f"    pid {pid}: {role}, {rss / 2**20:.0f} MB")
    for pid in left:
        os.kill(pid, signal.SIGKILL)


if __name__ == "__main__":
    main()
