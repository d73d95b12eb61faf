"""Long jobs (ingest, export) run as their own process, outside any Streamlit script run.

The job process registers itself in the manifest's jobs table and writes its progress there; the app
only launches it and polls. A rerun, a reload or a closed tab therefore neither kills a job nor starts
a second one: the manifest refuses a second live job of the same kind.
"""

from __future__ import annotations

import contextlib
import contextvars
import errno
import os
import signal
import pathlib
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable

from ..manifest import history
from ..manifest.store import Manifest

ROOT = pathlib.Path(__file__).resolve().parents[2]  # the checkout: `python -m curation` runs from it
# Who the jobs launched from this context run for (the app sets the signed-in person for each page run);
# the job's history records them instead of the server's login name.
launched_by: contextvars.ContextVar[str | None] = contextvars.ContextVar("launched_by", default=None)
# (issuer, subject) of the signed-in person launched_by names, recorded beside the name by the job.
launched_account: contextvars.ContextVar[tuple[str, str] | None] = contextvars.ContextVar("launched_account",
                                                                                          default=None)


def launch(db: str | os.PathLike, command: str, *args: str, log_dir: str | os.PathLike | None = None) -> subprocess.Popen:
    """Start `python -m curation COMMAND ARGS --db DB` detached from the caller's session.

    Output goes to a log file beside the manifest (its path is `process.log_path`), so the job
    survives its launcher and a person can read what it printed. A daemon thread waits for the
    process, so a finished job leaves no zombie behind.
    """
    db = pathlib.Path(db)
    log_dir = pathlib.Path(log_dir) if log_dir else db.parent / "logs"
    log_dir.mkdir(parents=True, exist_ok=True)
    log_path = log_dir / f"{command}-{time.strftime('%Y%m%d-%H%M%S')}.log"
    env = dict(os.environ)
    if launched_by.get():
        env[history.USER_VARIABLE] = launched_by.get()
        for name in (history.ISSUER_VARIABLE, history.SUBJECT_VARIABLE):  # never the server's own
            env.pop(name, None)
        env.update(history.account_env(launched_account.get()))
    with open(log_path, "ab") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "curation", command, *args, "--db", str(db), "--quiet"],
            cwd=ROOT, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env,
            start_new_session=True,  # not in the launcher's process group: Ctrl-C there does not reach it
        )
    # Reap the process when it ends: a long-lived server that launched it would otherwise keep a zombie
    # per finished job. Its exit code is then in process.returncode.
    threading.Thread(target=process.wait, daemon=True).start()
    process.log_path = log_path
    return process


def wait_for_job(manifest: Manifest, kind: str, process: subprocess.Popen, timeout: float = 30.0):
    """The job row a freshly launched process registers, or None if the process ended first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = manifest.running_job(kind)
        if job is not None and job["pid"] == process.pid:
            return job
        if process.poll() is not None:
            return None
        time.sleep(0.05)
    return None


def stop(manifest: Manifest, job_id: int) -> None:
    """Ask a job to stop; it finishes the task in hand, records where it stopped and exits."""
    manifest.request_stop(job_id)


class Stopped(Exception):
    """The job was asked to stop (Ctrl-C, SIGTERM or a stop request in the manifest)."""


@contextlib.contextmanager
def stop_on_sigterm():
    """While a job runs, SIGTERM (a shutdown, a kill from outside) stops it like Ctrl-C: cleanly.

    Signal handlers belong to the main thread; a job run from another thread (tests, a page) keeps
    the default handling.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise_stopped)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _raise_stopped(signum, frame):
    raise Stopped()


NO_ROOM = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)
SQLITE_FULL = 13


class DiskFull(Exception):
    """A job ran out of disk space: which file, and about how much more room it needed."""

    def __init__(self, path: str | os.PathLike, needed: int | None = None):
        self.path, self.needed = str(path), needed
        room = f"; about {megabytes(needed)} more is needed to finish" if needed else ""
        super().__init__(f"the disk is full: {self.path} could not be written{room}. "
                         "Free some space and run the same command again to resume.")


def is_disk_full(exc: BaseException) -> bool:
    """An OS write error for want of room (full disk, quota, file size limit), or SQLite's SQLITE_FULL."""
    if isinstance(exc, OSError) and exc.errno in NO_ROOM:
        return True
    return isinstance(exc, sqlite3.Error) and (getattr(exc, "sqlite_errorcode", None) == SQLITE_FULL
                                               or "disk is full" in str(exc))


def claim_manifest(manifest: Manifest, kind: str, args: dict,
                   room_needed: Callable[[], int | None] = lambda: None) -> int:
    """`manifest.start_job(kind, args)`; a disk too full to record even that raises DiskFull (`room_needed()`: about
    how much more the job needs), as any later write does."""
    try:
        return manifest.start_job(kind, args)
    except sqlite3.Error as exc:
        if not is_disk_full(exc):
            raise
        raise DiskFull(manifest.path, room_needed()) from None


def megabytes(size: int) -> str:
    return f"{size / 1e6:,.1f} MB" if size >= 100_000 else f"{size / 1e3:,.0f} kB"


def plural(count: int, noun: str) -> str:
    """'1 document', '2 documents', '1,204 pages': a count as a job's summary says it."""
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


PROGRESS_INTERVAL = 0.5  # seconds between two writes of a job's progress: the app polls about as often


class JobProgress:
    """A job's progress in the manifest's jobs table: `done` of `total`, the rate and the time left.

    `beat()` writes it at most every PROGRESS_INTERVAL seconds (always when forced) and, with
    `checks_stop`, then reads the stop request and raises Stopped. The rate counts `worked()`, the
    work this run did (default: `done`), from `start()`; before it there is no rate. `finish()` writes
    the last progress and the job's outcome.
    """

    def __init__(self, manifest: Manifest, *, worked: Callable[[], int] | None = None, checks_stop: bool = True):
        self.manifest = manifest
        self.job_id: int | None = None
        self.done = 0
        self.total = 0
        self.started = 0.0
        self.worked = worked or (lambda: self.done)
        self.checks_stop = checks_stop
        self._last_beat = 0.0

    def start(self) -> None:
        self.started = time.monotonic()

    def beat(self, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._last_beat < PROGRESS_INTERVAL:
            return
        self._last_beat = now
        worked = self.worked()
        rate = worked / max(now - self.started, 1e-9) if worked and self.started else None
        eta = (self.total - self.done) / rate if rate else None
        self.manifest.update_job(self.job_id, done=self.done, total=self.total, rate=rate, eta=eta)
        if self.checks_stop and not force and self.manifest.stop_requested(self.job_id):
            raise Stopped()

    def finish(self, status: str, message: str, disk_full: Callable[[], DiskFull]) -> None:
        """The job's last progress and outcome in the manifest, on a full disk too.

        With the disk full even these lines may not fit. A job that failed or stopped then ends without
        them: the error it raises says why, and a job whose process has ended no longer holds the manifest.
        A job that finished raises `disk_full()`: its work is saved but the manifest cannot say so.
        """
        try:
            self.beat(force=True)
            self.manifest.finish_job(self.job_id, status, message)
        except sqlite3.Error as exc:
            if not is_disk_full(exc):
                raise
            if status == "done":
                raise disk_full() from None
