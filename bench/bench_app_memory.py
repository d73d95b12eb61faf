"""The app's own peak memory on a large manifest: the dashboard's interactions in a fresh process that does
not build the manifest, with the peak RSS (VmHWM) of that process and of every job it starts, each.

The manifest is bench_dashboard's (`--direct`, thumbnails none, 2.5 pictures a page), built once in a process
of its own and kept in `--out`; each run works on a fresh copy of it, since the bulk actions change it. The
measuring process runs every page with Streamlit's AppTest, as the server runs them: each page loaded,
Threshold's cutoffs, Review's filters and an override, Learn from my overrides (a job, waited for), Review's
bulk caption and bulk exclude of "Near the cutoff" (jobs, waited for), then the Pictures view with each of
its filters and a picture's decision. It prints its RSS after each stage (what stays) and its VmHWM so far
(what peaked), the script runs' times (wall, on whatever else the machine runs), and at the end the peak of
each process of the tree: the app's and each job's.

    python bench/bench_app_memory.py [--pages 4000000] [--out bench/out/rss] [--rebuild] [--target-mb 600]
"""

from __future__ import annotations

import argparse
import os
import pathlib
import shutil
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
BENCH = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(BENCH))

TARGET_MB = 600  # the target for the app's peak RSS at 4 M pages


def manifest_path(out: pathlib.Path, pages: int) -> pathlib.Path:
    return out / f"manifest-{pages}.sqlite"


def build(db: pathlib.Path, pages: int, per_page: float) -> None:
    """bench_dashboard's manifest: the pages in bulk, then the pictures (run in a process of its own). Built
    under another name and renamed when whole, so a build stopped part-way is never taken for one."""
    import bench_dashboard as dashboard
    from curation import Manifest

    building = db.with_name(f"building-{db.name}")
    dashboard.remove_manifest(building)
    dashboard.build_direct(building, max(1, pages // 333), pages)
    started = time.perf_counter()
    with Manifest(building) as manifest:
        count = dashboard.add_pictures(manifest, per_page)
        manifest.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    print(f"added {count:,} pictures in {time.perf_counter() - started:.1f} s", flush=True)
    dashboard.remove_manifest(db)
    os.replace(building, db)
    dashboard.remove_manifest(building)  # its emptied WAL and shared memory


def fresh_copy(db: pathlib.Path) -> pathlib.Path:
    """A copy of the built manifest to change (the bulk actions write half a million rows)."""
    import bench_dashboard as dashboard

    work = db.with_name(f"work-{db.name}")
    dashboard.remove_manifest(work)
    shutil.copyfile(db, work)
    return work


def status_kb(field: str) -> int:
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith(f"{field}:"))


def measure() -> None:
    """The interactions, in this process (started fresh on CURATION_DB): prints each stage's memory."""
    import bench_dashboard as dashboard

    class Measured(list):  # each interaction's memory, printed as it is measured
        def append(self, item):
            super().append(item)
            stage_done(f"{item[0]} ({item[1]:,.0f} ms)")

    results = Measured()

    def stage_done(label: str) -> None:
        print(f"  RSS {status_kb('VmRSS') / 1024:6,.0f} MB, peak so far {status_kb('VmHWM') / 1024:6,.0f} MB "
              f"after {label}", flush=True)

    stage_done("imports")
    try:
        dashboard.interactions(1, results, pictures=False)
        stage_done("every page, Learn (waited for), bulk caption and bulk exclude of 'near' (waited for)")
        dashboard.picture_interactions(1, results)
        stage_done("the Pictures view and its filters")
    finally:
        dashboard.report("Script run per interaction, AppTest, wall (median of 1, a loaded machine):", results)
    print(f"\npeak RSS of the app's process: {status_kb('VmHWM') / 1024:,.0f} MB", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=4_000_000)
    parser.add_argument("--pictures-per-page", type=float, default=2.5)
    parser.add_argument("--out", type=pathlib.Path, default=ROOT / "bench" / "out" / "rss")
    parser.add_argument("--rebuild", action="store_true", help="build the manifest again even if it is there")
    parser.add_argument("--target-mb", type=float, default=TARGET_MB)
    parser.add_argument("--build-only", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--measure-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure_only:  # the fresh process the parent watches
        measure()
        return
    args.out.mkdir(parents=True, exist_ok=True)
    db = manifest_path(args.out, args.pages)
    if args.build_only:
        build(db, args.pages, args.pictures_per_page)
        return
    if args.rebuild or not db.exists():
        subprocess.run([sys.executable, __file__, "--build-only", "--pages", str(args.pages), "--out", str(args.out),
                        "--pictures-per-page", str(args.pictures_per_page)], check=True)
    from process_tree import watch_processes

    work = fresh_copy(db)
    print(f"measuring on a copy of {db} ({work.stat().st_size / 1e6:,.0f} MB)", flush=True)
    process = subprocess.Popen([sys.executable, __file__, "--measure-only"], cwd=ROOT,
                               env={**os.environ, "CURATION_DB": str(work)})
    peaks, cpu = watch_processes(process)
    print(f"\nPeak RSS (VmHWM) of each process, {args.pages:,} pages (CPU of all: {cpu:,.0f} s):")
    app_peak = 0
    for pid, (role, peak) in sorted(peaks.items()):
        role = "the app (AppTest)" if role == "coordinator" else role
        app_peak = peak if role == "the app (AppTest)" else app_peak
        print(f"  {role:48s} {peak / 2**20:8,.0f} MB")
    ok = process.returncode == 0 and app_peak / 2**20 < args.target_mb
    print(f"\nthe app's peak: {app_peak / 2**20:,.0f} MB ({'under' if ok else 'NOT under'} {args.target_mb:,.0f} MB)")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
