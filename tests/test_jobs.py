"""Job processes: launched detached with a log beside the manifest, reaped when they end; the sample archive
is such a job, started through the CLI's `sample` command."""

import datetime as dt
import os
import subprocess
import sys
import time

from apptest_support import wait_for
from curation import Manifest
from curation.runs import jobs
from curation.runs import sample


def test_a_finished_job_is_reaped_and_its_log_kept(tmp_path):
    db = tmp_path / "data" / "manifest.sqlite"
    process = jobs.launch(db, "settings", "--threshold", "40")  # refuses --quiet: ends at once, exit code 2
    assert process.log_path.parent == db.parent / "logs" and process.log_path.name.startswith("settings-")
    # Nobody calls wait() or poll() here: the launcher's thread reaps it, so no zombie is left behind.
    wait_for(lambda: process.returncode is not None, timeout=30, interval=0.05)
    assert process.returncode == 2
    try:
        reaped = os.waitpid(process.pid, os.WNOHANG) == (0, 0)  # a zombie would still be ours to wait for
    except ChildProcessError:
        reaped = True
    assert reaped
    assert "--quiet" in process.log_path.read_text()  # click's complaint, in the log


def test_the_sample_archive_is_a_cli_job(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(jobs, "launch", lambda db, command, *args: calls.append((db, command, args)))
    sample.launch("some/manifest.sqlite", "--pages", "2")
    assert calls == [("some/manifest.sqlite", "sample", ("--pages", "2"))]


def test_the_sample_command_writes_and_ingests(tmp_path):
    db = tmp_path / "data" / "manifest.sqlite"
    process = sample.launch(db, "--documents", "1", "--pages", "2", "--dpi", "30", "--workers", "1")
    started = time.monotonic()
    wait_for(lambda: process.returncode is not None, timeout=90, interval=0.1)
    assert process.returncode == 0, process.log_path.read_text()
    assert time.monotonic() - started < 90
    with Manifest(db) as manifest:
        assert manifest.summary()["scored"] == 2
        assert manifest.latest_job("sample")["status"] == "done"
        # A newcomer's first pictures are found as the default finds them: by the picture network.
        assert {row[0] for row in manifest.conn.execute("SELECT finder FROM pictures")} == {"network"}
    assert "sample: 2 pages scored" in process.log_path.read_text()


def _silent_job(manifest, pid: int, silent_for: float, started_ago: float) -> int:
    job = manifest.start_job("export", {"out": "x.zip"})
    at = lambda seconds: (dt.datetime.now(dt.timezone.utc) - dt.timedelta(seconds=seconds)).isoformat(timespec="seconds")
    manifest.conn.execute("UPDATE jobs SET pid = ?, heartbeat_at = ?, started_at = ? WHERE id = ?",
                          (pid, at(silent_for), at(started_ago), job))
    return job


def test_a_live_job_held_back_on_a_busy_machine_keeps_the_manifest(tmp_path):
    with Manifest(tmp_path / "m.sqlite") as manifest:
        job = _silent_job(manifest, os.getpid(), silent_for=90, started_ago=0)  # started by this process
        assert manifest.running_job("export")["id"] == job


def test_a_job_whose_process_is_gone_or_whose_pid_was_reused_is_interrupted(tmp_path):
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        with Manifest(tmp_path / "m.sqlite") as manifest:
            job = _silent_job(manifest, child.pid, silent_for=90, started_ago=600)  # the pid is newer than the job
            assert manifest.running_job("export") is None
            assert manifest.latest_job("export")["status"] == "interrupted"
            _silent_job(manifest, child.pid, silent_for=5, started_ago=600)  # heartbeat fresh: running
            assert manifest.running_job("export") is not None
    finally:
        child.kill()
        child.wait()
    with Manifest(tmp_path / "m.sqlite") as manifest:
        assert manifest.running_job("export") is None  # its process ended
