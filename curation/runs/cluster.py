"""Ingest past one machine: the same tasks and the same `Scheduler`, on a Dask cluster.

A `Cluster` is an executor choice, not a second ingest: it gives the `Scheduler` a
`concurrent.futures` executor over `distributed.Client.submit` and a way to tear it down, and maps
Dask's failures onto the ones the Scheduler already handles. A task that keeps killing workers
(`KilledWorker`) is a crash (`cf.BrokenExecutor`): retried alone, then split to single pages. A
worker that dies once (a machine lost) is Dask's to handle: it runs the task elsewhere. A scheduler
that goes away is `ClusterLost`, which ends the run; every finished task is already in the manifest.

Workers open the files themselves; only paths travel, so the archive must be on storage every
worker mounts. `check_paths` says so before any work starts.

Which addresses may be used, and with which TLS files, is `cluster_config`'s: it is checked before any
connection. A local cluster listens on 127.0.0.1 only, dashboard included, and speaks TLS with a
certificate made for it, so another user of this machine cannot hand its workers code either.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import logging
import os
import threading
import time

import dask
import distributed
from distributed.core import Status
from distributed.diagnostics.plugin import WorkerPlugin

from ..sources.reader import exists
from .cluster_config import DASHBOARD_PORT, LOOPBACK, ClusterError, check_address, local_workers, security
from .scheduler import ExecutorLost

# Locally a task may kill one worker and be run again; the second death makes it a crash.
LOCAL_ALLOWED_FAILURES = 1
CONNECT_TIMEOUT = 10  # seconds for the scheduler to answer, handshake included
SETUP_TIMEOUT = 120  # seconds for every worker to import the scorer (a busy machine takes its time)
REJOIN_TIMEOUT = 60  # seconds to wait for ended workers to be back before going on without them
LOCAL_RESTART_TIMEOUT = 20  # a local worker's nanny restarts it in a second or two; past this it gave up


GAVE_UP = (Status.closing, Status.closed, Status.failed)  # a nanny in these states restarts nothing


class ClusterLost(ClusterError, ExecutorLost):
    """The scheduler went away during the run; what finished is saved, the rest is for a later run."""


class WorkerCrashed(cf.BrokenExecutor):
    """A task killed the workers it ran on (Dask's `KilledWorker`): the Scheduler's crash."""


class SetUpWorker(WorkerPlugin):
    """What the local pool's initializer does, in every Dask worker, restarted ones included."""

    name = "curation-setup"

    def setup(self, worker):
        import cv2
        import pymupdf

        from . import ingest  # noqa: F401  the scorer's imports, before a page's time limit starts (as forkserver preload)

        pymupdf.TOOLS.mupdf_display_errors(False)
        pymupdf.TOOLS.mupdf_display_warnings(False)
        cv2.setNumThreads(1)


class DaskExecutor(cf.Executor):
    """`submit` over a Dask client; its futures fail the way the Scheduler understands."""

    def __init__(self, client: distributed.Client, address: str):
        self.client = client
        self.address = address
        # Worker threads now: with a page time limit no more tasks are sent than this, or one would queue
        # in Dask with its clock running (after a teardown, while a worker is slow to come back).
        self.slots = max(1, sum(client.nthreads().values()))
        self._futures: dict[distributed.Future, cf.Future] = {}
        self._lock = threading.Lock()
        self._killed = False

    def submit(self, fn, /, *args, **kwargs) -> cf.Future:
        if self.client.status not in ("running", "connecting"):
            raise ClusterLost(lost_message(self.address))
        # pure=False: a task sent again (retried alone) must run again, not be answered from Dask's memory.
        future = self.client.submit(fn, *args, pure=False, **kwargs)
        outcome = cf.Future()
        outcome.set_running_or_notify_cancel()
        with self._lock:
            self._futures[future] = outcome
        future.add_done_callback(self._settle)
        return outcome

    def _settle(self, future: distributed.Future) -> None:
        with self._lock:
            outcome = self._futures.pop(future, None)
        if outcome is None or outcome.done():
            return
        try:
            if future.status == "cancelled":  # by `kill`, or by the client when the scheduler went away
                outcome.set_exception(cf.CancelledError() if self._killed else ClusterLost(lost_message(self.address)))
                return
            error = future.exception()
            if error is None:
                outcome.set_result(future.result())
            elif isinstance(error, distributed.KilledWorker):
                outcome.set_exception(WorkerCrashed(str(error)))
            else:
                outcome.set_exception(error)
        except Exception as exc:  # the result could not be fetched: the connection went with it
            if not outcome.done():
                outcome.set_exception(ClusterLost(f"{lost_message(self.address)} ({type(exc).__name__})"))

    def kill(self) -> None:
        """Cancel what is in flight and end the worker processes running it, as the local pool does: a
        page stuck in MuPDF never returns, only a new process frees its worker (the nanny starts one)."""
        self._killed = True
        with self._lock:
            futures = list(self._futures)
        keys = {future.key for future in futures}
        with contextlib.suppress(Exception):
            busy = [worker for worker, running in self.client.processing().items() if keys & set(running)]
            self.client.cancel(futures, force=True)
            if busy:
                self.client.run(_end_worker, workers=busy, wait=False)
                # Until the scheduler has seen them go, it would still hand them tasks.
                deadline = time.monotonic() + REJOIN_TIMEOUT
                while set(busy) & set(self.client.nthreads()) and time.monotonic() < deadline:
                    time.sleep(0.05)
        with self._lock:
            outcomes = list(self._futures.values())
            self._futures.clear()
        for outcome in outcomes:
            if not outcome.done():
                outcome.set_exception(cf.CancelledError())

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        if cancel_futures:
            self.kill()


async def _end_worker() -> None:
    # A coroutine: Dask runs it on the worker's event loop without waiting, while its thread is stuck.
    os._exit(1)


def lost_message(address: str) -> str:
    return (f"lost the Dask scheduler at {address}; the pages finished so far are saved: "
            "run the same command again (with a working cluster, or without --cluster) to resume")


class Cluster:
    """A connection to a Dask scheduler (`tls://HOST:8786`; plain `tcp://` on loopback only), or a
    `LocalCluster` (`local[:N]`) on 127.0.0.1.

    Use as a context manager; a local cluster is closed with it.
    """

    def __init__(self, address: str, *, dashboard_port: int = DASHBOARD_PORT):
        check_address(address)  # before any connection: a refused address is never dialled
        self.address = address
        self.local: distributed.LocalCluster | None = None
        self._worker_count = 0  # workers when the run was planned
        workers = local_workers(address)
        try:
            if workers is not None:
                with dask.config.set({"distributed.scheduler.allowed-failures": LOCAL_ALLOWED_FAILURES}):
                    self.local = distributed.LocalCluster(
                        n_workers=workers, threads_per_worker=1, processes=True, host=LOOPBACK,
                        dashboard_address=f"{LOOPBACK}:{dashboard_port}", security=True,  # TLS, certificates made here
                        silence_logs=logging.ERROR)
                self.client = distributed.Client(self.local)
            else:
                self.client = connect(address)
        except (OSError, TimeoutError) as exc:  # the local cluster could not start
            self.close()
            raise ClusterError(f"cannot start the Dask cluster {address}: {exc}") from None
        try:
            within(SETUP_TIMEOUT, lambda: self.client.register_plugin(SetUpWorker()))
        except TimeoutError:
            self.close()
            raise ClusterError(f"the Dask workers of {address} did not finish setting up within {SETUP_TIMEOUT} s; "
                               "the scheduler's log says which one is stuck") from None
        except Exception as exc:  # raised in a worker and sent back as text
            self.close()
            raise ClusterError(f"the Dask workers of {address} cannot load this project ({exc}): the scheduler and "
                               "each worker run with a checkout of it on PYTHONPATH, its requirements installed") from None

    def __enter__(self) -> Cluster:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        for part in (getattr(self, "client", None), self.local):
            if part is not None:
                with contextlib.suppress(Exception):
                    part.close()

    # -- what the Scheduler needs -----------------------------------------------------------------

    def workers(self) -> int:
        """Worker threads in the cluster now: the Scheduler keeps twice as many tasks in flight."""
        nthreads = self.client.nthreads()
        threads, self._worker_count = sum(nthreads.values()), len(nthreads)
        if not threads:
            raise ClusterError(f"the Dask scheduler at {self.address} has no workers; start some with "
                               f"`dask worker {self.address} --nthreads 1`")
        return threads

    def make_executor(self, workers: int) -> DaskExecutor:
        # After a teardown the ended workers take seconds to come back; tasks sent before would queue behind
        # the live ones and their time limit would run while they wait.
        self.rejoin()
        return DaskExecutor(self.client, self.address)

    def rejoin(self) -> None:
        """Wait for the workers a teardown ended to be back.

        A local cluster replaces a worker whose nanny could not restart it; a remote cluster that shrank
        for good goes on with the workers it has (its deployment restarts workers, not this process).
        """
        wanted = len(self.local.worker_spec) if self.local else (self._worker_count or 1)
        if self.local is not None and any(nanny.status in GAVE_UP for nanny in self.local.workers.values()):
            self._replace_lost_local_workers(wanted)
        with contextlib.suppress(TimeoutError):
            self.client.wait_for_workers(wanted, timeout=LOCAL_RESTART_TIMEOUT if self.local else REJOIN_TIMEOUT)
            return
        if self.local is None:
            return
        self._replace_lost_local_workers(wanted)
        with contextlib.suppress(TimeoutError):
            self.client.wait_for_workers(wanted, timeout=REJOIN_TIMEOUT)

    def _replace_lost_local_workers(self, wanted: int) -> None:
        # Scaling down to the live workers drops the specs of the lost ones (those the scheduler does not
        # know); once the cluster has closed them, scaling up starts new ones.
        self.local.scale(len(self.client.nthreads()))
        deadline = time.monotonic() + REJOIN_TIMEOUT
        while set(self.local.workers) != set(self.local.worker_spec) and time.monotonic() < deadline:
            time.sleep(0.05)
        self.local.scale(wanted)

    @staticmethod
    def kill(executor: DaskExecutor) -> None:
        executor.kill()

    def check_paths(self, paths) -> None:
        """Raise ClusterError, before any work, when a worker cannot see the first path."""
        if not paths:
            return
        path = str(paths[0])
        seen = self.client.run(exists, path)
        blind = sorted(worker for worker, exists in seen.items() if not exists)
        if blind:
            raise ClusterError(f"{len(blind)} of {len(seen)} Dask workers cannot see {path} ({', '.join(blind[:3])}): "
                               "the archive must be on storage every worker mounts at the same path, or given as a URL (s3://, gs://, https://)")

    # -- what the job reports, in its log and the Ingest page's job panel -------------------------

    @property
    def dashboard_link(self) -> str | None:
        with contextlib.suppress(Exception):
            return self.client.dashboard_link
        return None

    def describe(self) -> str:
        """What the job runs on, for its log and the Ingest page's job panel."""
        return (f"Dask cluster {self.address}: {len(self.client.nthreads())} workers, {self.workers()} threads; "
                f"dashboard {self.dashboard_link or 'off'}")


def connect(address: str, timeout: float = CONNECT_TIMEOUT) -> distributed.Client:
    """A client of the scheduler at a checked `address`, or ClusterError within about `timeout` seconds.

    Dask bounds the TCP connection but not the handshake that follows: a port that accepts and then
    says nothing would hold the job for good.
    """
    try:
        return within(timeout, lambda: distributed.Client(address, timeout=f"{timeout}s", security=security(address)))
    except TimeoutError:
        raise ClusterError(f"the Dask scheduler at {address} did not answer within {timeout:g} s: "
                           "is a Dask scheduler listening there, with the protocol the address names?") from None
    except Exception as exc:  # unreachable, TLS refused, not a scheduler
        raise ClusterError(f"cannot reach the Dask scheduler at {address}: {exc or type(exc).__name__}") from None


def within(seconds: float, call):
    """`call()`'s result, or TimeoutError after about `seconds`: it runs in a thread that is left behind
    if it has not returned by then (a Dask call waiting on a peer that never answers cannot be cancelled)."""
    outcome: dict = {}

    def attempt():
        try:
            outcome["result"] = call()
        except BaseException as exc:  # handed to the caller
            outcome["error"] = exc

    thread = threading.Thread(target=attempt, daemon=True)
    thread.start()
    thread.join(seconds + 2)
    if thread.is_alive():
        raise TimeoutError(f"no answer in {seconds:g} s")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["result"]
