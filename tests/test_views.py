"""What the dashboard shows, computed in SQL and NumPy: filters, paging, histogram, suggestion, bulk overrides."""

import datetime as dt
import io
import pathlib

import numpy as np
import pytest
from PIL import Image

from conftest import small_pdf
from curation import Manifest, views
from curation.runs import sample
from curation.views import PageFilter

ROOT = pathlib.Path(__file__).resolve().parent.parent
# Two documents of ten pages each: σ 10, 15, ... 55 and 12, 17, ... 57.
SIGMAS = [10 + 5 * n for n in range(10)] + [12 + 5 * n for n in range(10)]


@pytest.fixture
def filled(manifest):
    """20 scored pages in two documents, a failed page, two overrides and a replaced document."""
    ids = sample.fill_manifest(manifest, documents=2, pages=10, sigmas=SIGMAS, thumbnails=[b"jpeg-a", b"jpeg-b"])
    from curation.scoring.result import PageResult

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
    assert views.near_measure(manifest, "picture") == "sigma"  # no features: σ decides, σ measures


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


@pytest.mark.parametrize("sort", list(views.SORTS))
def test_screens_past_the_middle_read_from_the_end_are_the_same_screens(filled, sort):
    manifest, _ = filled
    total = views.filter_counts(manifest, 45)["pages"]  # 21, the failed page (σ NULL) among them
    for limit in (4, 7):
        for offset in range(0, total + limit, limit):
            from_start = views.page_rows(manifest, 45, sort=sort, limit=limit, offset=offset)
            assert views.page_rows(manifest, 45, sort=sort, limit=limit, offset=offset, total=total) == from_start


@pytest.mark.parametrize("sort", list(views.SORTS))
def test_a_screen_at_either_end_is_walked_along_an_index_without_sorting_the_pages(filled, sort):
    manifest, _ = filled
    total = views.filter_counts(manifest, 45)["pages"]
    walks = []
    manifest.conn.set_trace_callback(lambda sql: walks.append(sql) if sql.startswith("SELECT p.rowid") else None)
    for limit, offset in ((4, 0), (1, total - 1), (4, total - 4)):
        views.page_rows(manifest, 45, sort=sort, limit=limit, offset=offset, total=total)
    manifest.conn.set_trace_callback(None)
    assert len(walks) == 3
    for walk in walks:
        plan = " ".join(row[3] for row in manifest.conn.execute(f"EXPLAIN QUERY PLAN {walk}"))
        assert "USING" in plan and "INDEX" in plan, plan
        # Only ties of the first key may be sorted (a document's pages, equal σ); where the first key has
        # millions of ties (pages without a picture), none are.
        assert "TEMP B-TREE FOR ORDER BY" not in plan, plan
        if sort in ("sigma", "picture_desc"):
            assert "TEMP B-TREE" not in plan, plan


@pytest.mark.parametrize("sort", list(views.SORTS))
def test_overridden_pages_sorted_from_the_overrides_are_the_screens_walked(filled, sort):
    manifest, ids = filled
    for page in (3, 7, 9, 1):
        manifest.set_override(ids[1], page, page % 2 == 1)
    flt = PageFilter("overridden")
    total = views.filter_counts(manifest, 45, flt)["pages"]
    assert total >= 5
    for offset in range(0, total, 2):
        walked = views.page_rows(manifest, 45, flt, sort=sort, limit=2, offset=offset)
        assert views.page_rows(manifest, 45, flt, sort=sort, limit=2, offset=offset, total=total) == walked
        assert len(walked) == min(2, total - offset) and all(row["override"] is not None for row in walked)


@pytest.mark.parametrize("sort", list(views.SORTS))
def test_failed_pages_sorted_from_their_index_are_the_screens_walked(filled, sort):
    manifest, ids = filled
    from curation.scoring.result import PageResult

    manifest.save_pages(ids[0], [PageResult(page=page, status="failed", error="timed out") for page in (10, 11, 2)])
    flt = PageFilter("failed")
    total = views.filter_counts(manifest, 45, flt)["pages"]
    assert total == 4
    walks = []
    manifest.conn.set_trace_callback(lambda sql: walks.append(sql) if sql.startswith("SELECT p.rowid") else None)
    for offset in range(0, total, 3):
        walked = views.page_rows(manifest, 45, flt, sort=sort, limit=3, offset=offset)
        assert views.page_rows(manifest, 45, flt, sort=sort, limit=3, offset=offset, total=total) == walked
        assert len(walked) == min(3, total - offset) and all(row["status"] == "failed" for row in walked)
    manifest.conn.set_trace_callback(None)
    driven = [walk for walk in walks if "pages_failed" in walk]
    assert len(driven) == 2


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
    assert views.borderline(manifest, 45) == ([], [], "sigma")
    assert views.picture_histogram(manifest, 45) is None
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
    for rule in ("sigma", "picture"):  # without picture features the picture rule cuts on σ too
        below, above, measure = views.borderline(manifest, 45, count=3, rule=rule)
        assert measure == "sigma"
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
    started = (dt.datetime.now(dt.timezone.utc) - dt.timedelta(seconds=5)).isoformat(timespec="seconds")
    starting = views.job_progress({**job, "total": 0, "rate": None, "eta": None, "started_at": started})
    assert starting["rate"] in ("5 s so far", "6 s so far")  # it moves from the first second
    assert views.duration(3725) == "1 h 02 min" and views.duration(75) == "1 min 15 s"


def test_next_steps_follow_the_workflow(filled):
    manifest, _ = filled
    summary = manifest.summary()
    assert views.next_steps(summary, False, True)[0].label == "Watch the ingest"
    steps = views.next_steps(summary, rule_saved=False, job_running=False)
    assert [step.page for step in steps] == ["pages/threshold.py", "pages/export.py"]  # overrides: review began
    assert "picture rule: a picture ≥ 2 sq in" in steps[0].why and "σ only" in steps[0].why
    assert "picture rule" in steps[-1].why
    manifest.rule = "sigma"
    steps = views.next_steps(manifest.summary(), rule_saved=True, job_running=False)
    assert [step.page for step in steps] == ["pages/export.py"] and "σ only: σ > 45" in steps[0].why
    many = {**summary, "overrides": 12}
    assert views.next_steps(many, True, False)[0].label == "Let the model learn from your overrides"
    assert views.next_steps(many, True, False, suggestions=20)[0].page == "pages/export.py"
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
        from curation.sources.paths import sources

        assert sources(manifest) == [str(sample.sample_folder(db))]


def test_the_library_never_imports_streamlit():
    for module in (ROOT / "curation").glob("*.py"):
        text = module.read_text()
        assert "import streamlit" not in text and "from streamlit" not in text, module.name


# -- decision rules: the picture rule, σ only and the learned model ---------------------------------------------
#
# One document of eleven pages whose features say what σ gets wrong. Page: (σ, largest picture in sq in, ink tone).
FEATURED = [
    (20, 0.0, 0.45),  # 0 text
    (25, 0.0, 0.45),  # 1 text
    (50, 0.0, 0.45),  # 2 text on a dark scanner bed: σ keeps it
    (44, 0.2, 0.45),  # 3 text with a small ornament
    (30, 20.0, 0.30),  # 4 faded engraving: σ misses it
    (60, 40.0, 0.80),  # 5 engraving
    (55, 10.0, 0.75),  # 6 mixed page
    (12, 0.0, 0.05),  # 7 blank
    (35, 2.5, 0.60),  # 8 a small cut, just over the picture cutoff
    (40, 1.6, 0.60),  # 9 just under it
    (47, None, None),  # 10 scored before features existed: σ decides it
]
SIGMA_KEEPS = {2, 5, 6, 10}
PICTURE_KEEPS = {4, 5, 6, 8, 10}


@pytest.fixture
def featured(manifest):
    (doc,) = sample.fill_manifest(manifest, documents=1, pages=len(FEATURED), sigmas=[f[0] for f in FEATURED],
                                  thumbnails=[b"jpeg"])
    manifest.conn.executemany(
        "UPDATE pages SET picture_area = ?, ink_tone = ? WHERE doc_id = ? AND page = ?",
        [(share, tone, doc, n) for n, (_, share, tone) in enumerate(FEATURED)])
    return manifest, doc


def kept_pages(manifest, **decision) -> set[int]:
    rows = views.page_rows(manifest, decision.pop("threshold", 45), PageFilter("kept"), limit=100, **decision)
    return {row["page"] for row in rows}


def test_each_rule_decides_its_own_way(featured):
    manifest, doc = featured
    assert kept_pages(manifest) == PICTURE_KEEPS  # the saved rule: the picture rule by default
    assert kept_pages(manifest, rule="sigma") == SIGMA_KEEPS
    assert kept_pages(manifest, rule="picture", picture_area_min=3.0) == PICTURE_KEEPS - {8}
    assert kept_pages(manifest, rule="picture", picture_area_min=1.0) == PICTURE_KEEPS | {9}
    assert kept_pages(manifest, rule="picture", threshold=50) == PICTURE_KEEPS - {10}  # σ decides page 10
    assert kept_pages(manifest, rule="model") == PICTURE_KEEPS  # nothing learned: the picture rule
    for rule, keeps in (("sigma", SIGMA_KEEPS), ("picture", PICTURE_KEEPS)):
        counts = views.filter_counts(manifest, 45, rule=rule)
        assert (counts["pages"], counts["kept"]) == (11, len(keeps))
        assert views.filter_counts(manifest, 45, PageFilter("rejected"), rule=rule)["pages"] == 11 - len(keeps)
    with pytest.raises(ValueError):
        views.filter_counts(manifest, 45, rule="astrology")


def test_figures_compare_the_rule_being_tried_with_the_saved_one(featured):
    manifest, _ = featured
    trying = views.figures(manifest, 45, saved=45, rule="sigma")
    assert (trying["kept"], trying["kept_saved"]) == (len(SIGMA_KEEPS), len(PICTURE_KEEPS))
    share = views.figures(manifest, 45, saved=45, rule="picture", picture_area_min=3.0)
    assert (share["kept"], share["kept_saved"]) == (len(PICTURE_KEEPS) - 1, len(PICTURE_KEEPS))
    manifest.rule, manifest.picture_area_min = "sigma", 3.0
    assert manifest.summary()["kept"] == views.figures(manifest, 45)["kept"] == len(SIGMA_KEEPS)
    both = views.figures(manifest, 30, saved=45, rule="picture")  # the saved side: σ only at 45
    assert both["kept_saved"] == len(SIGMA_KEEPS) and both["kept"] == len(PICTURE_KEEPS) - 1
    assert both["removed_share"] == pytest.approx(1 - both["kept"] / 11)


def test_histograms_follow_the_rule(featured):
    manifest, _ = featured
    sigma = views.histogram(manifest, 45, bins=10, rule="sigma")
    picture = views.histogram(manifest, 45, bins=10, rule="picture")
    assert sigma.total.sum() == picture.total.sum() == 11
    assert (sigma.kept.sum(), picture.kept.sum()) == (len(SIGMA_KEEPS), len(PICTURE_KEEPS))
    shares = views.picture_histogram(manifest, 45, bins=30)
    assert shares.total.sum() == 10  # page 10 has no features
    assert shares.edges[0] == pytest.approx(views.PICTURE_FLOOR) and shares.edges[-1] == pytest.approx(views.PICTURE_CEILING)
    assert shares.total[0] == 4  # no picture at all: pages 0, 1, 2 and 7
    assert shares.kept.sum() == len(PICTURE_KEEPS) - 1
    cut = int(np.searchsorted(shares.edges, 2.0)) - 1  # the bin holding the cutoff
    assert shares.kept[:cut].sum() == 0 and shares.rejected[cut + 1:].sum() == 0
    looser = views.picture_histogram(manifest, 45, bins=30, picture_area_min=1.0)
    assert looser.kept.sum() == len(PICTURE_KEEPS)  # page 9 (1.6 sq in) joins
    assert views.picture_histogram(manifest, 45, bins=30, rule="sigma").kept.sum() == len(SIGMA_KEEPS - {10})


def test_borderline_cuts_where_the_rule_cuts(featured):
    manifest, doc = featured
    below, above, measure = views.borderline(manifest, 45, count=3)
    assert measure == "picture_area"
    assert [row["page"] for row in below] == [9, 3, 0]  # at 0 sq in, by document and page
    assert [row["page"] for row in above] == [8, 6, 4]
    below, above, measure = views.borderline(manifest, 45, count=2, rule="sigma")
    assert measure == "sigma" and [r["page"] for r in below] == [3, 9] and [r["page"] for r in above] == [10, 2]
    manifest.replace_suggestions([(doc, 5, True, 0.99), (doc, 8, True, 0.55), (doc, 9, False, 0.6),
                                  (doc, 0, False, 0.97)])
    below, above, measure = views.borderline(manifest, 45, count=5, rule="model")
    assert measure == "confidence"
    assert [r["page"] for r in below] == [9, 0] and [r["page"] for r in above] == [8, 5]


def test_the_pages_at_the_edge_outline_the_picture_that_decides_them(manifest):
    """Under the picture rule, each edge thumbnail shows its page's largest picture outlined (the one whose
    square inches decide it), not the others; under σ only, the thumbnails are as stored."""
    white = io.BytesIO()
    Image.new("RGB", (306, 396), "white").save(white, "JPEG", quality=95)  # a page's thumbnail, a quarter across
    (doc,) = sample.fill_manifest(manifest, documents=1, pages=1, sigmas=[30], thumbnails=[white.getvalue()])
    manifest.set_pictures(doc, 0, [(100, 100, 500, 400, 5.8), (800, 1000, 1000, 1200, 1.9)])
    manifest.conn.execute("UPDATE pages SET picture_area = 5.8, ink_tone = 0.6")
    manifest.conn.commit()
    edge = views.borderline(manifest, 45)
    assert edge.measure == "picture_area" and [row["page"] for row in edge.above] == [0]
    thumb = np.asarray(Image.open(io.BytesIO(views.edge_thumbnails(manifest, edge.above, edge.measure)[(doc, 0)])))
    orange = lambda x, y: thumb[y, x, 2] < 120 < thumb[y, x, 0]  # noqa: E731 (OUTLINE_COLOUR, softened by JPEG)
    assert orange(75, 26) and orange(26, 60) and orange(124, 60)  # the deciding picture's edges (x 25-125, y 25-100)
    assert not orange(200, 250) and not orange(250, 275)  # the small one's are not drawn
    plain = views.edge_thumbnails(manifest, edge.above, "sigma")[(doc, 0)]
    assert plain == white.getvalue()


def test_model_disagrees_with_the_rule_it_stands_beside(featured):
    manifest, doc = featured
    # Picture rule: 2 rejected, 4 kept, 5 kept, 9 rejected. σ only: 2 kept, 4 rejected, 5 kept, 9 rejected.
    manifest.replace_suggestions([(doc, 2, True, 0.9), (doc, 4, True, 0.8), (doc, 5, True, 0.95),
                                  (doc, 9, False, 0.6)])

    def disagreeing(**decision):
        return {row["page"] for row in views.page_rows(manifest, 45, PageFilter("disagrees"), limit=100, **decision)}

    assert disagreeing() == disagreeing(rule="picture") == {2}
    assert disagreeing(rule="sigma") == {4}
    assert disagreeing(rule="model") == {2}  # the model decides: compared with the picture rule it replaces
    assert views.filter_counts(manifest, 45, PageFilter("disagrees"))["pages"] == 1
    assert kept_pages(manifest, rule="model") == {2, 4, 5} | {6, 8, 10}  # suggestions, else the picture rule
    manifest.set_override(doc, 2, False)  # decided by the curator: reviewed, no longer listed
    assert disagreeing() == set()
    state = views.model_state(manifest)
    assert (state.suggestions, state.kept, state.disagrees) == (4, 3, 0)
    assert views.model_state(manifest, rule="sigma").disagrees == 1


def test_learning_says_why_not_then_learns(featured):
    manifest, doc = featured
    for page in (0, 1, 3):
        manifest.set_override(doc, page, False)
    outcome = views.learn_from_overrides(manifest)
    assert not outcome.learned and "at least 10" in outcome.message and "you have made 3" in outcome.message
    with manifest.transaction():
        for page in range(10):
            manifest.set_override(doc, page, True)
    outcome = views.learn_from_overrides(manifest)
    assert not outcome.learned and "both" in outcome.message and "0 excluded" in outcome.message
    for page in (0, 1, 2, 3, 7, 9):
        manifest.set_override(doc, page, False)  # 4 included, 6 excluded
    outcome = views.learn_from_overrides(manifest)
    assert outcome.learned and outcome.labels == 10
    assert "Learned from 10 overrides (4 included, 6 excluded)" in outcome.message
    state = views.model_state(manifest)
    assert state.suggestions == 11 and state.learned_from == 10 and not state.stale and state.ready
    assert views.page_rows(manifest, 45, limit=1)[0]["confidence"] >= 0.5
    manifest.set_override(doc, 10, True)
    assert views.model_state(manifest).stale


def test_blocker_messages():
    assert "you have made 4 (3 included, 1 excluded)" in views.learn_blocker(3, 1)
    assert "Exclude 2 more" in views.learn_blocker(12, 0)
    assert "Include 1 more" in views.learn_blocker(1, 11)
    assert views.learn_blocker(5, 5) is None


def test_the_model_decides_only_when_asked_and_steps_back(featured):
    manifest, doc = featured
    manifest.rule = "sigma"
    views.use_model(manifest)
    assert manifest.rule == "model"
    views.use_model(manifest)  # twice changes nothing
    assert views.stop_using_model(manifest) == "sigma" and manifest.rule == "sigma"


def test_near_the_cutoff_is_measured_where_the_rule_cuts(featured):
    manifest, doc = featured
    assert views.near_measure(manifest, "picture") == views.near_measure(manifest, "model") == "picture_area"
    assert views.near_measure(manifest, "sigma") == "sigma"
    near = views.page_rows(manifest, 45, PageFilter("near", near=1.5, near_on="picture_area"), limit=100)
    assert {row["page"] for row in near} == {8, 9}  # 1.6 and 2.5 sq in, within 1.5 times of 2
    with pytest.raises(ValueError):
        PageFilter("near", near_on="ink").sql()


def test_near_duplicates_come_group_by_group(featured):
    manifest, doc = featured
    manifest.replace_duplicates([[(doc, 5), (doc, 6)], [(doc, 8), (doc, 4)]])
    rows = views.page_rows(manifest, 45, PageFilter("duplicates"), sort="sigma", limit=100)
    assert [(row["duplicate_group"], row["page"]) for row in rows] == [(1, 6), (1, 5), (2, 4), (2, 8)]
    assert views.filter_counts(manifest, 45, PageFilter("duplicates"))["pages"] == 4
    assert views.page_rows(manifest, 45, PageFilter("duplicates"), limit=2, offset=2)[0]["page"] == 4
    assert views.page_rows(manifest, 45, PageFilter("duplicates"), limit=2, offset=2, total=4)[0]["page"] == 4


def test_captions_for_one_page_and_a_whole_view(featured):
    manifest, doc = featured
    manifest.set_caption(doc, 5, "a lady in a walking dress")
    assert views.captions_for(manifest, [(doc, 5), (doc, 6)]) == {(doc, 5): "a lady in a walking dress"}
    kept = PageFilter("kept")
    assert views.caption_counts(manifest, 45, kept) == {"pages": 5, "captioned": 1}
    assert views.bulk_caption(manifest, 45, kept, "fashion plate", replace=False) == 4
    assert manifest.caption(doc, 5) == "a lady in a walking dress" and manifest.caption(doc, 4) == "fashion plate"
    assert views.bulk_caption(manifest, 45, kept, "  engraving  ") == 5
    assert set(manifest.captions().values()) == {"engraving"}
    assert views.bulk_caption(manifest, 45, kept, "") == 5
    assert manifest.captions() == {}


def test_the_rule_in_words(featured):
    manifest, _ = featured
    picture = views.rule_explanation("picture", 45, 2.0, unfeatured=1)
    assert "**picture**" in picture and "2 sq in" in picture and "0.15" in picture
    assert "σ only" in picture and "original method" in picture and "1 page(s)" in picture
    sigma = views.rule_explanation("sigma", 40, 0.03)
    assert "original method" in sigma and "**40**" in sigma
    assert "Nothing is learned yet" in views.rule_explanation("model", 45, 0.03)
    assert "**12**" in views.rule_explanation("model", 45, 0.03, suggestions=100, learned_from=12)
    assert views.rule_summary("sigma", 45, 0.03) == "σ only: σ > 45"
    assert views.rule_summary("picture", 45, 0.5) == "picture rule: a picture ≥ 0.5 sq in"
    assert views.unfeatured_count(manifest) == 1 and views.has_features(manifest)
    assert views.square_inches(2.0) == "2 sq in" and views.square_inches(48.4) == "48.4 sq in"
    # Never rounded up past a cutoff (kept to hundredths): 1.97 is not "2", 1.996 under a cutoff of 2 reads 1.99.
    assert views.square_inches(1.97) == "1.97 sq in" and views.square_inches(1.996) == "1.99 sq in"
    # σ beside its cutoff: 45.04 is kept by σ > 45 and must not read "45.0"; elsewhere a tenth.
    assert views.sigma_beside(45.04, 45) == "σ 45.04" and views.sigma_beside(44.96, 45.0) == "σ 44.96"
    assert views.sigma_beside(45.0, 45) == "σ 45.0" and views.sigma_beside(52.345, 45) == "σ 52.3"


def test_picture_boxes_are_drawn_over_the_thumbnail(featured):
    manifest, doc = featured
    width = manifest.conn.execute("SELECT width FROM pages WHERE doc_id = ? AND page = 5", (doc,)).fetchone()[0]
    manifest.set_pictures(doc, 5, [(width // 4, width // 10, width // 2, width // 2, 40.0), (0, 0, 5, 5, 0.1)])
    boxes = views.pictures_for(manifest, [(doc, 5), (doc, 6)])
    assert boxes == {(doc, 5): [(width // 4, width // 10, width // 2, width // 2, 40.0), (0, 0, 5, 5, 0.1)]}
    plain = Image.new("RGB", (200, 260), (230, 225, 210))
    out = io.BytesIO()
    plain.save(out, "JPEG")
    drawn = np.asarray(Image.open(io.BytesIO(views.outline_pictures(out.getvalue(), boxes[(doc, 5)], width))))
    x0 = round(200 / 4)
    assert drawn[50, x0 - 1:x0 + 2, 0].max() > 200 and drawn[50, x0 - 1:x0 + 2, 2].min() < 60  # orange edge
    assert np.abs(drawn[150, 150].astype(int) - (230, 225, 210)).max() < 8  # the page elsewhere untouched
    assert views.outline_pictures(out.getvalue(), [], width) == out.getvalue()


def test_a_finished_ingest_is_coloured_by_its_documents_even_with_50000_of_them(manifest):
    """The job's paths go to SQLite as one JSON list: 50,000 of them exceed its bound variables."""
    import json

    doc = manifest.register_document("ab" * 32, "/x/fake.pdf", 10)
    manifest.set_document(doc["id"], status="not-pdf", error="not a PDF (it starts with GIF89a)")
    many = ["/x/fake.pdf"] + [f"/y/{n}.pdf" for n in range(50_000)]
    assert [row["path"] for row in views.unreadable_documents(manifest, many)] == ["/x/fake.pdf"]
    assert views.job_outcome(manifest, {"kind": "ingest", "args": json.dumps({"paths": ["/x/fake.pdf"]})}) == "error"
    assert views.job_outcome(manifest, {"kind": "ingest", "args": json.dumps({"paths": many})}) == "warning"
    assert views.job_outcome(manifest, {"kind": "export", "args": "{}"}) == "success"
