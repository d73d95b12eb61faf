"""Threshold's counts at a cutoff being tried are a lookup (curation.views.cutoff_counts) and stay exact: the
pictures kept under every rule, at every σ and area cutoff on the sliders' grids and on the values the pages
hold, equal a scan of every picture; with overrides, picture edits, the model's suggestions, pages without
features or ink, a saved rule switch whose stored decisions are stale, a curator's change after the table was
made, and a score cutoff being tried (pictures and pages)."""

import math
import time

import pytest

from curation import Manifest, views
from curation.manifest import history
from curation.manifest.rules import KEEP_SQL
from curation.views import cutoff_counts
from curation.views import picture_views as pv
from test_picture_decisions import documents, picture_id
from test_picture_views import scored
from test_picture_score_cutoff import learned_document

RULES = ("picture", "sigma", "model")
# The pages' σ (30, 40, 50, 60) and the pictures' areas (0.48, 2.2, 5.2, 48), on them and a grid step either side.
SIGMAS = (0.0, 29.9, 30.0, 30.1, 39.9, 40.0, 45.0, 50.0, 50.1, 59.9, 60.0, 60.1, 100.0)
AREAS = (0.0, 0.47, 0.48, 0.49, 2.19, 2.2, 2.21, 5.2, 5.21, 47.99, 48.0, 1000.0)


@pytest.fixture
def manifest(tmp_path, monkeypatch):
    monkeypatch.setenv(history.USER_VARIABLE, "ana")
    with Manifest(tmp_path / "m.sqlite") as m:
        yield m


def decided_by_curators(manifest):
    """Two documents with every kind of curator's work and the pages the rule reads σ on."""
    docs = documents(manifest)
    manifest.set_override(docs[0], 1, True)  # a stock cut's page included
    manifest.set_override(docs[1], 0, False)  # an engraving's page excluded
    manifest.set_picture_override(picture_id(manifest, docs[0], 0, 2), True)  # a stock cut included
    manifest.set_picture_override(picture_id(manifest, docs[1], 2), False)  # a plate excluded
    manifest.delete_picture(picture_id(manifest, docs[0], 3))  # the cut near the cutoff deleted
    manifest.add_picture(docs[1], 1, (100, 100, 300, 300))  # a small picture added
    manifest.set_picture_box(picture_id(manifest, docs[0], 2), (100, 100, 300, 300))  # the plate redrawn small
    manifest.conn.execute("UPDATE pages SET picture_area = NULL WHERE doc_id = ? AND page = 3", (docs[1],))  # no features
    manifest.conn.execute("UPDATE pages SET ink_tone = NULL WHERE doc_id = ? AND page = 0", (docs[0],))  # no ink measure
    manifest.replace_suggestions([(docs[0], 0, True, 0.9), (docs[0], 3, False, 0.8), (docs[1], 2, True, 0.7)])
    return docs


def assert_exact(manifest, rule, sigma, area, score=None):
    tried = {"rule": rule, "picture_area_min": area, "picture_score_min": score}
    figures = cutoff_counts.picture_figures(manifest, sigma, manifest.threshold, **tried)
    scanned = pv.scanned_counts(manifest, sigma, **tried)
    assert (figures["kept"], figures["excluded"]) == (scanned["kept"], scanned["excluded"]), (rule, sigma, area, score)


def test_every_cutoff_on_the_grid_is_looked_up_and_counts_what_a_scan_of_every_picture_counts(manifest):
    decided_by_curators(manifest)
    for rule in RULES:
        for sigma in SIGMAS:
            for area in AREAS:
                params = views.decision_params(manifest, sigma, rule, area)
                assert cutoff_counts.pictures_kept(manifest, params) is not None  # a lookup
                assert_exact(manifest, rule, sigma, area)


def test_a_table_keeps_a_row_per_cell_however_many_documents_fall_in_it(manifest):
    decided_by_curators(manifest)
    for rule in RULES:
        table = cutoff_counts.table(manifest, rule)
        cells = {(int(s), int(k)) for s, k, _ in table.both}
        assert len(cells) == len(table.both)  # the documents' rows of the curators' part summed by cell


def test_cutoffs_between_grid_steps_are_not_looked_up_and_still_count_exactly(manifest):
    decided_by_curators(manifest)
    for sigma, area in [(45.05, 2.2), (40.0, 2.205), (30.000001, 0.4800001), (-1.0, 2.0), (45.0, 1000.01), (250.0, 2.0)]:
        assert cutoff_counts.pictures_kept(manifest, views.decision_params(manifest, sigma, "picture", area)) is None
        for rule in RULES:
            assert_exact(manifest, rule, sigma, area)


def test_a_saved_rule_switch_with_stale_decisions_counts_both_sides_from_the_tables(manifest, monkeypatch):
    decided_by_curators(manifest)
    manifest.rule = "sigma"  # every stored decision stale until caught up
    monkeypatch.setattr(pv.picture_decisions, "is_saved", lambda *args: False)  # as while the decide job runs
    figures = cutoff_counts.picture_figures(manifest, 40.0, manifest.threshold, rule="picture", picture_area_min=2.2)
    saved = pv.scanned_counts(manifest, None)
    assert (figures["kept_saved"], figures["excluded_saved"]) == (saved["kept"], saved["excluded"])
    assert_exact(manifest, "picture", 40.0, 2.2)


def test_the_table_follows_a_curators_change_and_its_undo_counting_again_only_the_document_changed(manifest, monkeypatch):
    docs = decided_by_curators(manifest)
    passes = []
    real = cutoff_counts._cells
    monkeypatch.setattr(cutoff_counts, "_cells", lambda m, rule, part, docs="": passes.append(
        (part, docs)) or real(m, rule, part, docs))
    assert_exact(manifest, "picture", 45.0, 5.2)  # (2 sq in is saved: the stored counts)
    assert_exact(manifest, "picture", 45.0, 0.48)
    assert passes == [("rule", ""), ("decided", "")]  # one scan; the second cutoff was a lookup
    for change in (lambda: manifest.set_override(docs[0], 2, False), lambda: manifest.set_picture_override(
            picture_id(manifest, docs[1], 0, 2), True), manifest.undo, manifest.undo,
            lambda: manifest.add_picture(docs[0], 1, (500, 500, 900, 900)), manifest.undo):
        change()
        assert_exact(manifest, "picture", 45.0, 5.2)
    # The pictures as found are not read again; of the pages curators decided, only the changed document's.
    assert passes[2:] == [("decided", str(docs[0])), ("decided", str(docs[1])), ("decided", str(docs[1])),
                          ("decided", str(docs[0])), ("decided", str(docs[0])), ("decided", str(docs[0]))]
    manifest.replace_suggestions([(docs[1], 1, True, 0.6)])  # a new fit: only the model's table is made again
    assert_exact(manifest, "picture", 45.0, 5.2)
    assert_exact(manifest, "model", 45.0, 5.2)
    assert passes[-2:] == [("rule", ""), ("decided", "")]


def pages_kept_by_scan(manifest, params):
    return manifest.conn.execute(
        f"SELECT COALESCE(SUM({KEEP_SQL}), 0) FROM pages p JOIN documents d ON d.id = p.doc_id LEFT JOIN overrides o "
        "ON o.doc_id = p.doc_id AND o.page = p.page WHERE d.status != 'replaced' AND p.status = 'ok'",
        params).fetchone()[0]


def test_a_score_cutoff_being_tried_moves_the_pictures_and_the_pages_kept_before_it_is_saved(manifest):
    doc = learned_document(manifest)  # scores 0.9, 0.12, 0.15, 0.06; saved cutoff 0.2
    manifest.set_picture_override(picture_id(manifest, doc, 0, 1), False)  # a curator's exclude holds
    for rule in RULES:
        for score in (0.05, 0.06, 0.1, 0.12, 0.13, 0.15, 0.2, 0.5, 0.9, 0.95):
            for area in (2.0, 3.0, 4.0, 5.0):
                assert_exact(manifest, rule, 30.0, area, score)
                figures = views.figures(manifest, 30.0, manifest.threshold, rule=rule, picture_area_min=area,
                                        picture_score_min=score)
                params = {**views.decision_params(manifest, 30.0, rule, area), "picture_score_min": score}
                assert figures["kept"] == pages_kept_by_scan(manifest, params), (rule, score, area)
    saved = views.figures(manifest, 30.0, manifest.threshold, picture_area_min=2.0)
    tried = views.figures(manifest, 30.0, manifest.threshold, picture_area_min=2.0, picture_score_min=0.1)
    assert tried["kept"] > saved["kept"] == tried["kept_saved"]  # the doubtful cut's page counts before Save


def test_a_sigma_or_area_one_float_step_from_a_cutoff_falls_on_the_side_sql_compares_it_to(manifest):
    doc = manifest.register_document(sha256="c" * 64, path="/archive/c.pdf", size=1)["id"]
    near = [math.nextafter(2.2, 0), 2.2, math.nextafter(2.2, 9), math.nextafter(0.05, 0), math.nextafter(0.2, 0)]  # ×100 rounds to 5, 20
    for page, (sigma, area) in enumerate(zip([math.nextafter(45.0, 0), 45.0, math.nextafter(45.0, 99),
                                              math.nextafter(1.7, 9), math.nextafter(3.3, 9)], near)):  # ×10 rounds to 17, 33
        scored(manifest, doc, page, [(10, 10, 200, 200, area)], sigma=sigma)
    manifest.set_document(doc, status="ok", pages=5)
    for rule in ("picture", "sigma"):
        for sigma in (1.6, 1.7, 1.8, 3.3, 44.9, 45.0, 45.1):
            for area in (0.04, 0.05, 0.06, 0.2, 2.19, 2.2, 2.21):
                assert_exact(manifest, rule, sigma, area)


def test_a_rescore_that_keeps_the_pages_figures_but_moves_a_pictures_score_is_counted_again(manifest):
    doc = learned_document(manifest)
    assert_exact(manifest, "picture", 30.0, 3.5)
    from test_picture_score_cutoff import PAGES, scored as scored_learned
    moved = [[entry[:7] + [0.5 if entry[7] == 0.12 else entry[7]] for entry in entries] for entries in PAGES]
    for page, entries in enumerate(moved):  # the doubtful cut now sure; the page's largest picture is unchanged
        scored_learned(manifest, doc, page, entries)
    assert_exact(manifest, "picture", 30.0, 3.5)
    assert_exact(manifest, "picture", 30.0, 2.5)


def test_without_counting_a_move_is_counted_from_the_pictures_between_and_another_rule_waits_for_the_job(manifest, monkeypatch):
    decided_by_curators(manifest)
    counted = []
    monkeypatch.setattr(cutoff_counts, "_cells", lambda *args: counted.append(args) or pytest.fail("scanned"))
    monkeypatch.setattr(pv, "scanned_counts", lambda *args, **kwargs: pytest.fail("scanned"))
    figures = cutoff_counts.picture_figures(manifest, 45.0, manifest.threshold, rule="picture", picture_area_min=5.2,
                                            count=False)  # the saved rule, its stored decisions current: moved
    monkeypatch.undo()
    assert (figures["kept"], figures["excluded"]) == tuple(
        pv.scanned_counts(manifest, 45.0, picture_area_min=5.2)[k] for k in ("kept", "excluded"))
    monkeypatch.setattr(cutoff_counts, "_cells", lambda *args: pytest.fail("scanned"))
    tried = cutoff_counts.picture_figures(manifest, 45.0, manifest.threshold, rule="sigma", count=False)
    assert tried["kept"] is None and tried["excluded"] is None  # another rule: the job's to count
    assert tried["kept_saved"] == pv.filter_counts(manifest, None)["kept"]  # the saved side: the stored counts
    assert not cutoff_counts.stored_current(manifest)


def forget_this_process(monkeypatch):
    """As another process: nothing counted in memory."""
    monkeypatch.setattr(cutoff_counts, "_parts", {})
    monkeypatch.setattr(cutoff_counts, "_tables", {})


def test_the_counting_job_stores_every_rules_table_and_another_process_looks_them_up_without_a_scan(manifest, monkeypatch):
    docs = decided_by_curators(manifest)
    cutoff_counts.count_job(manifest)
    assert manifest.latest_job(cutoff_counts.COUNT_JOB)["status"] == "done"
    assert cutoff_counts.stored_current(manifest)
    forget_this_process(monkeypatch)
    passes = []
    real = cutoff_counts._cells
    monkeypatch.setattr(cutoff_counts, "_cells", lambda m, rule, part, docs="": passes.append(
        (rule, part, docs)) or real(m, rule, part, docs))
    for rule in RULES:
        for sigma, area in ((45.0, 5.2), (30.0, 0.48), (60.0, 48.0)):
            figures = cutoff_counts.picture_figures(manifest, sigma, manifest.threshold, rule=rule,
                                                    picture_area_min=area, count=False)
            scanned = pv.scanned_counts(manifest, sigma, rule=rule, picture_area_min=area)
            assert (figures["kept"], figures["excluded"]) == (scanned["kept"], scanned["excluded"]), (rule, sigma, area)
    assert passes == []  # read as the job stored them
    manifest.set_override(docs[0], 2, False)  # a curator's change: the script run counts its document again
    for rule in RULES:
        assert cutoff_counts.pictures_kept(manifest, views.decision_params(manifest, 45.0, rule, 5.2), count=False) \
            == pv.scanned_counts(manifest, 45.0, rule=rule, picture_area_min=5.2)["kept"]
    assert passes == [(rule, "decided", str(docs[0])) for rule in RULES]
    monkeypatch.setattr(cutoff_counts, "FOLLOW_DOCS", 0)  # as after a bulk action over many documents
    forget_this_process(monkeypatch)
    manifest.set_override(docs[1], 3, True)
    assert cutoff_counts.table(manifest, "sigma", count=False) is None  # left to the job
    assert cutoff_counts.stored_current(manifest)  # the page launches the job for its state all the same
    cutoff_counts.count_and_store(manifest)
    forget_this_process(monkeypatch)
    passes.clear()
    for rule in RULES:
        assert_exact(manifest, rule, 45.0, 5.2)
    assert passes == []


def test_a_new_fit_or_a_rescore_leaves_the_stored_tables_stale_and_the_jobs_that_make_them_count_them_again(manifest, monkeypatch):
    docs = decided_by_curators(manifest)
    cutoff_counts.count_and_store(manifest)
    manifest.replace_suggestions([(docs[1], 1, True, 0.6)])  # a new fit
    assert not cutoff_counts.stored_current(manifest)
    assert cutoff_counts.stored_current(manifest, ("picture", "sigma"))  # only the model's depends on it
    forget_this_process(monkeypatch)
    assert cutoff_counts.table(manifest, "model", count=False) is None
    cutoff_counts.counted_after_job(manifest)
    assert cutoff_counts.stored_current(manifest)
    forget_this_process(monkeypatch)
    monkeypatch.setattr(cutoff_counts, "_cells", lambda *args: pytest.fail("scanned"))
    assert cutoff_counts.table(manifest, "model", count=False) is not None
    monkeypatch.undo()
    for rule in RULES:
        assert_exact(manifest, rule, 40.0, 2.2)
