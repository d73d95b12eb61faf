"""What the dashboard shows, computed in SQL and NumPy: filters, paging, histogram, suggestion, bulk overrides."""

import pathlib

import numpy as np
import pytest

from conftest import small_pdf
from curation import Manifest, sample, views
from curation.views import PageFilter

ROOT = pathlib.Path(__file__).resolve().parent.parent
# Two documents of ten pages each: σ 10, 15, ... 55 and 12, 17, ... 57.
SIGMAS = [10 + 5 * n for n in range(10)] + [12 + 5 * n for n in range(10)]


@pytest.fixture
def filled(manifest):
    """20 scored pages in two documents, a failed page, two overrides and a replaced document."""
    ids = sample.fill_manifest(manifest, documents=2, pages=10, sigmas=SIGMAS, thumbnails=[b"jpeg-a", b"jpeg-b"])
    from curation.manifest import PageResult

    manifest.save_pages(ids[1], [PageResult(page=10, status="failed", error="damaged page")])
    manifest.set_override(ids[0], 0, True)  # σ 10, included by hand
    manifest.set_override(ids[1], 9, False)  # σ 57, excluded by hand
    gone = sample.fill_manifest(manifest, documents=1, pages=3, seed=9, sigmas=[99, 99, 99])[0]
    manifest.set_document(gone, status="replaced")
    return manifest, ids


def test_counts_by_decision(filled):
    manifest, ids = filled
    # Above 45 by σ: 50, 55 and 47, 52, 57; 57 is excluded and σ 10 included by hand.
    expected = {"all": (21, 5), "kept": (5, 5), "rejected": (16, 0), "overridden": (2, 1), "failed": (1, 0)}
    for decision, (pages, kept) in expected.items():
        counts = views.filter_counts(manifest, 45, PageFilter(decision))
        assert (counts["pages"], counts["kept"]) == (pages, kept), decision
        assert counts["rejected"] == pages - kept
    near = views.filter_counts(manifest, 45, PageFilter("near", near=3))  # σ 42, 45, 47
    assert near["pages"] == 3
    one = views.filter_counts(manifest, 45, PageFilter(doc_id=ids[0]))
    assert (one["pages"], one["kept"], one["overridden"]) == (10, 3, 1)
    with pytest.raises(ValueError):
        PageFilter("everything").sql()


def test_counts_agree_with_the_manifest_summary(filled):
    manifest, _ = filled
    for threshold in (0, 30, 45, 60):
        summary = manifest.summary(threshold)
        counts = views.filter_counts(manifest, threshold)
        figures = views.figures(manifest, threshold, saved=45)
        assert counts["kept"] == summary["kept"] == figures["kept"]
        assert figures["rejected"] == summary["rejected"]
        assert figures["kept_saved"] == manifest.summary(45)["kept"]
    assert figures["removed_share"] == pytest.approx(summary["rejected"] / summary["pages"])


def test_rows_are_paged_in_sql_order(filled):
    manifest, ids = filled
    first = views.page_rows(manifest, 45, sort="sigma", limit=4)
    assert [row["sigma"] for row in first] == [10, 12, 15, 17]
    second = views.page_rows(manifest, 45, sort="sigma", limit=4, offset=4)
    assert [row["sigma"] for row in second] == [20, 22, 25, 27]
    highest = views.page_rows(manifest, 45, sort="sigma_desc", limit=1)[0]
    assert highest["sigma"] == 57 and highest["keep"] == 0 and highest["override"] == 0
    in_order = views.page_rows(manifest, 45, PageFilter(doc_id=ids[1]), sort="page", limit=100)
    assert [row["page"] for row in in_order] == list(range(11))
    near = views.page_rows(manifest, 45, PageFilter("near", near=3), limit=10)
    assert [row["sigma"] for row in near] == [42, 45, 47]


def test_thumbnails_only_for_the_pages_asked(filled):
    manifest, ids = filled
    thumbs = views.thumbnails(manifest, [(ids[0], 0), (ids[0], 1), (ids[1], 10)])
    assert thumbs == {(ids[0], 0): b"jpeg-a", (ids[0], 1): b"jpeg-b"}  # the failed page has none
    assert views.thumbnails(manifest, []) == {}


def test_bulk_override_applies_to_the_filter_as_it_was(filled):
    manifest, ids = filled
    assert views.bulk_override(manifest, 45, PageFilter("kept"), keep=False) == 5
    assert views.filter_counts(manifest, 45)["kept"] == 0
    assert views.bulk_override(manifest, 45, PageFilter("near", near=3), keep=True) == 3
    assert views.filter_counts(manifest, 45, PageFilter("overridden"))["pages"] == 8
    assert views.bulk_override(manifest, 45, PageFilter(doc_id=ids[0]), keep=None) == 10
    assert {(row["doc_id"], row["page"]) for row in manifest.overrides()} <= {(ids[1], n) for n in range(11)}
    assert views.bulk_override(manifest, 45, PageFilter("all"), keep=None) == 21
    assert manifest.overrides() == []


def test_histogram_splits_every_scored_page_by_decision(filled):
    manifest, _ = filled
    hist = views.histogram(manifest, 45, bins=10)
    assert hist.total.sum() == 20  # scored pages of live documents; the failed page has no σ
    assert hist.kept.sum() == 5
    assert hist.edges[0] == 10 and hist.edges[-1] == 57
    assert hist.kept[0] == 1  # σ 10, included by hand
    rows = hist.rows()
    assert len(rows) == 20 and sum(r["pages"] for r in rows) == 20
    assert views.histogram(manifest, 45, bins=7, span=(0, 100)).total.sum() == 20


def test_nothing_scored(manifest):
    assert views.histogram(manifest, 45) is None
    assert views.sigma_range(manifest) is None
    assert views.suggest_threshold(manifest) is None
    assert views.borderline(manifest, 45) == ([], [])
    assert views.filter_counts(manifest, 45)["pages"] == 0
    assert views.figures(manifest, 45)["removed_share"] == 0


def test_otsu_finds_the_valley_between_text_and_engravings():
    rng = np.random.default_rng(0)
    sigma = np.concatenate([rng.normal(25, 4, 7000), rng.normal(62, 8, 3000)])
    counts, edges = np.histogram(sigma, bins=256)
    assert 36 < views.otsu(counts, edges) < 48
    assert views.otsu(np.zeros(4), np.arange(5.0)) == 2.0


def test_suggestion_says_how_and_what_it_keeps(manifest):
    rng = np.random.default_rng(1)
    sigmas = np.concatenate([rng.normal(25, 4, 140), rng.normal(62, 8, 60)]).tolist()
    sample.fill_manifest(manifest, documents=2, pages=100, sigmas=sigmas)
    suggestion = views.suggest_threshold(manifest)
    assert 36 < suggestion.threshold < 50
    assert suggestion.kept + suggestion.rejected == 200
    assert 50 <= suggestion.kept <= 70
    assert "Otsu" in suggestion.how


def test_borderline_pages_nearest_the_cutoff_first(filled):
    manifest, _ = filled
    below, above = views.borderline(manifest, 45, count=3)
    assert [row["sigma"] for row in below] == [45, 42, 40]
    assert [row["sigma"] for row in above] == [47, 50, 52]


def test_documents_and_missing_sources(filled, tmp_path):
    manifest, ids = filled
    assert [doc["id"] for doc in views.documents_for_filter(manifest)] == ids
    assert len(views.missing_sources(manifest)) == 2  # fill_manifest's paths do not exist
    assert all(row["missing"] for row in views.document_rows(manifest))
    assert views.page_count(manifest) == 21
    assert views.override_count(manifest) == manifest.summary()["overrides"] == 2


def test_render_page_draws_from_the_pdf_and_says_why_not(manifest, tmp_path):
    pdf = small_pdf(tmp_path / "issue.pdf", pages=2)
    doc = manifest.register_document("a" * 64, str(pdf), pdf.stat().st_size)
    image = views.render_page(manifest, doc["id"], 1, long_side=800)
    assert image[:3] == b"\xff\xd8\xff"
    with pytest.raises(views.PageUnavailable, match="cannot be drawn"):
        views.render_page(manifest, doc["id"], 7)
    with open(pdf, "ab") as handle:
        handle.write(b"\n% appended")
    with pytest.raises(views.PageUnavailable, match="changed since"):
        views.render_page(manifest, doc["id"], 0)
    pdf.unlink()
    with pytest.raises(views.PageUnavailable, match="no longer at"):
        views.render_page(manifest, doc["id"], 0)
    with pytest.raises(views.PageUnavailable, match="not in the manifest"):
        views.render_page(manifest, 999, 0)


def test_job_progress_reads_like_a_person_would_say_it():
    job = {"done": 30, "total": 120, "rate": 12.345, "eta": 7.4, "status": "running"}
    progress = views.job_progress(job)
    assert progress["fraction"] == 0.25
    assert progress["rate"] == "12.3 pages/s" and progress["eta"] == "7 s left"
    assert views.job_progress({**job, "total": 0, "rate": None, "eta": None})["rate"] == "measuring speed…"
    assert views.duration(3725) == "1 h 02 min" and views.duration(75) == "1 min 15 s"


def test_next_steps_follow_the_workflow(filled):
    manifest, _ = filled
    summary = manifest.summary()
    assert views.next_steps(summary, False, True)[0].label == "Watch the ingest"
    steps = [step.page for step in views.next_steps(summary, threshold_saved=False, job_running=False)]
    assert steps == ["pages/threshold.py", "pages/export.py"]  # overrides exist: review was started
    empty = {**summary, "documents": {}}
    assert views.next_steps(empty, False, False)[0].page == "pages/ingest.py"


def test_sample_specs_hold_the_hard_cases():
    specs = sample.sample_specs(documents=4, pages=8, dpi=50)
    assert [len(doc) for doc in specs] == [8] * 4
    assert specs[0][1].kind == "faded_engraving"
    assert specs[0][2].border and specs[0][2].bleed


def test_sample_writes_whole_files_and_resumes(tmp_path):
    specs = sample.sample_specs(documents=2, pages=1, dpi=30)
    stops = iter([False, True])
    written = sample.write_sample(tmp_path, specs, should_stop=lambda: next(stops))
    assert [p.name for p in written] == ["sample-issue-01.pdf"]
    progress = []
    written = sample.write_sample(tmp_path, specs, on_page=lambda done, total: progress.append((done, total)))
    assert len(written) == 2 and progress == [(0, 2), (1, 2), (2, 2)]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sample-issue-01.pdf", "sample-issue-02.pdf"]


def test_sample_run_writes_and_ingests(tmp_path):
    db = tmp_path / "data" / "manifest.sqlite"
    assert sample.run(db, documents=2, pages=2, dpi=30, workers=1) == 0
    with Manifest(db) as manifest:
        assert manifest.summary()["scored"] == 4
        assert manifest.latest_job("sample")["status"] == "done"
        assert manifest.latest_job("ingest")["status"] == "done"
        from curation.paths import sources

        assert sources(manifest) == [str(sample.sample_folder(db))]


def test_the_library_never_imports_streamlit():
    for module in (ROOT / "curation").glob("*.py"):
        text = module.read_text()
        assert "import streamlit" not in text and "from streamlit" not in text, module.name
