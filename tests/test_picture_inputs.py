"""The picture job embeds what ingest's workers cut: an ingest followed by the picture job keeps each picture's input
to the network, cut from the page the worker had just decoded, and the job embeds those without opening a PDF; the
embedding is the one the page itself gives; a box a curator drew or redrew is read from its page; a stopped or
killed job resumes with what is missing; the inputs go once their pictures are embedded."""

import concurrent.futures as cf
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from conftest import ROOT, small_pdf
from curation import Manifest
from curation.manifest import picture_embeddings
from curation.manifest.rules import PICTURE_BOX_SQL
from curation.pictures import embedding
from curation.runs import embed as picture_job
from curation.runs import jobs as run_jobs
from curation.runs.ingest import Ingest

PROBLEM = picture_job.missing_parts()
pytestmark = pytest.mark.skipif(PROBLEM is not None, reason=f"the picture job cannot run here: {PROBLEM}")
IN_THREADS = {"workers": 1, "make_executor": cf.ThreadPoolExecutor}  # readers see a patched page_gray
# The same input embeds to within 1e-6 in batches of any size; stored as float16 (picture_embeddings.STORED),
# features under 4 round to 1/512 steps, so two stores of one input differ by at most one step (0.002). A crop
# shifted by one pixel moves a feature by 0.6-0.75 (measured on these pages): this tolerance tells them apart.
TOLERANCE = 0.004


@pytest.fixture
def ingested(tmp_path, monkeypatch):
    """A manifest ingested with the picture job on (in this process, one worker), the job not yet run."""
    monkeypatch.setenv("CURATION_PICTURE_JOB", "on")
    archive = tmp_path / "archive"
    for n in range(2):
        small_pdf(archive / f"issue-{n}.pdf", pages=4, seed=n)
    with Manifest(tmp_path / "manifest.sqlite") as m:
        Ingest(m, [archive], workers=1).run()
        yield m


@pytest.fixture
def pages_read(monkeypatch) -> list:
    read = []

    def page_gray(doc, number):
        read.append(number)
        return original(doc, number)

    original = picture_job.page_gray
    monkeypatch.setattr(picture_job, "page_gray", page_gray)
    return read


def kept_inputs(m: Manifest) -> int:
    return m.conn.execute("SELECT COUNT(*) FROM picture_inputs").fetchone()[0]


def live_pictures(m: Manifest) -> int:
    return m.conn.execute("SELECT COUNT(*) FROM pictures WHERE NOT deleted").fetchone()[0]


def embedded_by_id(m: Manifest) -> dict[int, np.ndarray]:
    ids, vectors = picture_embeddings.read(m.conn)
    return dict(zip(ids.tolist(), vectors))


def from_the_pages(m: Manifest, pages_read: list) -> dict[int, np.ndarray]:
    """Every picture embedded again, each read from its page as a job without kept inputs does."""
    m.conn.execute("DELETE FROM picture_embeddings")
    m.conn.execute("DELETE FROM picture_inputs")
    pages_read.clear()
    picture_job.embed_pictures(m, **IN_THREADS)
    assert pages_read  # it did read the pages
    return embedded_by_id(m)


def test_ingest_keeps_each_pictures_input_and_the_job_embeds_them_without_reading_a_page(ingested, pages_read):
    m = ingested
    pictures = live_pictures(m)
    assert pictures and kept_inputs(m) == pictures
    report = picture_job.embed_pictures(m, **IN_THREADS)
    assert pages_read == [] and report.pages == 5  # no PDF opened; the pictures are on five pages
    assert report.embedded == pictures and not report.failed
    assert kept_inputs(m) == 0  # gone with their pictures embedded: nothing piles up
    from_inputs = embedded_by_id(m)

    # The same pictures embedded from their pages: the same embedding.
    from_pages = from_the_pages(m, pages_read)
    assert sorted(from_inputs) == sorted(from_pages)
    for picture_id, vector in from_pages.items():
        assert np.abs(from_inputs[picture_id] - vector).max() <= TOLERANCE


def test_the_workers_input_is_the_crop_the_page_gives(ingested):
    """Pixel for pixel: the input kept at ingest is fit_on_paper of the crop the picture job cuts from its page."""
    from curation.scoring.scorer import page_gray, reference_size
    from curation.sources.reader import open_document

    m = ingested
    rows = m.conn.execute(f"SELECT x.id, d.path, x.page, {PICTURE_BOX_SQL}, i.png FROM pictures x "
                          f"JOIN documents d ON d.id = x.doc_id JOIN picture_inputs i ON i.picture_id = x.id").fetchall()
    assert rows
    for row in rows:
        doc = open_document(row["path"])
        box = (row["bx0"], row["by0"], row["bx1"], row["by1"])
        crop = embedding.page_crop(page_gray(doc, row["page"]), box, reference_size(doc[row["page"]])[0])
        assert np.array_equal(embedding.decode_input(row["png"]), embedding.fit_on_paper(crop))


def test_a_box_the_curator_redrew_is_read_from_its_page(ingested, pages_read):
    m = ingested
    first = m.conn.execute("SELECT id, doc_id, page, x0, y0, x1, y1 FROM pictures ORDER BY id").fetchone()
    redrawn = (first["x0"] + 10, first["y0"] + 10, first["x1"] - 10, first["y1"] - 10)
    m.set_picture_box(first["id"], redrawn)
    report = picture_job.embed_pictures(m, **IN_THREADS)
    assert pages_read == [first["page"]]  # that picture's page alone
    assert report.embedded == live_pictures(m)
    assert kept_inputs(m) == 0  # the old box's input went too
    vector = embedded_by_id(m)[first["id"]]
    assert np.abs(vector - from_the_pages(m, pages_read)[first["id"]]).max() <= TOLERANCE


def test_a_stopped_job_resumes_with_the_kept_inputs_it_did_not_embed(ingested, pages_read, monkeypatch):
    monkeypatch.setattr(run_jobs, "PROGRESS_INTERVAL", 0.0)  # a stop is looked for after every batch
    m = ingested
    pictures = live_pictures(m)
    job = picture_job.PictureJob(m, batch=1, on_progress=lambda done, total: m.request_stop(job.job_id), **IN_THREADS)
    report = job.run()
    assert report.stopped and 1 <= report.embedded < pictures
    assert kept_inputs(m) == pictures - report.embedded  # what is left to embed keeps its input
    again = picture_job.embed_pictures(m, **IN_THREADS)
    assert (again.already, again.embedded) == (report.embedded, pictures - report.embedded)
    assert pages_read == [] and kept_inputs(m) == 0


def test_a_killed_job_resumes_without_reading_a_page(ingested, pages_read):
    m = ingested
    pictures = live_pictures(m)
    process = subprocess.Popen([sys.executable, "-m", "curation", "embed", "--db", str(m.path), "--batch", "1",
                                "--quiet"], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and len(embedded_by_id(m)) < 1 and process.poll() is None:
        time.sleep(0.02)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    kept = len(embedded_by_id(m))
    assert 1 <= kept, process.stderr.read().decode()
    assert kept_inputs(m) == pictures - kept  # each embedding and its input's removal in one transaction
    report = picture_job.embed_pictures(m, **IN_THREADS)
    assert (report.already, report.embedded) == (kept, pictures - kept) and pages_read == []


def test_a_rescore_that_finds_the_same_boxes_keeps_no_inputs(ingested):
    m = ingested
    picture_job.embed_pictures(m, **IN_THREADS)
    from curation.runs.ingest import Rescore

    Rescore(m, all_pages=True, workers=1).run()
    assert kept_inputs(m) == 0  # already embedded for those boxes


def test_without_the_picture_job_ingest_keeps_no_inputs(tmp_path, monkeypatch):
    monkeypatch.setenv("CURATION_PICTURE_JOB", "off")
    small_pdf(tmp_path / "archive" / "issue.pdf", pages=3)
    with Manifest(tmp_path / "manifest.sqlite") as m:
        Ingest(m, [tmp_path / "archive"], workers=1).run()
        assert live_pictures(m) and kept_inputs(m) == 0
