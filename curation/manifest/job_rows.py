"""The manifest's jobs table: which job holds the manifest, its progress and its stop request.

A job holds the manifest while its process lives and writes a heartbeat; a job whose process died is
marked interrupted when next looked at, so a killed run never blocks the next one. A job whose process lives
on but has been silent past HUNG_SECONDS is ended with it: its process is killed (its workers die with it, see
guards/lifeline.py), so no process is left working for a job the manifest no longer knows as running.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import sqlite3

import psutil

from . import history
from .history import now

HEARTBEAT_STALE_SECONDS = 30.0
HUNG_SECONDS = 600.0  # a job's own live process silent this long is taken as hung: the manifest is freed


class JobRows:
    """The jobs of a Manifest (mixed into it: uses its `conn` and `recording`)."""

    def running_job(self, kind: str | None = None) -> sqlite3.Row | None:
        """The job that is really running: a job whose process died is marked interrupted."""
        rows = self.conn.execute(
            "SELECT * FROM jobs WHERE status = 'running' AND (? IS NULL OR kind = ?) ORDER BY id DESC", (kind, kind)
        ).fetchall()
        for row in rows:
            if _job_alive(row):
                return row
            message = ("the job stopped answering and its process was ended" if _end_hung_process(row)
                       else "the job's process ended without finishing")
            self.conn.execute(
                "UPDATE jobs SET status = 'interrupted', finished_at = ?, message = ? WHERE id = ? AND status = 'running'",
                (now(), f"{message}; run it again to resume", row["id"]),
            )
        return None

    def latest_job(self, kind: str | None = None) -> sqlite3.Row | None:
        self.running_job(kind)
        return self.conn.execute(
            "SELECT * FROM jobs WHERE (? IS NULL OR kind = ?) ORDER BY id DESC LIMIT 1", (kind, kind)
        ).fetchone()

    def start_job(self, kind: str, args: dict | None = None) -> int:
        """Claim the manifest for a job, recorded in the history as started by self.user; raises JobRunning
        if another live job holds it."""
        args = args or {}
        with self.recording(kind, history.paths_note(args.get("paths", [])) or args.get("out")):
            running = self.running_job(kind)
            if running is not None:
                raise JobRunning(running)
            stamp = now()
            cursor = self.conn.execute(
                "INSERT INTO jobs (kind, status, pid, args, started_at, heartbeat_at) VALUES (?, 'running', ?, ?, ?, ?)",
                (kind, os.getpid(), json.dumps(args or {}), stamp, stamp),
            )
            return cursor.lastrowid

    def update_job(self, job_id: int, **fields) -> None:
        fields["heartbeat_at"] = now()
        assignments = ", ".join(f"{name} = :{name}" for name in fields)
        self.conn.execute(f"UPDATE jobs SET {assignments} WHERE id = :id", {**fields, "id": job_id})

    def finish_job(self, job_id: int, status: str, message: str | None = None) -> None:
        self.update_job(job_id, status=status, message=message, finished_at=now())

    def request_stop(self, job_id: int) -> None:
        self.conn.execute("UPDATE jobs SET stop_requested = 1 WHERE id = ?", (job_id,))

    def stop_requested(self, job_id: int) -> bool:
        row = self.conn.execute("SELECT stop_requested FROM jobs WHERE id = ?", (job_id,)).fetchone()
        return bool(row and row[0])


class JobRunning(Exception):
    def __init__(self, job: sqlite3.Row):
        self.job = job
        super().__init__(f"a {job['kind']} job is already running on this manifest (pid {job['pid']}, since {job['started_at']})")


def _job_alive(row: sqlite3.Row) -> bool:
    if not pid_alive(row["pid"]):
        return False
    silent = (dt.datetime.now(dt.timezone.utc) - dt.datetime.fromisoformat(row["heartbeat_at"])).total_seconds()
    if silent < HEARTBEAT_STALE_SECONDS:
        return True
    # A busy machine can hold a live job's heartbeat back (its workers starting, one slow page): the job
    # holds the manifest while its own process lives; a process that took over its pid since does not.
    return silent < HUNG_SECONDS and _process_started_by(row["pid"], dt.datetime.fromisoformat(row["started_at"]))


def _end_hung_process(row: sqlite3.Row) -> bool:
    """Kill a job's own process, silent past HUNG_SECONDS (SIGKILL: a hung process may not answer SIGTERM). Only a
    job process (`python -m curation ...`) that was running when the job started is killed; whether it was."""
    if not pid_alive(row["pid"]) or not _process_started_by(row["pid"], dt.datetime.fromisoformat(row["started_at"])):
        return False
    try:
        process = psutil.Process(row["pid"])
        if process.cmdline()[1:3] != ["-m", "curation"]:
            return False
        process.kill()
    except psutil.Error:
        return False
    return True


def _process_started_by(pid: int, when: dt.datetime) -> bool:
    try:
        created = psutil.Process(pid).create_time()
    except psutil.Error:
        return False
    return created <= when.timestamp() + 1  # started_at is kept to the second


def pid_alive(pid: int | None) -> bool:
    """Whether a process runs as `pid` (a zombie, ended but not yet reaped, does not)."""
    if not pid:
        return False
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
    except psutil.Error:  # another user's process: it exists
        return True
