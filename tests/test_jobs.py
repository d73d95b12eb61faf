"""Job processes: launched detached with a log beside the manifest, reaped when they end; the sample archive
is such a job, started through the CLI's `sample` command."""

import os
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
    assert "sample: 2 pages scored" in process.log_path.read_text()
