"""No process left behind: a job's workers and helpers (forkserver, resource tracker, the picture job's network
process) end when the job's own process ends, however it ends (SIGKILL included), and a stopped job leaves none."""

import contextlib
import os
import signal
import subprocess
import sys
import time

import psutil
import pytest

from apptest_support import page, ran, wait_for
from conftest import ROOT
from curation import Manifest
from curation.runs import jobs
from guards import lifeline
from curation.sources import paths
from test_export_cli import record_scores, repeated_scan_pdf
from test_picture_job import GRID, needs_network, with_pictures

GONE_WITHIN = 5.0  # seconds after its job's process ends


def tree(process: subprocess.Popen, ready, timeout: float = 120.0) -> set[int]:
    """The pids under `process` once `ready(processes under it, its pid)` holds (the job's workers started)."""
    root = psutil.Process(process.pid)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert process.poll() is None, f"the job ended before its workers were seen: {process.log_path.read_text()}"
        under = root.children(recursive=True)
        if ready(under, process.pid):
            return {child.pid for child in under}
        time.sleep(0.05)
    pytest.fail("the job's workers never started")


def with_workers(count: int):
    """A pool's forkserver with `count` workers forked: processes under the job that are not its own children."""
    def ready(under, pid):
        with contextlib.suppress(psutil.Error):
            return sum(child.ppid() != pid for child in under) >= count
        return False
    return ready


def running(pids: set[int]) -> set[int]:
    alive = set()
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                alive.add(pid)
        except psutil.NoSuchProcess:
            pass
    return alive


def gone_within(pids: set[int], seconds: float = GONE_WITHIN) -> set[int]:
    """The pids still running after `seconds` (killed then, so that no test leaves them behind)."""
    deadline = time.monotonic() + seconds
    while running(pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = running(pids)
    for pid in left:
        with contextlib.suppress(psutil.Error):
            process = psutil.Process(pid)
            print(f"left behind: pid {pid}, parent {process.ppid()}: {' '.join(process.cmdline())[:120]}")
            process.kill()
    return left


def kill_and_check(process: subprocess.Popen, pids: set[int]) -> None:
    os.kill(process.pid, signal.SIGKILL)  # as the OOM killer, a crashed server or `kill -9` would
    process.wait()
    assert gone_within(pids) == set()


def ingest_archive(folder, documents: int = 2, pages: int = 150):
    folder.mkdir(parents=True, exist_ok=True)
    for n in range(documents):
        repeated_scan_pdf(folder / f"issue-{n}.pdf", pages)
    return folder


def test_a_killed_ingest_takes_its_forkserver_workers_and_resource_tracker_with_it(tmp_path):
    db = tmp_path / "manifest.sqlite"
    process = jobs.launch(db, "ingest", str(ingest_archive(tmp_path / "archive")), "--workers", "2")
    pids = tree(process, with_workers(2))
    assert len(pids) >= 4  # the forkserver, its two workers and the resource tracker
    kill_and_check(process, pids)
    with Manifest(db) as manifest:
        assert manifest.running_job() is None  # the sidebar shows no job running
        assert manifest.latest_job("ingest")["status"] == "interrupted"


def test_a_killed_export_takes_its_workers_with_it(tmp_path):
    pdf = repeated_scan_pdf(tmp_path / "long.pdf", 200)
    db = tmp_path / "manifest.sqlite"
    with Manifest(db) as manifest:
        record_scores(manifest, pdf, [90.0] * 200)
    process = jobs.launch(db, "export", "--out", str(tmp_path / "lora.zip"), "--size", "1024", "--workers", "2")
    kill_and_check(process, tree(process, with_workers(2)))


@needs_network
def test_a_killed_picture_job_takes_its_network_process_and_readers_with_it(tmp_path):
    pdf = repeated_scan_pdf(tmp_path / "plates.pdf", 30)
    db = tmp_path / "manifest.sqlite"
    with_pictures(db, pdf, {number: GRID for number in range(30)}).close()
    process = jobs.launch(db, "embed", "--batch", "1")
    kill_and_check(process, tree(process, with_workers(2)))  # the network's process and a reader at least


def test_a_stopped_ingest_leaves_no_process(tmp_path, monkeypatch):
    db = tmp_path / "data" / "manifest.sqlite"
    monkeypatch.setenv("CURATION_DB", str(db))
    monkeypatch.setenv(paths.ROOTS_ENV, str(tmp_path / "archive"))
    archive = ingest_archive(tmp_path / "archive", documents=2, pages=200)
    at = ran(page("pages/ingest.py"))
    at.text_input[0].input(str(archive))
    next(b for b in at.button if b.label == "Add").click()
    at = ran(at)
    next(b for b in at.button if b.label == "Start").click()
    at = ran(at)
    with Manifest(db) as manifest:
        job = manifest.running_job("ingest")
    top = psutil.Process(job["pid"])
    wait_for(lambda: with_workers(1)(top.children(recursive=True), top.pid), timeout=120, interval=0.05)
    pids = {child.pid for child in top.children(recursive=True)} | {top.pid}
    at = ran(page("pages/ingest.py"))
    next(b for b in at.button if b.label == "Stop").click()
    ran(at)
    wait_for(lambda: job["pid"] not in running({job["pid"]}), timeout=120)  # the task in hand, then it ends
    assert gone_within(pids) == set()
    with Manifest(db) as manifest:
        assert manifest.running_job() is None
        assert manifest.latest_job("ingest")["status"] == "stopped"


def hung_job(manifest: Manifest, pid: int) -> int:
    """A running export job of process `pid`, started now and silent since long ago."""
    job = manifest.start_job("export", {"out": "x.zip"})
    manifest.conn.execute("UPDATE jobs SET pid = ?, heartbeat_at = '2000-01-01T00:00:00+00:00' WHERE id = ?",
                          (pid, job))
    return job


def test_a_job_silent_past_the_hung_limit_is_ended_with_its_process(tmp_path):
    """The manifest frees a hung job's claim; its process (its workers die with it) is ended, not left working."""
    (tmp_path / "curation").mkdir()
    (tmp_path / "curation" / "__main__.py").write_text("import time\ntime.sleep(60)\n")
    hung = subprocess.Popen([sys.executable, "-m", "curation"], cwd=tmp_path)  # a job process that stopped answering
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])  # no job process: left alone
    try:
        time.sleep(1.0)  # both started before their jobs
        with Manifest(tmp_path / "m.sqlite") as manifest:
            hung_job(manifest, hung.pid)
            assert manifest.running_job("export") is None
            assert "stopped answering and its process was ended" in manifest.latest_job("export")["message"]
            assert gone_within({hung.pid}) == set()
            hung_job(manifest, other.pid)
            assert manifest.running_job("export") is None
            assert "ended without finishing" in manifest.latest_job("export")["message"]
            assert other.poll() is None
    finally:
        for process in (hung, other):
            process.kill()
            process.wait()


@pytest.mark.parametrize("watch", ["kernel", "pipe"])
def test_a_dead_parent_takes_a_child_that_asked_to_die_with_it(tmp_path, watch):
    """lifeline.die_with_parent, as a pool's worker calls it: the child of a killed process ends, told by the kernel
    (Linux) or by the pipe from its parent (elsewhere; forced here)."""
    code = ("import multiprocessing as mp, pathlib, sys, time\n"
            "from guards import lifeline\n"
            "def child(pipe_only):\n"
            "    if pipe_only:\n"
            "        lifeline._prctl = lambda option, value: False\n"
            "    lifeline.die_with_parent()\n"
            "    pathlib.Path('asked').touch()\n"
            "    time.sleep(60)\n"
            "if __name__ == '__main__':\n"
            "    p = mp.get_context('spawn').Process(target=child, args=(sys.argv[1] == 'pipe',))\n"
            "    p.start(); p.join()\n")
    (tmp_path / "parent.py").write_text(code)
    parent = subprocess.Popen([sys.executable, "parent.py", watch], cwd=tmp_path,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
    wait_for(lambda: (tmp_path / "asked").exists(), timeout=60, interval=0.05)
    pids = {child.pid for child in psutil.Process(parent.pid).children(recursive=True)}
    assert len(pids) == 2  # the child and multiprocessing's resource tracker
    kill_and_check(parent, pids)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="orphans come back to a subreaper on Linux only")
def test_the_suite_fails_on_a_process_it_leaves_behind_and_kills_it(tmp_path):
    """The session check of tests/conftest.py, in a session of its own: a test whose child leaves an orphan."""
    (tmp_path / "test_leak.py").write_text(
        "import subprocess, sys\n"
        "def test_leaves_an_orphan():\n"
        "    code = 'import subprocess; print(subprocess.Popen([\"sleep\", \"60\"]).pid)'\n"
        "    with open('orphan.pid', 'w') as out:\n"
        "        subprocess.run([sys.executable, '-c', code], stdout=out, check=True)\n")
    session = subprocess.run([sys.executable, "-m", "pytest", "-p", "conftest", "-n", "0", "-q",
                              "-p", "no:cacheprovider", "--rootdir", str(tmp_path), str(tmp_path / "test_leak.py")],
                             cwd=tmp_path, capture_output=True, text=True, timeout=240,
                             env={**os.environ, "PYTHONPATH": str(ROOT / "tests")})
    assert session.returncode != 0 and "1 passed, 1 error" in session.stdout, session.stdout
    orphan = int((tmp_path / "orphan.pid").read_text())
    assert f"processes left behind by the tests (killed): pid {orphan}: sleep 60" in session.stdout
    assert not psutil.pid_exists(orphan) or psutil.Process(orphan).status() == psutil.STATUS_ZOMBIE
