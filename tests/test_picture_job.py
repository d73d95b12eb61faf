"""The picture job: it follows ingest, embeds each picture once (a killed run resumes with what is missing), reads
only the pages that hold a picture, goes on past a page it cannot read, keeps the embeddings of boxes a rescore
finds again, and the Ingest page shows its progress and outcome."""

import concurrent.futures as cf
import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from click.testing import CliRunner

from apptest_support import job_finished, page, ran, texts, wait_for
from conftest import ROOT, small_pdf
from curation import Manifest
from curation.cli import cli
from curation.manifest import picture_embeddings
from curation.manifest.rules import PICTURE_BOX_SQL
from curation.runs import embed as picture_job
from curation.runs import jobs as run_jobs
from curation.scoring.result import PageResult

PROBLEM = picture_job.missing_parts()
needs_network = pytest.mark.skipif(PROBLEM is not None, reason=f"the picture job cannot run here: {PROBLEM}")


@pytest.fixture
def picture_job_on(monkeypatch):
    monkeypatch.setenv("CURATION_PICTURE_JOB", "on")


def curation(*args, **options) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "curation", *args, "--quiet"], cwd=ROOT, capture_output=True,
                          text=True, timeout=300, **options)


def boxes_in(db) -> dict[int, tuple]:
    with Manifest(db) as m:
        return {row["id"]: tuple(row[k] for k in ("bx0", "by0", "bx1", "by1"))
                for row in m.conn.execute(
                    f"SELECT x.id, {PICTURE_BOX_SQL} FROM pictures x WHERE NOT x.deleted")}


def embedded(db) -> tuple[np.ndarray, np.ndarray]:
    with Manifest(db) as m:
        return picture_embeddings.read(m.conn)


def jobs_in(db) -> list[tuple[str, str]]:
    with Manifest(db) as m:
        return [(row["kind"], row["status"]) for row in m.conn.execute("SELECT kind, status FROM jobs ORDER BY id")]


def with_pictures(db, pdf, pages: dict[int, list[tuple]]) -> Manifest:
    """A manifest holding `pdf` (a 3 x 4 inch PDF: 432 x 576 reference pixels) whose pages carry the given boxes,
    as ingest would have saved them; the pages not named have none."""
    m = Manifest(db)
    doc_id = m.register_document(sha256=f"{abs(hash(str(pdf))):064x}"[-64:], path=str(pdf), size=pdf.stat().st_size)["id"]
    count = max(pages) + 1
    results = []
    for number in range(count):
        boxes = [[*box, 1.0] for box in pages.get(number, [])]
        features = {"ink_tone": 0.6, "picture_area": 1.0 if boxes else 0.0, "picture_count": len(boxes),
                    "pictures": json.dumps(boxes)}
        results.append(PageResult(page=number, status="ok", sigma=50.0, width=432, height=576, features=features))
    m.save_pages(doc_id, results)
    m.set_document(doc_id, status="ok", pages=count)
    return m


GRID = [(x, y, x + 90, y + 90) for x in (20, 160, 300) for y in (30, 200, 370)]  # nine cuts on a page


@needs_network
def test_ingest_is_followed_by_the_picture_job_and_a_rescore_that_keeps_the_boxes_keeps_the_embeddings(
        tmp_path, picture_job_on):
    archive = tmp_path / "archive"
    for n in range(2):
        small_pdf(archive / f"issue-{n}.pdf", pages=5, seed=n)
    db = tmp_path / "manifest.sqlite"
    done = curation("ingest", str(archive), "--db", str(db), "--workers", "1")
    assert done.returncode == 0, done.stderr
    assert jobs_in(db) == [("ingest", "done"), ("embed", "done")]
    boxes = boxes_in(db)
    ids, vectors = embedded(db)
    assert boxes and sorted(ids) == sorted(boxes)  # every picture, for the box it has
    assert np.all(np.isfinite(vectors)) and np.all(np.linalg.norm(vectors, axis=1) > 0)
    with Manifest(db) as m:  # the pages they are on, though ingest's workers cut their inputs: none read again
        pages = m.conn.execute("SELECT COUNT(*) FROM (SELECT DISTINCT doc_id, page FROM pictures)").fetchone()[0]
    assert pages and f"{len(boxes)} pictures embedded from {pages} pages" in done.stdout, done.stdout

    again = curation("rescore", "--all", "--db", str(db), "--workers", "1")
    assert again.returncode == 0, again.stderr
    assert boxes_in(db) == boxes  # the same boxes found again ...
    after_ids, after = embedded(db)
    assert list(after_ids) == list(ids) and np.array_equal(after, vectors)  # ... keep their embeddings
    assert f"0 pictures embedded from 0 pages; {len(boxes)} pictures embedded before" in again.stdout


@needs_network
def test_a_killed_job_keeps_what_it_stored_and_the_next_run_embeds_only_the_rest(tmp_path):
    pdf = small_pdf(tmp_path / "plates.pdf", pages=4)
    db = tmp_path / "manifest.sqlite"
    with_pictures(db, pdf, {number: GRID for number in range(4)}).close()  # 36 pictures
    process = subprocess.Popen([sys.executable, "-m", "curation", "embed", "--db", str(db), "--batch", "1",
                                "--quiet"], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and len(embedded(db)[0]) < 3 and process.poll() is None:
        time.sleep(0.02)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    kept = len(embedded(db)[0])
    assert 3 <= kept < 36, process.stderr.read().decode()

    with Manifest(db) as m:
        assert m.latest_job(picture_job.KIND)["status"] == "interrupted"
        report = picture_job.embed_pictures(m)
    assert (report.already, report.embedded) == (kept, 36 - kept)  # each picture embedded once
    assert len(embedded(db)[0]) == 36
    assert jobs_in(db)[-1] == ("embed", "done")


@needs_network
def test_the_network_runs_in_a_process_that_ends_with_the_job_and_takes_torch_s_memory_with_it(tmp_path):
    pdf = small_pdf(tmp_path / "plates.pdf", pages=2)
    db = tmp_path / "manifest.sqlite"
    with_pictures(db, pdf, {0: GRID[:2], 1: GRID[:1]}).close()
    code = ("import sys, psutil; from curation import Manifest; from curation.runs import embed; "
            f"report = embed.embed_pictures(Manifest({str(db)!r})); "
            "torch_in = [c.pid for c in psutil.Process().children(recursive=True) "
            "            if any('torch' in m.path for m in c.memory_maps())]; "
            "print(report.embedded, 'torch' in sys.modules, torch_in)")
    ran = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.split() == ["3", "False", "[]"]  # embedded; never in the job's process; no process holds it


@needs_network
def test_stop_ends_the_job_after_the_batch_in_hand_and_the_next_run_resumes(tmp_path, monkeypatch):
    # A stop is looked for when the job writes its progress, at most every PROGRESS_INTERVAL: here after every
    # batch, so the test does not hang on how fast 36 crops embed.
    monkeypatch.setattr(run_jobs, "PROGRESS_INTERVAL", 0.0)
    pdf = small_pdf(tmp_path / "plates.pdf", pages=4)
    with with_pictures(tmp_path / "manifest.sqlite", pdf, {number: GRID for number in range(4)}) as m:
        job = picture_job.PictureJob(m, batch=1, on_progress=lambda done, total: m.request_stop(job.job_id))
        report = job.run()
        assert report.stopped and 1 <= report.embedded < 36
        assert m.latest_job(picture_job.KIND)["status"] == "stopped"
        assert len(picture_embeddings.read(m.conn)[0]) == report.embedded
        again = picture_job.embed_pictures(m)
        assert (again.already, again.embedded, again.stopped) == (report.embedded, 36 - report.embedded, False)


@needs_network
def test_only_pages_with_pictures_are_read_and_an_unreadable_page_is_skipped_with_its_reason(tmp_path, monkeypatch):
    pdf = small_pdf(tmp_path / "issue.pdf", pages=6)
    db = tmp_path / "manifest.sqlite"
    read = []

    def page_gray(doc, number):
        read.append(number)
        if number == 4:
            raise RuntimeError("broken image stream")
        return original(doc, number)

    original = picture_job.page_gray
    monkeypatch.setattr(picture_job, "page_gray", page_gray)
    in_threads = {"workers": 1, "make_executor": cf.ThreadPoolExecutor}  # the reader sees the patched page_gray
    with with_pictures(db, pdf, {1: GRID[:2], 4: GRID[:3], 5: GRID[:1]}) as m:
        report = picture_job.embed_pictures(m, **in_threads)
        assert read == [1, 4, 5]  # pages 0, 2 and 3 hold no picture: never read
        assert (report.embedded, report.pages) == (3, 2)
        assert report.failed == [{"document": str(pdf), "page": 5, "pictures": 3,
                                  "reason": "could not read page: broken image stream"}]
        job = m.latest_job(picture_job.KIND)
        assert job["status"] == "done" and "3 pictures on 1 page could not be read" in job["message"]
        # The next run asks only for what is still missing: the unreadable page's pictures.
        read.clear()
        assert picture_job.embed_pictures(m, **in_threads).already == 3 and read == [4]


@needs_network
def test_a_page_that_kills_its_reader_is_skipped_alone_and_the_others_are_embedded(tmp_path):
    from crashing import read_crops_crashing_on_page_3

    pdf = small_pdf(tmp_path / "issue.pdf", pages=4)
    with with_pictures(tmp_path / "manifest.sqlite", pdf, {n: GRID[:2] for n in range(4)}) as m:
        report = picture_job.embed_pictures(m, workers=1, task_fn=read_crops_crashing_on_page_3)
        assert (report.embedded, report.pages) == (6, 3)
        assert report.failed == [{"document": str(pdf), "page": 3, "pictures": 2,
                                  "reason": picture_job.CRASH_MESSAGE}]
        assert len(picture_embeddings.missing(m.conn)) == 2


def test_a_document_gone_from_disk_is_skipped_with_its_reason_without_loading_the_network(tmp_path, monkeypatch):
    pdf = small_pdf(tmp_path / "gone.pdf", pages=2)
    db = tmp_path / "manifest.sqlite"
    monkeypatch.setattr(picture_job, "missing_parts", lambda: None)
    with with_pictures(db, pdf, {0: GRID[:2]}) as m:
        pdf.unlink()
        report = picture_job.embed_pictures(m)
        assert report.embedded == 0 and len(report.failed) == 1 and report.failed[0]["pictures"] == 2
        assert m.latest_job(picture_job.KIND)["status"] == "done"
        assert "gone.pdf" in m.latest_job(picture_job.KIND)["message"]


def test_where_torch_is_missing_ingest_says_what_to_install_once_and_succeeds(tmp_path, monkeypatch, picture_job_on):
    small_pdf(tmp_path / "archive" / "issue.pdf", pages=3)
    monkeypatch.setattr(picture_job, "missing_parts", lambda: "torch is not installed: pip install -r requirements.txt")
    result = CliRunner().invoke(cli, ["ingest", str(tmp_path / "archive"), "--db", str(tmp_path / "m.sqlite"),
                                      "--workers", "1", "--quiet"])
    assert result.exit_code == 0, result.output
    assert result.output.count("torch is not installed: pip install -r requirements.txt") == 1
    assert jobs_in(tmp_path / "m.sqlite") == [("ingest", "done")]


def test_an_ingest_leaves_the_pictures_to_a_picture_job_already_running(tmp_path, picture_job_on, monkeypatch):
    small_pdf(tmp_path / "archive" / "issue.pdf", pages=3)
    db = tmp_path / "m.sqlite"
    monkeypatch.setattr(picture_job, "missing_parts", lambda: None)
    with Manifest(db) as m:
        m.start_job(picture_job.KIND, {})  # this process stands in for a picture job started earlier
    result = CliRunner().invoke(cli, ["ingest", str(tmp_path / "archive"), "--db", str(db), "-w", "1", "-q"])
    assert result.exit_code == 0, result.output
    assert "already running" in result.output
    assert jobs_in(db) == [("embed", "running"), ("ingest", "done")]


def test_the_manifest_setting_turns_the_picture_job_off(tmp_path, monkeypatch):
    small_pdf(tmp_path / "archive" / "issue.pdf", pages=3)
    db = tmp_path / "m.sqlite"
    runner = CliRunner()
    assert runner.invoke(cli, ["ingest", str(tmp_path / "archive"), "--db", str(db), "-w", "1", "-q"]).exit_code == 0
    monkeypatch.setenv("CURATION_PICTURE_JOB", "on")  # the server's default: the manifest's own setting wins
    monkeypatch.setattr(picture_job, "missing_parts", lambda: "not here")  # would say so, were the job wanted
    assert "picture_job: off" in runner.invoke(cli, ["settings", "--db", str(db), "--picture-job", "off"]).output
    rescored = runner.invoke(cli, ["rescore", "--all", "--db", str(db), "-w", "1", "-q"])
    assert rescored.exit_code == 0 and "not here" not in rescored.output
    assert jobs_in(db) == [("ingest", "done"), ("ingest", "done")]


def test_ingest_and_its_workers_never_import_torch():
    imported = subprocess.run([sys.executable, "-X", "importtime", "-c", "import curation.runs.ingest, curation.cli"],
                              cwd=ROOT, capture_output=True, text=True, timeout=120).stderr
    assert "curation.runs.ingest" in imported
    assert not [line for line in imported.splitlines() if line.rsplit("|", 1)[-1].strip().split(".")[0] == "torch"]


@pytest.fixture
def app_db(tmp_path, monkeypatch):
    db = tmp_path / "data" / "manifest.sqlite"
    db.parent.mkdir()
    monkeypatch.setenv("CURATION_DB", str(db))
    return db


def test_the_ingest_page_shows_the_picture_job_running_with_stop_then_its_outcome(app_db):
    with Manifest(app_db) as m:
        job_id = m.start_job(picture_job.KIND, {"pictures": 40})  # this process: alive, so running
        m.update_job(job_id, done=12, total=40, rate=6.0, eta=4.7)
    at = ran(page("pages/ingest.py"))
    assert any("Embedding the pictures: 12 of 40 pictures · 6.0 pictures/s" in p.proto.text
               for p in at.get("progress"))
    stop = next(b for b in at.button if b.label == "Stop")
    stop.click()
    ran(at)
    with Manifest(app_db) as m:
        assert m.stop_requested(job_id)
        m.finish_job(job_id, "done", "40 pictures embedded from 9 pages <b>x</b>")
    at = ran(page("pages/ingest.py"))
    assert "Pictures embedded" in at.success[0].value and "40 pictures embedded from 9 pages <b>x</b>" in texts(at)


def test_the_sidebar_follows_a_running_picture_job(app_db):
    with Manifest(app_db) as m:
        job_id = m.start_job(picture_job.KIND, {"pictures": 40})  # this process stands in for the job
        m.update_job(job_id, done=12, total=40)
    at = ran(page("dashboard.py"))
    assert "Embedding the pictures running: 12/40 pictures" in " ".join(str(e.value) for e in at.sidebar.caption)


def test_after_a_stop_the_ingest_page_offers_resume(app_db):
    with Manifest(app_db) as m:
        job_id = m.start_job(picture_job.KIND, {"pictures": 40})
        m.finish_job(job_id, "stopped", "stopped after 12 pictures; run again to resume")
    at = ran(page("pages/ingest.py"))
    assert "stopped after 12 pictures" in texts(at)
    if PROBLEM is not None:  # where it cannot run, the page says what to install instead
        assert "Pictures are not embedded after ingest here" in texts(at)
        return
    next(b for b in at.button if b.label == "Resume").click()  # launches `python -m curation embed`
    ran(at)
    job = wait_for(lambda: (job := job_finished(app_db, picture_job.KIND)()) and job["id"] != job_id and job)
    assert job["status"] == "done"
    at = ran(page("pages/ingest.py"))
    assert "Pictures embedded" in at.success[0].value and not [b for b in at.button if b.label == "Resume"]
