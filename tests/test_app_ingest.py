"""Ingest page: server paths checked against the allowed roots, a job in its own process, live status."""


import pytest

from apptest_support import job_finished, page, ran, shown, texts, wait_for
from curation import Manifest
from curation.sources import paths


@pytest.fixture
def db(tmp_path, monkeypatch):
    path = tmp_path / "data" / "manifest.sqlite"
    monkeypatch.setenv("CURATION_DB", str(path))
    monkeypatch.setenv(paths.ROOTS_ENV, str(tmp_path / "archive"))
    return path


def add_path(at, text):
    at.text_input[0].input(text)
    next(b for b in at.button if b.label == "Add").click()
    return ran(at)


def start_button(at):
    return next(b for b in at.button if b.label == "Start")


def test_without_a_manifest_the_page_explains_and_cannot_start(db):
    at = ran(page("pages/ingest.py"))
    assert start_button(at).disabled
    assert "Allowed folders" in texts(at)


def test_paths_outside_the_allowed_folders_are_refused(db, tmp_path):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    at = add_path(ran(page("pages/ingest.py")), str(outside))
    assert "outside the folders" in at.error[0].value
    at = add_path(at, str(tmp_path / "archive" / ".." / "elsewhere"))
    assert "`..`" in shown(at.error[0].value)
    assert not db.exists()


@pytest.mark.parametrize("typed", ["links/loop1", "links", ""])
def test_a_link_loop_is_refused_with_a_message(db, tmp_path, typed):
    links = tmp_path / "archive" / "links"
    links.mkdir(parents=True)
    (links / "loop1").symlink_to(links / "loop2")
    (links / "loop2").symlink_to(links / "loop1")
    at = add_path(ran(page("pages/ingest.py")), str(tmp_path / "archive" / typed))
    [error] = at.error
    assert "round in a loop" in shown(error.value) and "Traceback" not in error.value
    assert not db.exists()  # nothing added


def test_add_a_folder_start_and_see_the_documents(db, archive):
    at = add_path(ran(page("pages/ingest.py")), str(archive))
    assert "3 PDF(s)" in texts(at)
    start_button(at).click()
    ran(at)
    wait_for(job_finished(db, "ingest"))
    at = ran(page("pages/ingest.py"))
    assert "Ingest finished" in at.success[0].value
    table = at.dataframe[0].value
    assert list(table["document"]) == ["issue-0.pdf", "issue-1.pdf", "issue-2.pdf"]
    assert list(table["status"]) == ["ok"] * 3
    with Manifest(db) as manifest:
        assert manifest.summary()["scored"] == 15


def test_a_running_job_shows_progress_and_stops_on_request(db):
    with Manifest(db) as manifest:
        job_id = manifest.start_job("ingest", {"paths": []})  # this process stands in for the job
        manifest.update_job(job_id, done=30, total=120, rate=12.0, eta=7.5)
    at = ran(page("pages/ingest.py"))
    assert start_button(at).disabled
    assert "30 of 120 pages" in at.get("progress")[0].proto.text
    next(b for b in at.button if b.label == "Stop").click()
    ran(at)
    with Manifest(db) as manifest:
        assert manifest.stop_requested(job_id)
        manifest.finish_job(job_id, "stopped", "stopped; run ingest again to resume")
    at = ran(page("pages/ingest.py"))
    assert "Press Start to resume" in at.info[0].value


@pytest.mark.parametrize("status, element, words", [
    ("failed", "error", "failed: disk full"),
    ("interrupted", "warning", "did not finish"),
])
def test_a_job_that_ended_badly_is_a_message(db, status, element, words):
    with Manifest(db) as manifest:
        job_id = manifest.start_job("ingest", {})
        manifest.finish_job(job_id, status, "disk full")
    at = ran(page("pages/ingest.py"))
    assert words in getattr(at, element)[0].value


def test_removing_a_source_keeps_its_documents(db, archive):
    with Manifest(db) as manifest:
        paths.add_source(manifest, archive)
    at = ran(page("pages/ingest.py"))
    next(b for b in at.button if b.label == "Remove").click()
    ran(at)
    with Manifest(db) as manifest:
        assert paths.sources(manifest) == []
    assert start_button(at).disabled


def test_the_page_time_limit_and_the_cluster_are_shown_not_offered(db, archive):
    at = add_path(ran(page("pages/ingest.py")), str(archive))
    assert not [n for n in at.number_input if n.label.startswith("Time limit per page")]
    assert not [t for t in at.text_input if "cluster" in t.label.lower()]
    assert "Time limit per page:** 60 s" in texts(at) and "Dask cluster:** none" in texts(at)


def test_a_running_job_shows_what_it_says_about_its_cluster(db):
    with Manifest(db) as manifest:
        job_id = manifest.start_job("ingest", {"paths": []})
        manifest.update_job(job_id, done=3, total=40, message="Dask cluster tls://10.0.0.5:8786: 4 workers, 4 threads; "
                                                              "dashboard http://10.0.0.5:8787/status")
    at = ran(page("pages/ingest.py"))
    assert "4 workers, 4 threads; dashboard http://10.0.0.5:8787/status" in texts(at)


def test_a_failed_ingest_shows_the_reason(db, tmp_path):
    with Manifest(db) as manifest:
        job = manifest.start_job("ingest")
        manifest.finish_job(job, "failed", "the disk is full: /data/manifest.sqlite could not be written; "
                                           "about 3.2 MB more is needed to finish. Free some space and run the "
                                           "same command again to resume.")
    at = ran(page("pages/ingest.py"))
    assert "the disk is full: /data/manifest.sqlite could not be written" in shown(at.error[0].value)


def test_start_comes_first_and_the_advanced_options_fold_away(db, archive):
    at = add_path(ran(page("pages/ingest.py")), str(archive))
    [advanced] = at.expander
    assert "Advanced" in advanced.label
    assert [s.key for s in advanced.selectbox] == ["thumbnails"]  # the thumbnail store is in it...
    assert any("Time limit per page" in m.value for m in advanced.markdown)  # ...and the server's settings
    assert any("Dask cluster" in m.value for m in advanced.markdown)
    assert not [b for b in advanced.button if b.label == "Start"] and not start_button(at).disabled


def test_a_starting_ingest_moves_from_the_first_second(db):
    with Manifest(db) as manifest:
        manifest.start_job("ingest", {"paths": []})  # found nothing yet: no total, no speed
    at = ran(page("pages/ingest.py"))
    line = next(p.proto.text for p in at.get("progress"))
    assert "finding the PDFs" in line and " s so far" in line and "0 of 0" not in line
    assert "measuring speed" not in texts(at)


def test_the_sample_writer_reports_every_page(tmp_path):
    from curation.runs import sample
    from curation.sources import synthetic

    specs = [[synthetic.PageSpec(kind="text", seed=n, dpi=20) for n in range(3)] for _ in range(2)]
    seen = []
    sample.write_sample(tmp_path / "sample", specs, on_page=lambda done, total: seen.append(done))
    assert seen == [0, 1, 2, 3, 4, 5, 6]  # page by page, not an issue at a time


@pytest.mark.parametrize("with_good_pdf, element, words", [
    (False, "error", "but no document could be read"),
    (True, "warning", "with problems"),
])
def test_a_fake_pdf_is_counted_and_explained_in_the_colour_of_the_problem(db, tmp_path, with_good_pdf, element, words):
    from conftest import small_pdf
    from curation import ingest

    folder = tmp_path / "archive"
    folder.mkdir()
    (folder / "fake.pdf").write_bytes(b"this is not a PDF at all, only text with a PDF name\n" * 20)
    if with_good_pdf:
        small_pdf(folder / "real.pdf", pages=2)
    with Manifest(db, create=True) as manifest:
        ingest(manifest, [folder], workers=1)
    at = ran(page("pages/ingest.py"))
    [alert] = getattr(at, element)
    text = shown(alert.value)
    assert words in text and "1 document could not be read: fake.pdf: not a PDF" in text, text
    assert not at.success
    documents = "2 documents" if with_good_pdf else "1 document (1 new)"
    assert documents in text
    assert "1 document failed" in text and "0 failed" not in text, text  # counted as failed, never "0 failed"
    table = at.dataframe[0].value
    fake = table[table["document"] == "fake.pdf"].iloc[0]
    assert fake["pages"] == 0 and fake["failed"] == 0 and "not a PDF" in fake["reason"]  # 0 pages, not "None"


def test_the_picture_finder_is_chosen_under_advanced_and_saved(db, archive):
    at = add_path(ran(page("pages/ingest.py")), str(archive))
    [finder] = [r for r in at.radio if r.key == "picture_finder"]
    assert finder.value == "network"  # a new manifest's pictures are found by the picture network
    assert finder.options[0] == "The picture network (learned where pictures are; boxes fitted to their ink)"
    finder.set_value("learned")
    ran(at)
    with Manifest(db) as manifest:
        assert manifest.picture_finder == "learned"


def test_a_learned_ingest_that_cannot_run_says_why_before_reading_a_page(db, archive, monkeypatch):
    from curation.pictures import text
    from curation.runs.ingest import Ingest

    monkeypatch.setattr(text, "MODEL_FILE", "missing.onnx")  # as where rapidocr is not installed
    with Manifest(db) as manifest:
        paths.add_source(manifest, archive)
        manifest.picture_finder = "learned"
        with pytest.raises(ValueError, match="learned picture verdict cannot run here.*pip install"):
            Ingest(manifest, [archive])
