"""Fuzz campaign: ingest N hostile PDFs beside a good one and show how every file ended.

The files come from curation.sources.hostile (the generators the test suite uses): crafted ones (a tiling
pattern with a 0.001 pt step, operator floods, a 500 MB content stream in 500 KB, a 24000 x 24000
image, page-tree loops, deep nesting, a lying page count, a recursive form) and structure-aware
mutations of generated scan PDFs. The ingest runs as the CLI does, in its own process, while this
script watches every process of its tree. Printed: files, document statuses, page failures by reason,
crashes retried and time-outs (from the run's summary), the wall time, and the peak RSS per process.
Then two small runs time an ingest with one hanging page: alone in its document (the limit plus
overhead) and inside a 16-page task (about twice the limit: once in the task, once alone).

    python bench/fuzz_ingest.py [--files 500] [--seed 0] [--page-timeout 10] [--workers 2] [--out bench/out]
"""

from __future__ import annotations

import argparse
import collections
import pathlib
import re
import shutil
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from curation import Manifest  # noqa: E402
from curation.sources import hostile
from process_tree import watch_processes  # noqa: E402


def ingest(folder: pathlib.Path, db: pathlib.Path, workers: int, page_timeout: float):
    db.unlink(missing_ok=True)
    command = [sys.executable, "-m", "curation", "ingest", str(folder), "--db", str(db), "-q",
               "--workers", str(workers), "--page-timeout", str(page_timeout)]
    started = time.monotonic()
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peaks, cpu = watch_processes(process)
    out, err = process.communicate()
    return process.returncode, out.strip(), err, time.monotonic() - started, peaks, cpu


def reason(text: str | None) -> str:
    """A failure's reason without the numbers and names that make each one unique."""
    text = re.sub(r"\(\d+ \d+ R\)|\d+", "N", text or "")
    return text.split(":")[0] if text.startswith(("damaged page", "could not read page")) else text[:70]


def hang_alone_or_inside(args, inside: bool) -> None:
    """Time an ingest whose one hanging page is a document of its own, or page 5 of a 16-page one."""
    folder = args.out / "hang"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    hostile.scan_pdf(folder / "good.pdf", pages=16)
    (folder / "hang.pdf").write_bytes(hostile.tiling_hang())
    if inside:
        import pymupdf

        mixed = pymupdf.open(folder / "good.pdf")
        mixed.insert_pdf(pymupdf.open(folder / "hang.pdf"), start_at=5)
        mixed.save(folder / "mixed.pdf")
        (folder / "hang.pdf").unlink()
    where = "page 5 of a 17-page document" if inside else "a one-page document"
    code, summary, _, seconds, _, _ = ingest(folder, args.out / "hang.sqlite", args.workers, args.page_timeout)
    print(f"a hanging page as {where}, beside a 16-page one, limit {args.page_timeout:g} s: exit {code} in "
          f"{seconds:.1f} s ({seconds / args.page_timeout:.2f} x the limit); {summary}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--page-timeout", type=float, default=10.0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", type=pathlib.Path, default=ROOT / "bench" / "out")
    args = parser.parse_args()
    folder = args.out / "fuzz"
    shutil.rmtree(folder, ignore_errors=True)
    started = time.monotonic()
    hostile.campaign(folder, args.files, seed=args.seed)
    print(f"wrote {args.files} hostile files and good.pdf to {folder} in {time.monotonic() - started:.1f} s")

    code, summary, err, seconds, peaks, cpu = ingest(folder, args.out / "fuzz.sqlite", args.workers, args.page_timeout)
    print(f"ingest: exit {code} in {seconds:.1f} s wall, {cpu:.1f} s CPU; {summary}")
    if "Traceback" in err:
        print(err[-3000:])
    with Manifest(args.out / "fuzz.sqlite") as manifest:
        docs = manifest.documents()
        pages = list(manifest.pages())
    statuses = collections.Counter(doc["status"] for doc in docs)
    print(f"documents: {len(docs)} ({', '.join(f'{n} {s}' for s, n in statuses.most_common())})")
    failed = collections.Counter(reason(p["error"]) for p in pages if p["status"] == "failed")
    print(f"pages: {len(pages)} ({sum(p['status'] == 'ok' for p in pages)} scored, {sum(failed.values())} failed)")
    for text, count in failed.most_common(12):
        print(f"  {count:5d}  {text}")
    good = [p for p in pages if p["doc"].endswith("/good.pdf")]
    print(f"good.pdf: {sum(p['status'] == 'ok' for p in good)} of {len(good)} pages scored")
    roles = collections.defaultdict(list)
    for role, peak in peaks.values():
        roles[role].append(peak)
    print("peak RSS per process:")
    for role, values in sorted(roles.items()):
        print(f"  {role:17s} {len(values):3d} process(es), max {max(values) / 1e6:7.1f} MB, "
              f"median {sorted(values)[len(values) // 2] / 1e6:7.1f} MB")

    for inside in (False, True):
        hang_alone_or_inside(args, inside)
    return 0


if __name__ == "__main__":
    sys.exit(main())
