"""The dashboard's counts come from pages counted in bins (curation.manifest.aggregates), kept in the manifest:
they equal a full recount with KEEP_SQL at any cutoff and under every rule, after ingest, overrides, picture
edits, undo, rescoring, new suggestions, a replaced document and settings changes; an override or a
picture edit does not make the bins be counted again."""

import numpy as np
import pytest

from apptest_support import add_features, filled_db
from curation import Manifest, views
from curation.manifest import aggregates, history, tallies
from curation.manifest.rules import INK_TONE_MIN, KEEP_SQL, LIVE_DOCUMENT_SQL
from curation.scoring.result import PageResult
from curation.views import PAGES_FROM, DISAGREES_FILTER_SQL, PageFilter

RULES = ("picture", "sigma", "model")


def recount(manifest, params) -> dict:
    row = manifest.conn.execute(
        f"SELECT COUNT(*), COALESCE(SUM({KEEP_SQL}), 0), COALESCE(SUM(o.keep IS NOT NULL), 0), "
        f"COALESCE(SUM(o.keep = 1), 0), COALESCE(SUM(o.keep = 0), 0), COALESCE(SUM(p.status = 'failed'), 0), "
        f"COALESCE(SUM(COALESCE({DISAGREES_FILTER_SQL}, 0)), 0), "
        f"COALESCE(SUM(p.sigma IS NOT NULL), 0), COALESCE(SUM(CASE WHEN p.sigma IS NOT NULL THEN {KEEP_SQL} END), 0), "
        f"COALESCE(SUM(p.picture_area IS NOT NULL), 0), "
        f"COALESCE(SUM(CASE WHEN p.picture_area IS NOT NULL THEN {KEEP_SQL} END), 0) "
        f"{PAGES_FROM} WHERE {LIVE_DOCUMENT_SQL}", params).fetchone()
    names = ("pages", "kept", "overridden", "included", "excluded", "failed", "disagrees", "with_sigma",
             "kept_with_sigma", "with_area", "kept_with_area")
    return dict(zip(names, map(int, row)))


def cutoffs(manifest) -> tuple[list[float], list[float]]:
    """Cutoffs on bin edges, inside bins, at pages' own values (ties) and outside every value."""
    sigmas = [row[0] for row in manifest.conn.execute("SELECT sigma FROM pages WHERE sigma IS NOT NULL LIMIT 4")]
    areas = [row[0] for row in manifest.conn.execute(
        "SELECT picture_area FROM pages WHERE picture_area > 0 LIMIT 3")]
    return [0.0, 0.3, 25.0, 31.7, 45.0, 45.05, 61.3, 500.0, *sigmas], [0.0, 0.05, 0.1, 1.0, 2.0, 7.77, 2000.0, *areas]


def assert_counts_are_exact(manifest):
    thresholds, areas = cutoffs(manifest)
    for rule in RULES:
        for threshold in thresholds:
            for area in (areas if rule != "sigma" else areas[:1]):
                params = views.decision_params(manifest, threshold, rule, area)
                want = recount(manifest, params)
                tally = tallies.tally(manifest, params)
                got = tally.counts()
                where = (rule, threshold, area)
                assert {key: got[key] for key in ("pages", "kept", "overridden", "included", "excluded", "failed")} == \
                    {key: want[key] for key in ("pages", "kept", "overridden", "included", "excluded", "failed")}, where
                assert tally.counts("disagrees")["pages"] == want["disagrees"], where
                sigma = views.histogram(manifest, threshold, bins=15, rule=rule, picture_area_min=area)
                assert (int(sigma.total.sum()), int(sigma.kept.sum())) == (want["with_sigma"], want["kept_with_sigma"])
                picture = views.picture_histogram(manifest, threshold, bins=45, rule=rule, picture_area_min=area)
                if want["with_area"]:
                    assert (int(picture.total.sum()), int(picture.kept.sum())) == \
                        (want["with_area"], want["kept_with_area"]), where
    for decision in ("kept", "rejected", "overridden", "disagrees", "failed"):
        assert views.filter_counts(manifest, None, PageFilter(decision))["pages"] == \
            views.filter_counts(manifest, None, PageFilter(decision, doc_id=_first_doc(manifest)))["pages"] + \
            views.filter_counts(manifest, None, PageFilter(decision, doc_id=_second_doc(manifest)))["pages"]


def _first_doc(manifest):
    return manifest.conn.execute("SELECT MIN(id) FROM documents").fetchone()[0]


def _second_doc(manifest):
    return manifest.conn.execute("SELECT MAX(id) FROM documents").fetchone()[0]


@pytest.fixture
def manifest(tmp_path, monkeypatch):
    monkeypatch.setenv(history.USER_VARIABLE, "ana")
    db = filled_db(tmp_path / "m.sqlite", documents=2, pages=120, seed=3)
    add_features(db, seed=3)
    with Manifest(db) as m:
        with m.transaction():  # the figures' corner cases: none at all, too little ink, no ink tone, failed
            m.conn.execute("UPDATE pages SET picture_area = NULL, ink_tone = NULL WHERE page % 11 = 0")
            m.conn.execute(f"UPDATE pages SET ink_tone = {INK_TONE_MIN / 2} WHERE page % 13 = 0")
            m.conn.execute("UPDATE pages SET ink_tone = NULL WHERE page % 17 = 0 AND picture_area IS NOT NULL")
            m.conn.execute("UPDATE pages SET status = 'failed', sigma = NULL, picture_area = NULL WHERE page % 29 = 5")
        yield m


def keys(manifest, count, offset=0):
    return [tuple(row) for row in manifest.conn.execute(
        "SELECT doc_id, page FROM pages WHERE status = 'ok' ORDER BY sigma LIMIT ? OFFSET ?", (count, offset))]


def test_pages_a_float_step_from_a_cutoff_or_a_bin_s_edge_are_counted_exactly(manifest):
    # A σ cutoff on a bin's edge (the slider's tenths) guesses every bin from the edge up kept and reads only the
    # pages beside it: pages on it, a float step either side, inside the margin read apart and just past it.
    import math

    def nudged(x: float, steps: int) -> float:
        for _ in range(abs(steps)):
            x = math.nextafter(x, math.copysign(math.inf, steps))
        return x

    sigmas = [nudged(45.0, n) for n in (-2, -1, 0, 1, 2)] + [45.0 - 2e-6, 45.0 + 2e-6, 45.0 - 1e-6, 45.0 + 1e-6,
                                                                45.0999999, 0.0, nudged(0.0, 1), nudged(0.3, -1), 0.3]
    # The picture cutoff reads only the part of its bin between the cutoff and the bin's nearer edge: pages on
    # each side of the cutoffs and of their bins' edges.
    edges = [aggregates.AREA_FLOOR * 10 ** ((aggregates.area_bin(a) + n) / aggregates.AREA_STEPS) for a in (2.0, 7.77)
             for n in (0, 1)]
    areas = [nudged(a, n) for a in (2.0, 7.77, *edges) for n in (-1, 0, 1)] + [2.0 * (1 + 2e-6), 7.77 * (1 - 2e-6)]
    with manifest.transaction():
        for (doc_id, page), sigma in zip(keys(manifest, len(sigmas), 3), sigmas):
            manifest.conn.execute("UPDATE pages SET sigma = ? WHERE doc_id = ? AND page = ?", (sigma, doc_id, page))
        for (doc_id, page), area in zip(keys(manifest, len(areas), 40), areas):
            manifest.conn.execute("UPDATE pages SET picture_area = ? WHERE doc_id = ? AND page = ?", (area, doc_id, page))
    assert_counts_are_exact(manifest)


def test_counts_equal_a_recount_after_every_kind_of_change(manifest):
    assert_counts_are_exact(manifest)  # as ingested

    for n, key in enumerate(keys(manifest, 30, 40)):  # overrides, one by one and in bulk
        manifest.set_override(*key, n % 3 != 0)
    views.bulk_override(manifest, 45, PageFilter("near", near=1.0), keep=False)
    assert_counts_are_exact(manifest)

    doc_id, page = keys(manifest, 1, 100)[0]  # picture edits: a page decided by its pictures
    manifest.set_pictures(doc_id, page, [(10, 10, 300, 300, 6.0), (400, 400, 450, 450, 0.3)])
    picture = manifest.conn.execute("SELECT id FROM pictures WHERE doc_id = ? AND page = ? AND area = 0.3",
                                    (doc_id, page)).fetchone()[0]
    manifest.set_picture_override(picture, True)
    manifest.add_picture(*keys(manifest, 1, 150)[0], (0, 0, 500, 500))
    assert manifest.conn.execute("SELECT COUNT(*) FROM pages WHERE pictures_included IS NOT NULL").fetchone()[0] >= 2
    assert_counts_are_exact(manifest)

    manifest.undo()  # the added picture
    manifest.undo()  # the bulk exclude
    assert_counts_are_exact(manifest)

    rows = [(d, p, (d + p) % 3 == 0, 0.8) for d, p in keys(manifest, 1000)]  # the model's suggestions
    manifest.replace_suggestions(rows)
    assert_counts_are_exact(manifest)

    doc_id, page = keys(manifest, 1, 10)[0]  # rescoring moves a page's figures
    manifest.save_pages(doc_id, [PageResult(page=page, status="ok", sigma=88.8, width=1000, height=1400,
                                            features={"ink_tone": 0.7, "picture_area": 12.5, "picture_count": 1})])
    assert_counts_are_exact(manifest)

    manifest.threshold, manifest.picture_area_min, manifest.rule = 38.0, 4.5, "sigma"  # settings
    saved = views.figures(manifest, None, 45.0, rule="picture")
    assert saved["kept_saved"] == recount(manifest, views.decision_params(manifest, 45.0))["kept"]
    assert views.figures(manifest, None)["kept"] == manifest.summary()["kept"]
    assert_counts_are_exact(manifest)

    with manifest.transaction():  # a document replaced by new content leaves the counts
        manifest.conn.execute("UPDATE documents SET status = 'replaced' WHERE id = ?", (_first_doc(manifest),))
    assert_counts_are_exact(manifest)


def test_overrides_and_picture_edits_leave_the_bins_alone_new_figures_count_them_again(manifest):
    views.figures(manifest, 45)
    counted = aggregates.version(manifest.conn)
    stored = manifest.conn.execute("SELECT value FROM changes WHERE name = 'binned_pages'").fetchone()[0]
    assert stored == counted[0]  # stored for every other process
    key = keys(manifest, 1)[0]
    manifest.set_override(*key, True)
    manifest.add_picture(*keys(manifest, 1, 5)[0], (0, 0, 100, 100))
    manifest.set_setting("threshold", "40")
    moved = aggregates.version(manifest.conn)
    assert moved[:2] == counted[:2] and moved[2] > counted[2]  # the bins stand; the decided pages are read again
    manifest.save_pages(key[0], [PageResult(page=key[1], status="ok", sigma=70.0, width=10, height=10)])
    assert aggregates.version(manifest.conn)[0] > counted[0]
    manifest.replace_suggestions([(*key, True, 0.9)])
    assert aggregates.version(manifest.conn)[1] == counted[1] + 1


def test_another_process_reads_the_stored_bins(manifest, tmp_path):
    first = views.figures(manifest, 45)
    aggregates._memo.clear()
    with Manifest(manifest.path) as other:
        assert views.figures(other, 45) == first
    rows = manifest.conn.execute("SELECT SUM(pages) FROM page_bins").fetchone()[0]
    assert rows == views.page_count(manifest)


def test_the_sigma_histogram_has_bins_a_whole_number_of_tenths_wide(manifest):
    hist = views.histogram(manifest, 45, bins=7, span=(0, 100))
    widths = np.diff(hist.edges)
    assert len(hist.kept) == 7 and np.allclose(widths, widths[0])
    assert round(widths[0] * 10, 9) == int(round(widths[0] * 10)) and hist.edges[-1] >= 100


def _decided_keys(manifest) -> set:
    pages = tallies.decided(manifest)
    return set(zip(pages["doc_id"].tolist(), pages["page"].tolist(), pages["override"].tolist()))


def test_the_decided_pages_follow_the_history_by_key_and_a_writer_that_does_not_record(manifest):
    first, second, third = keys(manifest, 3, 20)
    manifest.set_override(*first, True)
    tallies.decided(manifest)  # read in full
    read = []
    original = tallies._decided_pages
    tallies._decided_pages = lambda conn, rowids, params=(): read.append(rowids) or original(conn, rowids, params)
    try:
        manifest.set_override(*second, False)
        manifest.set_override(*first, None)
        assert _decided_keys(manifest) == {(*second, 0)}
        assert len(read) == 1 and "history_changes" in read[0]  # only the pages changed since, by key
        with manifest.transaction():  # no history: the counter moved, nothing recorded, so all are read again
            manifest.conn.execute("INSERT INTO overrides VALUES (?, ?, 1, 'now', 'now')", third)
        assert _decided_keys(manifest) == {(*second, 0), (*third, 1)}
        assert "history_changes" not in read[-1]
    finally:
        tallies._decided_pages = original
    assert_counts_are_exact(manifest)


def test_near_the_cutoff_is_counted_exactly_from_the_bins_and_the_pages_at_its_ends(manifest):
    manifest.set_override(*keys(manifest, 1, 30)[0], True)
    sigmas, areas = cutoffs(manifest)
    for rule in RULES:
        for threshold, area in zip(sigmas, areas + areas[:len(sigmas) - len(areas)]):
            params = views.decision_params(manifest, threshold, rule, area or 2.0)
            for flt in (PageFilter("near", near=near, near_on="sigma") for near in (0.05, 0.5, 5.0, 100.0)):
                assert views.filter_counts(manifest, threshold, flt, rule=rule, picture_area_min=area or 2.0) == \
                    _near_recount(manifest, params, flt), (rule, threshold, flt.near)
            for flt in (PageFilter("near", near=near, near_on="picture_area") for near in (1.01, 2.0, 50.0)):
                assert views.filter_counts(manifest, threshold, flt, rule=rule, picture_area_min=area or 2.0) == \
                    _near_recount(manifest, params, flt), (rule, area, flt.near)


def _near_recount(manifest, params, flt) -> dict:
    condition, near = flt.sql()
    row = manifest.conn.execute(
        f"SELECT COUNT(*), COALESCE(SUM({KEEP_SQL}), 0), COALESCE(SUM(o.keep IS NOT NULL), 0), "
        f"COALESCE(SUM(o.keep = 1), 0), COALESCE(SUM(o.keep = 0), 0) {PAGES_FROM} "
        f"WHERE {LIVE_DOCUMENT_SQL} AND {condition}", {**params, **near}).fetchone()
    counts = dict(zip(("pages", "kept", "overridden", "included", "excluded"), map(int, row)))
    return {**counts, "rejected": counts["pages"] - counts["kept"]}
