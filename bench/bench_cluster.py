"""Cluster benchmark: the same ingest through Dask (1 and 2 workers) against the local process pool.

Dask runs as it does past one machine: `dask scheduler` and `dask worker` are separate processes, so
the coordinator's CPU (this process: planning, the Scheduler's loop, the Dask client, manifest writes)
is measured alone. For each run: pages/s, coordinator CPU ms per page, and the manifest's bytes per
page (thumbnails apart). Then the overhead per task: no-op tasks through the same Scheduler, wall
and coordinator CPU per task. Ends with the scale model docs/cluster.md quotes.

    python bench/bench_cluster.py [--docs 8] [--pages 12] [--tasks 2000] [--out bench/out/cluster]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import pathlib
import shutil
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench_ingest import make_corpus  # noqa: E402
from curation import Manifest  # noqa: E402
from curation.runs.cluster import Cluster  # noqa: E402
from curation.runs.ingest import Ingest  # noqa: E402
from curation.runs.scheduler import Scheduler  # noqa: E402
from curation.runs.worker_pool import process_pool  # noqa: E402

PAGES_A_DAY = 16_000_000


@contextlib.contextmanager
def dask_processes(workers: int, folder: pathlib.Path):
    """`dask scheduler` and `dask worker --nthreads 1 --nworkers N`, as on real machines; yields the address."""
    scheduler_file = folder / "scheduler.json"
    scheduler_file.unlink(missing_ok=True)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    quiet = dict(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    # On loopback: a plain tcp:// scheduler on another address is refused (docs/cluster.md).
    scheduler = subprocess.Popen(["dask", "scheduler", "--host", "127.0.0.1", "--port", "0",
                                  "--dashboard-address", "127.0.0.1:0", "--scheduler-file", str(scheduler_file)], **quiet)
    worker = None
    try:
        while not scheduler_file.exists():
            time.sleep(0.1)
        time.sleep(0.2)
        address = json.loads(scheduler_file.read_text())["address"]
        worker = subprocess.Popen(["dask", "worker", address, "--nthreads", "1", "--nworkers", str(workers),
                                   "--host", "127.0.0.1", "--no-dashboard"], **quiet)
        yield address
    finally:
        for process in (worker, scheduler):
            if process is not None:
                process.terminate()
                process.wait()


def cpu() -> float:
    return time.process_time()  # this process only: pool workers are children, Dask's are elsewhere


def ingest_run(corpus_folder: pathlib.Path, db: pathlib.Path, **options) -> dict:
    db.unlink(missing_ok=True)
    with Manifest(db) as manifest:
        start, cpu_start = time.perf_counter(), cpu()
        report = Ingest(manifest, [corpus_folder], **options).run()
        wall, used = time.perf_counter() - start, cpu() - cpu_start
        thumbs = manifest.conn.execute("SELECT COALESCE(SUM(LENGTH(jpeg)), 0) FROM thumbnails").fetchone()[0]
    size = sum(p.stat().st_size for p in db.parent.glob(db.name + "*"))
    pages = report.pages_scored + report.pages_failed
    return {"pages": pages, "pages_per_s": pages / wall, "coordinator_ms_per_page": 1000 * used / pages,
            "bytes_per_page": size / pages, "thumbnail_bytes_per_page": thumbs / pages}


def overhead(make_executor, workers: int, tasks: int, kill=None) -> tuple[float, float]:
    """Wall ms and coordinator CPU ms per no-op task through the Scheduler."""
    options = {"kill": kill} if kill else {}
    scheduler = Scheduler(make_executor, workers, task_fn=abs, **options)
    start, cpu_start = time.perf_counter(), cpu()
    assert sum(1 for _ in scheduler.results(range(tasks))) == tasks
    return 1000 * (time.perf_counter() - start) / tasks, 1000 * (cpu() - cpu_start) / tasks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=8)
    parser.add_argument("--pages", type=int, default=12)
    parser.add_argument("--tasks", type=int, default=2000, help="no-op tasks for the overhead per task")
    parser.add_argument("--out", type=pathlib.Path, default=ROOT / "bench" / "out" / "cluster")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    corpus = args.out / "corpus"
    make_corpus(corpus, args.docs, args.pages)
    print(f"corpus: {args.docs} documents x {args.pages} pages, {os.cpu_count()} cores here")

    rows = {}
    for workers in (1, 2):
        rows[f"pool, {workers} worker(s)"] = ingest_run(corpus, args.out / "pool.sqlite", workers=workers)
        with dask_processes(workers, args.out) as address, Cluster(address) as cluster:
            cluster.client.wait_for_workers(workers, timeout=60)
            rows[f"dask, {workers} worker(s)"] = ingest_run(corpus, args.out / "dask.sqlite", cluster=cluster)
            if workers == 2:
                task_wall, task_cpu = overhead(cluster.make_executor, 2, args.tasks, cluster.kill)
    pool_wall, pool_cpu = overhead(process_pool, 2, args.tasks)

    print(f"\n{'run':<22}{'pages/s':>9}{'vs pool':>9}{'coord ms/page':>15}{'bytes/page':>12}{'thumbs':>9}")
    for name, row in rows.items():
        reference = rows[name.replace("dask", "pool")]["pages_per_s"]
        print(f"{name:<22}{row['pages_per_s']:>9.1f}{row['pages_per_s'] / reference:>9.2f}"
              f"{row['coordinator_ms_per_page']:>15.2f}{row['bytes_per_page']:>12.0f}{row['thumbnail_bytes_per_page']:>9.0f}")
    print(f"\noverhead per no-op task, 2 workers: dask {task_wall:.2f} ms wall, {task_cpu:.2f} ms coordinator CPU; "
          f"pool {pool_wall:.2f} ms wall, {pool_cpu:.2f} ms CPU")

    dask2 = rows["dask, 2 worker(s)"]
    per_core = dask2["pages_per_s"] / 2
    needed = PAGES_A_DAY / 86_400
    coordinator_ceiling = 1000 / dask2["coordinator_ms_per_page"]
    print(f"\nscale model: {per_core:.1f} pages/s per worker core; {needed:.0f} pages/s for {PAGES_A_DAY / 1e6:.0f} M "
          f"pages a day -> {needed / per_core:.0f} worker cores; one coordinator core keeps up with "
          f"{coordinator_ceiling:.0f} pages/s ({coordinator_ceiling / per_core:.0f} worker cores); "
          f"manifest {PAGES_A_DAY * dask2['bytes_per_page'] / 1e9:.1f} GB for {PAGES_A_DAY / 1e6:.0f} M pages, "
          f"{PAGES_A_DAY * dask2['thumbnail_bytes_per_page'] / 1e9:.1f} GB of it thumbnails")
    with contextlib.suppress(OSError):
        shutil.rmtree(args.out / "dask-worker-space")


if __name__ == "__main__":
    main()
