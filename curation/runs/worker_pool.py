"""The local process pool that runs ingest's (and the other jobs') tasks: how its workers start, how much
memory each may take, how many there are by default, and how a pool is torn down with its tasks running."""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import functools
import multiprocessing
import multiprocessing.connection
import os
import resource
import signal
import time
from collections.abc import Callable

import cv2
import psutil
import pymupdf

from guards.lifeline import die_with_parent

TASKS_PER_CHILD = 500  # a worker is replaced now and then so nothing it leaks can pile up
MIN_WORKER_ROOM = 256 << 20  # bytes a worker may always allocate, whatever its memory limit
# The forkserver dies with the job that started it, its workers with it (see guards/lifeline.py); then the job's modules.
FORKSERVER_PRELOAD = ["guards.lifeline_forkserver", "curation.runs.ingest"]


def _init_worker(memory_limit: int | None = None) -> None:
    # A worker never outlives its job: not even a job killed with SIGKILL.
    die_with_parent()
    # Ctrl-C is the coordinator's to handle; workers are shut down by it.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # MuPDF's messages would garble the progress bar; the reasons are recorded per document instead.
    pymupdf.TOOLS.mupdf_display_errors(False)
    pymupdf.TOOLS.mupdf_display_warnings(False)
    # One process per core already: OpenCV's own threads would only compete (and each reserves memory).
    cv2.setNumThreads(1)
    if memory_limit:
        # Past its share an allocation fails in the worker (MuPDF and NumPy raise, the page fails with a
        # message); the kernel's OOM killer never has to choose, so the coordinator is never its victim.
        # The limit is on address space, which starts well above what is used (libraries, thread
        # arenas: more on many-core machines), so a worker always keeps some room to work.
        limit = max(memory_limit, psutil.Process().memory_info().vms + MIN_WORKER_ROOM)
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def process_pool(workers: int, memory_limit: int | None = None) -> cf.Executor:
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(FORKSERVER_PRELOAD)
    return cf.ProcessPoolExecutor(
        max_workers=workers, mp_context=context, initializer=_init_worker, initargs=(memory_limit,),
        max_tasks_per_child=TASKS_PER_CHILD,
    )


def network_process() -> cf.ProcessPoolExecutor:
    """One process for the network a job runs beside its own work (the picture job's embedding): torch and the
    network's memory come and go with it, and it is never replaced between tasks (loading takes seconds)."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(FORKSERVER_PRELOAD)
    return cf.ProcessPoolExecutor(max_workers=1, mp_context=context, initializer=_init_worker)


def bounded_pool(make_executor: Callable[[int], cf.Executor], workers: int,
                 memory_limit: int | None = None) -> Callable[[int], cf.Executor]:
    """The default process pool with each worker's memory capped (a fair share unless given); any
    other executor as it is."""
    if make_executor is not process_pool:
        return make_executor
    return functools.partial(process_pool, memory_limit=memory_limit or default_worker_memory(workers))


def kill_executor(executor: cf.Executor) -> None:
    """Tear an executor down now, tasks still running included (a page stuck in MuPDF never returns).

    A process pool's workers are killed (Python 3.14 has `kill_workers`; before it the pool's own
    process table is the only handle); any other executor is asked to cancel what it can.
    """
    processes = list((getattr(executor, "_processes", None) or {}).values())
    kill = getattr(executor, "kill_workers", None)
    if kill is not None:
        kill()
    else:
        for process in processes:
            with contextlib.suppress(Exception):
                process.kill()
    if isinstance(executor, cf.ProcessPoolExecutor):
        _end_result_pipe(executor, processes)
    executor.shutdown(wait=isinstance(executor, cf.ProcessPoolExecutor), cancel_futures=True)


def _end_result_pipe(executor: cf.ProcessPoolExecutor, processes: list) -> None:
    """A worker killed while sending its result leaves half a message in the pool's result pipe, and the pool's
    manager thread would wait for the rest forever (and `shutdown` with it). Once the workers are dead the
    parent's copy is the pipe's last write end: closing it gives that reader EOF, and the pool breaks and ends."""
    sentinels = [process.sentinel for process in processes]
    deadline = time.monotonic() + 5
    while sentinels and time.monotonic() < deadline:  # a sentinel is ready once its process has exited
        ended = multiprocessing.connection.wait(sentinels, deadline - time.monotonic())
        sentinels = [sentinel for sentinel in sentinels if sentinel not in ended]
    if sentinels:
        return
    writer = getattr(getattr(executor, "_result_queue", None), "_writer", None)
    with contextlib.suppress(Exception):
        writer.close()


def default_workers() -> int:
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1))


def default_worker_memory(workers: int) -> int:
    """A fair share of the machine's memory per worker, one share left to the coordinator and the rest."""
    return psutil.virtual_memory().total // (workers + 1)
