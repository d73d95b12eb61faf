"""Ingest scores every page once, skips what it has, resumes after a kill and survives engine crashes."""

import os
import pathlib
import shutil
import signal
import subprocess
import sys
import time

import pymupdf
import pytest

from curation import Manifest, ingest, reference_sigma, views
from curation.runs.scheduler import CRASH_MESSAGE

from conftest import ROOT, small_pdf
import crashing


def page_rows(manifest):
    return manifest.conn.execute("SELECT doc_id, page, status, sigma FROM pages ORDER BY doc_id, page").fetchall()


def test_every_page_gets_a_score_that_matches_the_reference(manifest, archive):
    report = ingest(manifest, [archive], workers=2)
    assert report.pages_scored == 15 and report.pages_failed == 0
    docs = manifest.documents()
    assert [d["status"] for d in docs] == ["ok", "ok", "ok"]
    for row in manifest.pages():
        page = pymupdf.open(row["doc"])[row["page"]]
        assert abs(row["sigma"] - reference_sigma(page)) <= 0.5
        assert views.thumbnails(manifest, [(row["doc_id"], row["page"])])[(row["doc_id"], row["page"])][:2] == b"\xff\xd8"
    job = manifest.latest_job("ingest")
    assert (job["status"], job["done"], job["total"]) == ("done", 15, 15)


def test_second_run_reads_only_new_documents(manifest, archive):
    ingest(manifest, [archive], workers=1)
    before = {(r["doc_id"], r["page"]): r["sigma"] for r in page_rows(manifest)}
    small_pdf(archive / "later" / "issue-9.pdf", pages=3, seed=9)
    report = ingest(manifest, [archive], workers=1)
    assert (report.documents, report.new_documents, report.pages_scored) == (4, 1, 3)
    after = {(r["doc_id"], r["page"]): r["sigma"] for r in page_rows(manifest)}
    assert {k: after[k] for k in before} == before
    assert ingest(manifest, [archive], workers=1).pages_scored == 0


def test_renamed_or_moved_file_is_not_read_again(manifest, archive, tmp_path):
    ingest(manifest, [archive], workers=1)
    moved = tmp_path / "elsewhere"
    moved.mkdir()
    shutil.move(archive / "issue-1.pdf", moved / "renamed.pdf")
    report = ingest(manifest, [archive, moved], workers=1)
    assert report.pages_scored == 0 and report.new_documents == 0
    paths = [d["path"] for d in manifest.documents()]
    assert str((moved / "renamed.pdf").resolve()) in paths
    assert len(paths) == 3


def test_changed_file_is_scored_again_and_the_old_content_retired(manifest, archive):
    ingest(manifest, [archive], workers=1)
    target = archive / "issue-0.pdf"
    small_pdf(target, pages=2, seed=42)
    report = ingest(manifest, [archive], workers=1)
    assert report.new_documents == 1 and report.pages_scored == 2
    statuses = {d["status"] for d in manifest.documents() if d["path"] == str(target.resolve())}
    assert statuses == {"ok", "replaced"}
    assert manifest.summary()["pages"] == 2 + 5 + 6


def test_a_killed_run_resumes_with_every_page_exactly_once(tmp_path):
    folder = tmp_path / "archive"
    small_pdf(folder / "big.pdf", pages=90, seed=1, dpi=200)
    small_pdf(folder / "small.pdf", pages=6, seed=2, dpi=200)
    db = tmp_path / "m.sqlite"
    cmd = [sys.executable, "-m", "curation", "ingest", str(folder), "--db", str(db), "--workers", "1", "-q"]
    proc = subprocess.Popen(cmd, cwd=ROOT, start_new_session=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        time.sleep(0.2)
        if db.exists():
            with Manifest(db) as m:
                done = m.conn.execute("SELECT COUNT(*) FROM pages").fetchone()[0]
            if done >= 16:
                break
    os.killpg(proc.pid, signal.SIGKILL)  # the coordinator and its workers, like a power cut
    proc.wait()
    with Manifest(db) as m:
        scored_before = m.conn.execute("SELECT COUNT(*) FROM pages").fetchone()[0]
        assert 16 <= scored_before < 96
        assert m.latest_job("ingest")["status"] == "interrupted"
    result = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert f"{96 - scored_before} pages scored" in result.stdout
    with Manifest(db) as m:
        rows = m.conn.execute("SELECT doc_id, page FROM pages").fetchall()
        assert len(rows) == len(set(map(tuple, rows))) == 96
        assert {d["status"] for d in m.documents()} == {"ok"}


def test_stop_request_ends_the_run_cleanly_and_a_new_run_finishes(manifest, tmp_path):
    folder = tmp_path / "archive"
    small_pdf(folder / "a.pdf", pages=12, seed=3)
    calls = []

    def progress(done, total):
        calls.append(done)
        if len(calls) == 1:
            manifest.request_stop(manifest.running_job("ingest")["id"])

    report = ingest(manifest, [folder], workers=1, pages_per_task=2, on_progress=progress)
    assert report.stopped and 0 < report.pages_scored < 12
    assert manifest.latest_job("ingest")["status"] == "stopped"
    assert ingest(manifest, [folder], workers=1).pages_scored == 12 - report.pages_scored


def test_a_page_that_crashes_the_worker_is_retried_then_marked_failed(manifest, tmp_path):
    folder = tmp_path / "archive"
    small_pdf(folder / "a.pdf", pages=8, seed=4)
    small_pdf(folder / "b.pdf", pages=3, seed=5)
    report = ingest(manifest, [folder], workers=2, pages_per_task=4, task_fn=crashing.run_task_crashing_on_page_5)
    rows = {(r["doc"].rsplit("/", 1)[1], r["page"]): r for r in manifest.pages()}
    assert rows[("a.pdf", 5)]["status"] == "failed"
    assert rows[("a.pdf", 5)]["error"] == CRASH_MESSAGE
    assert [k for k, r in rows.items() if r["status"] == "failed"] == [("a.pdf", 5)]
    assert len(rows) == 11 and report.pages_scored == 10
    statuses = {d["path"].rsplit("/", 1)[1]: d["status"] for d in manifest.documents()}
    assert statuses == {"a.pdf": "partial", "b.pdf": "ok"}
    assert "page 6" in next(d["error"] for d in manifest.documents() if d["path"].endswith("a.pdf"))  # index 5, page 6 as a person counts


def test_a_second_job_on_the_same_manifest_is_refused(manifest, archive):
    from curation.manifest.store import JobRunning

    job = manifest.start_job("ingest")
    with pytest.raises(JobRunning):
        ingest(manifest, [archive], workers=1)
    manifest.finish_job(job, "done")
    assert ingest(manifest, [archive], workers=1).pages_scored == 15


def test_sigterm_stops_the_job_cleanly_and_it_resumes(tmp_path):
    folder = tmp_path / "archive"
    small_pdf(folder / "big.pdf", pages=90, seed=1, dpi=200)
    db = tmp_path / "m.sqlite"
    cmd = [sys.executable, "-m", "curation", "ingest", str(folder), "--db", str(db), "--workers", "1", "-q"]
    proc = subprocess.Popen(cmd, cwd=ROOT, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        time.sleep(0.1)
        if db.exists():
            with Manifest(db) as m:
                if m.conn.execute("SELECT COUNT(*) FROM pages").fetchone()[0]:
                    break
    proc.send_signal(signal.SIGTERM)  # what a shutdown sends
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert "Run the same command again to resume" in stderr
    with Manifest(db) as m:
        assert m.latest_job("ingest")["status"] == "stopped"
        scored = m.conn.execute("SELECT COUNT(*) FROM pages").fetchone()[0]
    assert scored < 90
    result = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert f"{90 - scored} pages scored" in result.stdout


def test_one_large_pdf_reports_its_pages_as_they_finish_not_at_its_end(manifest, tmp_path):
    """A single PDF used to be cut into tasks of 16 pages: "0 of 26 pages" until the end. Now the first
    figure comes after one page per worker and the count moves in steps of a few pages."""
    small_pdf(tmp_path / "archive" / "big.pdf", pages=26, seed=5)
    seen = []
    report = ingest(manifest, [tmp_path / "archive"], workers=2, on_progress=lambda done, total: seen.append(done))
    assert report.pages_scored == 26 and seen[-1] == 26
    assert seen[0] <= 2, seen
    assert len(set(seen)) >= 10, seen  # at most 3 pages a step
    assert max(b - a for a, b in zip([0, *seen], seen)) <= 3, seen


def test_task_sizes_start_at_one_page_per_worker_and_grow_to_the_largest():
    from itertools import islice

    from curation.runs.ingest import task_sizes

    assert list(islice(task_sizes(10_000, 2, 16), 10)) == [1, 1, 2, 2, 4, 4, 8, 8, 16, 16]
    assert set(islice(task_sizes(26, 2, 16), 20)) == {1, 2, 3}  # a few pages: at least four tasks a worker
    assert list(islice(task_sizes(3, 4, 16), 3)) == [1, 1, 1]


def test_a_file_name_that_is_not_utf8_is_refused_alone_and_the_run_goes_on(manifest, archive, tmp_path):
    """Before, one such name stopped every ingest: the history's write raised UnicodeEncodeError, each later
    run ended before it began, until the file was removed. Now it is left out, named escaped, with its reason."""
    bad = os.fsdecode(archive) + os.fsdecode(b"/caf\xe9.pdf")  # as the file system hands it: bytes as surrogates
    shutil.copy(archive / "issue-0.pdf", bad)
    small_pdf(tmp_path / "later.pdf", pages=2, seed=7)
    shutil.copy(tmp_path / "later.pdf", archive / "later.pdf")
    for _ in range(2):  # and the next run too
        report = ingest(manifest, [archive], workers=1)
        assert report.misnamed == [f"{archive}/caf\\xe9.pdf"]
        assert any("caf\\xe9.pdf: not read, its path is not valid UTF-8" in p for p in report.problems)
    assert sorted(pathlib.Path(d["path"]).name for d in manifest.documents()) == [
        "issue-0.pdf", "issue-1.pdf", "issue-2.pdf", "later.pdf"]
    assert manifest.conn.execute("SELECT COUNT(*) FROM pages WHERE status = 'ok'").fetchone()[0] == 17
    job = manifest.latest_job("ingest")
    assert job["status"] == "done" and "caf\\xe9.pdf" in job["message"] and "rename it" in job["message"]
    cli = subprocess.run([sys.executable, "-m", "curation", "ingest", str(archive), "--db", str(manifest.path),
                          "--workers", "1"], capture_output=True, cwd=ROOT)
    assert cli.returncode == 0 and b"Traceback" not in cli.stderr
    assert b"caf\\xe9.pdf: not read" in cli.stderr + cli.stdout


def test_a_document_past_the_servers_page_bound_is_refused_and_the_run_goes_on(manifest, archive, monkeypatch):
    """A 10 MB PDF of 100,000 tiny pages was half an hour of the workers' time from one upload: the server's
    bound on pages per document (CURATION_MAX_PAGES, 10,000) refuses it when it is opened, before any page."""
    from curation.runs.ingest import TOO_LONG
    from curation.sources.hostile import many_pages
    from guards import uploads

    monkeypatch.delenv("CURATION_MAX_PAGES", raising=False)
    assert uploads.max_pages() == 10_000
    (archive / "many.pdf").write_bytes(many_pages(100_000))
    started = time.monotonic()
    report = ingest(manifest, [archive], workers=1)
    assert time.monotonic() - started < 60  # its pages are never scored
    assert report.pages_scored == 15 and report.documents_failed == 1
    many = next(d for d in manifest.documents() if d["path"].endswith("many.pdf"))
    assert many["status"] == TOO_LONG and many["error"] == (
        "100,000 pages, over the server's limit of 10,000 pages per document (CURATION_MAX_PAGES); not read")
    assert "many.pdf: 100,000 pages, over the server's limit" in manifest.latest_job("ingest")["message"]
    assert manifest.conn.execute("SELECT COUNT(*) FROM pages WHERE doc_id = ?", (many["id"],)).fetchone()[0] == 0


def test_the_page_bound_is_the_servers_setting_and_a_raised_bound_reads_the_document_next_time(manifest, archive,
                                                                                               monkeypatch):
    monkeypatch.setenv("CURATION_MAX_PAGES", "5")  # issue-2.pdf has 6 pages
    report = ingest(manifest, [archive], workers=1)
    assert report.pages_scored == 9
    assert {pathlib.Path(d["path"]).name: d["status"] for d in manifest.documents()}["issue-2.pdf"] == "too-long"
    cli = subprocess.run([sys.executable, "-m", "curation", "ingest", str(archive), "--db", str(manifest.path),
                          "--workers", "1"], capture_output=True, text=True, cwd=ROOT,
                         env={**os.environ, "CURATION_MAX_PAGES": "5"})
    assert cli.returncode == 0 and "6 pages, over the server's limit of 5 pages per document" in cli.stdout + cli.stderr
    monkeypatch.setenv("CURATION_MAX_PAGES", "6")
    assert ingest(manifest, [archive], workers=1).pages_scored == 6
    assert {d["status"] for d in manifest.documents()} == {"ok"}
