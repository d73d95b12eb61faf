"""A bulk action on a large view runs as a job: a chunk per transaction under one history action, so it is
undone in one step, stopped cleanly, and a kill mid-way leaves every written chunk recorded and nothing else;
the same bulk action again resumes it in the same action."""

import os
import signal
import subprocess
import sys
import time

import pytest

from apptest_support import filled_db
from curation import Manifest, views
from curation.manifest import history
from curation.manifest.store import JobRunning
from curation.views import bulk

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture
def db(tmp_path, monkeypatch):
    monkeypatch.setenv(history.USER_VARIABLE, "ana")
    return filled_db(tmp_path / "manifest.sqlite", documents=3, pages=40)


def overrides(manifest):
    return {(row["doc_id"], row["page"]): row["keep"] for row in manifest.overrides()}


def captions(manifest):
    return dict(((r[0], r[1]), r[2]) for r in manifest.conn.execute("SELECT doc_id, page, text FROM captions"))


def kept_pages(manifest):
    return {(r["doc_id"], r["page"]) for r in views.page_rows(manifest, None, views.PageFilter("kept"), limit=10_000)}


def test_a_bulk_job_writes_what_the_script_run_would_and_is_undone_in_one_step(db, tmp_path):
    exclude_kept = bulk.Bulk(view="pages", do="exclude", filter={"decision": "kept"})
    with Manifest(db, user="ana") as manifest:
        manifest.set_override(1, 0, True)
        before, kept = overrides(manifest), kept_pages(manifest)
        assert len(kept) > 10 and bulk.is_job(len(kept), minimum=10) and not bulk.is_job(len(kept), minimum=1000)
        written = bulk.run_job(manifest, exclude_kept, chunk=7)  # many chunks
        job = manifest.latest_job(bulk.JOB)
        assert written == len(kept) and job["status"] == "done" and job["done"] == job["total"] == len(kept)
        assert overrides(manifest) == {**before, **{key: 0 for key in kept}}
        expected = overrides(manifest)
        jobs_action = history.last_undoable(manifest.conn, "ana")
        assert jobs_action["description"] == f"excluded {len(kept):,} pages (view: Kept)"
        undo, left = manifest.undo()
        assert undo["undoes"] == jobs_action["id"] and left == 0
        assert overrides(manifest) == before
    # The same action in one script run writes the same overrides.
    other = filled_db(tmp_path / "other.sqlite", documents=3, pages=40)
    with Manifest(other, user="ana") as manifest:
        manifest.set_override(1, 0, True)
        assert bulk.run(manifest, exclude_kept) == len(kept)
        assert overrides(manifest) == expected


def test_a_bulk_caption_job_keeps_written_captions_unless_asked(db):
    with Manifest(db, user="ana") as manifest:
        manifest.set_caption(1, 3, "a walking dress")
        bulk.run_job(manifest, bulk.Bulk(view="pages", do="caption", filter={"decision": "all"},
                                         text="fashion plate"), chunk=9)
        written = captions(manifest)
        assert written[(1, 3)] == "a walking dress" and len(written) == 120
        assert set(written.values()) == {"a walking dress", "fashion plate"}
        manifest.undo()
        assert captions(manifest) == {(1, 3): "a walking dress"}


def test_a_stopped_bulk_job_keeps_what_it_wrote_as_one_action_and_resumes_in_it(db, monkeypatch):
    include_all = bulk.Bulk(view="pages", do="include", filter={"decision": "all"})
    with Manifest(db, user="ana") as manifest:
        stop_after = iter([False, False, True])
        monkeypatch.setattr(type(manifest), "stop_requested", lambda self, job_id: next(stop_after, False))
        assert bulk.run_job(manifest, include_all, chunk=10) == 30
        job = manifest.latest_job(bulk.JOB)
        assert job["status"] == "stopped" and job["done"] == 30 and job["total"] == 120
        assert len(overrides(manifest)) == 30
        action = history.last_undoable(manifest.conn, "ana")
        assert action["changes"] == 30
        # Again: the view is taken again; the 30 pages done record and change nothing, the rest join the action.
        assert bulk.run_job(manifest, include_all, chunk=10) == 120
        assert len(overrides(manifest)) == 120 and history.last_undoable(manifest.conn, "ana")["id"] == action["id"]
        assert history.action(manifest.conn, action["id"])["changes"] == 120
        manifest.undo()
        assert overrides(manifest) == {}


def test_a_bulk_job_killed_mid_way_leaves_each_chunk_with_its_history_and_resumes(db):
    """SIGKILL between or inside chunks: a chunk is one transaction, so what the manifest holds is exactly what the
    action records; running the same command again finishes it in the same action, undone in one step."""
    command = [sys.executable, "-m", "curation", "bulk", "exclude", "--view", "all", "--chunk", "1", "--db", str(db),
               "--quiet"]
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               start_new_session=True)
    with Manifest(db, user="ana") as manifest:
        deadline = time.monotonic() + 60
        while True:
            job = manifest.latest_job(bulk.JOB)
            if job is not None and (job["done"] or 0) >= 5:
                break
            assert process.poll() is None and time.monotonic() < deadline, process.stderr.read()
            time.sleep(0.02)
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
        job = manifest.latest_job(bulk.JOB)  # its process is gone: interrupted
        assert job["status"] == "interrupted" and 5 <= job["done"] < 120
        action = history.last_undoable(manifest.conn)
        recorded = {(r[0], r[1]) for r in manifest.conn.execute(
            "SELECT doc_id, page FROM history_changes WHERE action_id = ?", (action["id"],))}
        assert set(overrides(manifest)) == recorded and len(recorded) == job["done"]
        assert set(overrides(manifest).values()) == {0}
        assert action["description"] == "excluding 120 pages (running)"
        bulk.settle(manifest)  # the dashboard's next run: the action says what it wrote
        assert history.action(manifest.conn, action["id"])["description"] == \
            f"excluded {len(recorded)} pages (view: All pages)"
    finished = subprocess.run(command[:-5] + ["--db", str(db), "--quiet"], cwd=ROOT, capture_output=True, text=True)
    assert finished.returncode == 0, finished.stderr
    with Manifest(db, user="ana") as manifest:
        assert len(overrides(manifest)) == 120
        assert history.last_undoable(manifest.conn)["id"] == action["id"]
        manifest.undo()
        assert overrides(manifest) == {}


def test_a_picture_bulk_job_decides_every_picture_of_the_view(tmp_path, monkeypatch):
    monkeypatch.setenv(history.USER_VARIABLE, "ana")
    from test_picture_views import ENGRAVING, STOCK_CUT, scored
    with Manifest(tmp_path / "m.sqlite", user="ana") as manifest:
        doc_id = manifest.register_document(sha256="a" * 64, path="/archive/a.pdf", size=1)["id"]
        for page in range(12):
            scored(manifest, doc_id, page, [ENGRAVING, STOCK_CUT])
        manifest.set_document(doc_id, status="ok", pages=12)
        bulk.run_job(manifest, bulk.Bulk(view="pictures", do="exclude", filter={"decision": "all"}), chunk=5)
        keeps = [r[0] for r in manifest.conn.execute("SELECT keep FROM pictures")]
        assert keeps == [0] * 24
        assert manifest.conn.execute("SELECT SUM(exported) FROM pictures").fetchone()[0] == 0
        manifest.undo()
        assert {r[0] for r in manifest.conn.execute("SELECT keep FROM pictures")} == {None}


def test_a_second_bulk_job_waits_for_the_first(db):
    with Manifest(db, user="ana") as manifest:
        manifest.start_job(bulk.JOB, {})  # this process holds it
        with pytest.raises(JobRunning):
            bulk.run_job(manifest, bulk.Bulk(view="pages", do="exclude", filter={}))
