"""Jobs read only inside the allowed folders, checked as each file is opened: a link planted after the
Ingest page's check (a race) never brings a private PDF into the manifest, and the refusal is recorded."""

import os

import pytest

from curation import Manifest
from curation.runs.ingest import Ingest, Rescore
from curation.runs.ingest_task import Task, run_task
from curation.sources.paths import check_path
from curation.sources.reader import DocumentError, open_document

from conftest import small_pdf


@pytest.fixture
def setup(tmp_path):
    """A manifest in data/ (its folder is the allowed root), an archive there, a private PDF outside."""
    data = tmp_path / "data"
    archive = data / "archive"
    small_pdf(archive / "issue-0.pdf", pages=2, seed=0)
    small_pdf(archive / "issue-1.pdf", pages=2, seed=1)
    private = small_pdf(tmp_path / "private" / "secret.pdf", pages=3, seed=7)
    os.chmod(private.parent, 0o700)
    with Manifest(data / "manifest.sqlite", create=True) as manifest:
        yield manifest, data, archive, private


def swap_for_link(path, target):
    path.unlink()
    path.symlink_to(target)


def private_pages(manifest, private):
    """Pages of the manifest read from the private file, by path or by content."""
    from curation.sources.reader import file_sha256

    sha = file_sha256(private)
    return [d for d in manifest.documents() if d["path"] == str(private) or d["sha256"] == sha]


def test_a_link_planted_after_the_check_is_refused_when_the_job_lists_the_folder(setup):
    manifest, data, archive, private = setup
    checked = check_path(str(archive), [data], data)  # what Start checks
    swap_for_link(archive / "issue-1.pdf", private)  # the race: after the check, before the job
    report = Ingest(manifest, [checked], workers=1).run()
    assert private_pages(manifest, private) == []
    assert [os.path.basename(d["path"]) for d in manifest.documents()] == ["issue-0.pdf"]
    assert report.refused == 1
    assert any("issue-1.pdf" in p and "outside the allowed folders" in p for p in report.problems)
    assert "1 file refused: outside the allowed folders" in manifest.latest_job("ingest")["message"]
    assert str(private) not in manifest.latest_job("ingest")["message"]  # says where the link is, not where it led


def test_a_file_replaced_by_a_link_after_listing_is_refused_when_opened(setup):
    manifest, data, archive, private = setup
    job = Ingest(manifest, [check_path(str(archive), [data], data)], workers=1)  # lists the folder
    swap_for_link(archive / "issue-1.pdf", private)  # between listing and reading
    report = job.run()
    assert private_pages(manifest, private) == []
    assert report.refused == 1 and report.pages_scored == 2


def test_the_worker_checks_the_file_it_opens(setup):
    _, data, archive, private = setup
    swap_for_link(archive / "issue-1.pdf", private)
    result = run_task(Task(None, str(archive / "issue-1.pdf"), roots=(str(data),)))
    assert isinstance(result, DocumentError) and result.status == "outside"
    assert str(private) not in str(result)
    with pytest.raises(DocumentError, match="outside the allowed folders"):
        run_task(Task(1, str(archive / "issue-1.pdf"), pages=(0,), roots=(str(data),)))
    assert run_task(Task(None, str(archive / "issue-0.pdf"), roots=(str(data),))).pages == 2


def test_rescore_does_not_follow_a_document_replaced_by_a_link(setup):
    manifest, data, archive, private = setup
    Ingest(manifest, [archive], workers=1).run()
    swap_for_link(archive / "issue-1.pdf", private)
    report = Rescore(manifest, all_pages=True, workers=1).run()
    assert report.pages_scored == 2  # issue-0 only
    issue_1 = next(d for d in manifest.documents() if d["path"].endswith("issue-1.pdf"))
    assert "outside the allowed folders" in issue_1["error"]


def test_a_folder_named_on_the_command_line_is_read_with_its_own_links_checked(setup, tmp_path):
    """A person at the shell may ingest a folder outside the allowed ones; a link in it leading
    elsewhere is still refused."""
    manifest, _, _, private = setup
    outside = tmp_path / "shelf"
    small_pdf(outside / "book.pdf", pages=1, seed=3)
    (outside / "link.pdf").symlink_to(private)
    report = Ingest(manifest, [outside], workers=1).run()
    assert [os.path.basename(d["path"]) for d in manifest.documents()] == ["book.pdf"]
    assert report.refused == 1


def test_a_link_between_allowed_folders_is_read(setup, tmp_path, monkeypatch):
    manifest, data, archive, _ = setup
    other = tmp_path / "more"
    small_pdf(other / "extra.pdf", pages=1, seed=4)
    monkeypatch.setenv("CURATION_ROOTS", str(other))
    (archive / "extra.pdf").symlink_to(other / "extra.pdf")
    report = Ingest(manifest, [archive], workers=1).run()
    assert report.refused == 0 and len(manifest.documents()) == 3


def test_open_document_without_roots_reads_what_it_is_given(setup):
    _, _, archive, private = setup
    swap_for_link(archive / "issue-1.pdf", private)
    with open_document(archive / "issue-1.pdf") as doc:
        assert doc.page_count == 3


def test_export_does_not_follow_a_document_replaced_by_a_link(setup, tmp_path):
    """Same size, so the check that the file is unchanged passes: only the open-time check refuses it."""
    from curation.export import Export, ExportSettings

    manifest, data, archive, _ = setup
    Ingest(manifest, [archive], workers=1).run()
    for doc in manifest.documents():
        for page in range(doc["pages"]):
            manifest.set_override(doc["id"], page, True)
    twin = tmp_path / "private" / "twin.pdf"
    twin.write_bytes((archive / "issue-1.pdf").read_bytes())
    swap_for_link(archive / "issue-1.pdf", twin)
    report = Export(manifest, data / "lora.zip", ExportSettings(size=128), workers=1, page_timeout=0).run()
    refused = [s for s in report.skipped if s["document"].endswith("issue-1.pdf")]
    assert len(refused) == 2 and all("outside the allowed folders" in s["reason"] for s in refused)
    assert report.images == 2


def test_review_does_not_draw_a_document_replaced_by_a_link(setup, tmp_path):
    from curation import views

    manifest, _, archive, _ = setup
    Ingest(manifest, [archive], workers=1).run()
    doc = next(d for d in manifest.documents() if d["path"].endswith("issue-1.pdf"))
    assert views.render_page(manifest, doc["id"], 0)[:2] == b"\xff\xd8"
    twin = tmp_path / "private" / "twin.pdf"
    twin.write_bytes((archive / "issue-1.pdf").read_bytes())
    swap_for_link(archive / "issue-1.pdf", twin)
    with pytest.raises(views.PageUnavailable, match="outside the allowed folders"):
        views.render_page(manifest, doc["id"], 0)
