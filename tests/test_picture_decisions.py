"""Each picture's decision stored under the saved settings and the pictures counted per document stay what
the rule (rules.EXPORTED_SQL, evaluated) says after every kind of change, in the transaction of the change;
an older manifest gets them when it is opened."""

import sqlite3

import pytest
from click.testing import CliRunner

from curation import Manifest
from curation.cli import cli
from curation.manifest import history, picture_decisions, schema, store
from curation.scoring.result import PageResult
from curation.views import cutoff_counts
from curation.views import picture_views as pv
from test_picture_views import ENGRAVING, NEAR_CUT, PLATE, STOCK_CUT, scored


@pytest.fixture
def manifest(tmp_path, monkeypatch):
    monkeypatch.setenv(history.USER_VARIABLE, "ana")
    with Manifest(tmp_path / "m.sqlite") as m:
        yield m


def documents(manifest):
    """Two documents: engravings, stock cuts, a plate, a picture near the cutoff, on pages of varied σ."""
    made = []
    for name in "ab":
        doc = manifest.register_document(sha256=name * 64, path=f"/archive/{name}.pdf", size=1)["id"]
        for page, (boxes, sigma) in enumerate([([ENGRAVING, STOCK_CUT], 60.0), ([STOCK_CUT], 30.0),
                                               ([PLATE], 50.0), ([NEAR_CUT], 40.0)]):
            scored(manifest, doc, page, boxes, sigma=sigma)
        made.append(doc)
    return made


def evaluated(manifest) -> dict[int, int | None]:
    """Each picture's decision as the rule says it now: exported or not; None on a page not scored 'ok'."""
    rows = manifest.conn.execute(
        f"SELECT x.id, CASE WHEN p.status = 'ok' THEN {pv.EXPORTED_SQL} END FROM pictures x JOIN pages p "
        "ON p.doc_id = x.doc_id AND p.page = x.page LEFT JOIN overrides o ON o.doc_id = x.doc_id AND o.page = x.page",
        manifest.decision_params()).fetchall()
    return dict(map(tuple, rows))


def assert_stored_as_evaluated(manifest, docs):
    assert picture_decisions.catch_up(manifest, budget_s=float("inf")) is None  # what a rule switch left stale
    stored = dict(map(tuple, manifest.conn.execute("SELECT id, exported FROM pictures").fetchall()))
    assert stored == evaluated(manifest)
    assert pv.filter_counts(manifest, None) == pv.scanned_counts(manifest, None)
    for doc in docs:
        assert pv.filter_counts(manifest, None, doc) == pv.scanned_counts(manifest, None, doc)


def picture_id(manifest, doc, page, number=1):
    return manifest.picture_by_number(doc, page, number)["id"]


def test_stored_decisions_and_counts_follow_every_change_and_its_undo(manifest):
    docs = documents(manifest)
    doc = docs[0]
    check = lambda: assert_stored_as_evaluated(manifest, docs)  # noqa: E731
    check()
    before = pv.filter_counts(manifest, None)
    manifest.set_picture_override(picture_id(manifest, doc, 1), True)  # a stock cut included
    check()
    assert pv.filter_counts(manifest, None)["kept"] == before["kept"] + 1
    manifest.set_picture_override(picture_id(manifest, doc, 0), False)  # an engraving excluded
    check()
    manifest.delete_picture(picture_id(manifest, doc, 2))  # the plate is not a picture
    check()
    assert pv.filter_counts(manifest, None)["deleted"] == 1
    added = manifest.add_picture(doc, 1, [600, 700, 900, 1000])
    check()
    manifest.set_picture_box(picture_id(manifest, doc, 3), [500, 900, 560, 960])  # redrawn smaller: excluded
    check()
    manifest.set_override(docs[1], 0, False)  # a page excluded: its pictures are not exported
    check()
    manifest.set_override(docs[1], 1, True)
    check()
    overridden = pv.filter_counts(manifest, None)["overridden"]
    assert overridden == 4  # included, excluded, added, redrawn
    for _ in range(7):  # every change above, undone one by one
        manifest.undo()
        check()
    assert manifest.picture(added)["deleted"] == 1  # an added picture undone is deleted, not dropped
    assert pv.filter_counts(manifest, None) == {**before, "deleted": 1, "all": before["all"] + 1}  # shown dim in All


def test_stored_decisions_follow_the_settings_a_rescore_and_the_model(manifest):
    docs = documents(manifest)
    check = lambda: assert_stored_as_evaluated(manifest, docs)  # noqa: E731
    manifest.picture_area_min = 10.0  # only the plates are large enough
    check()
    assert pv.filter_counts(manifest, None)["kept"] == 2
    manifest.rule = "sigma"
    check()
    manifest.threshold = 35.0
    check()
    manifest.undo()  # the σ cutoff back
    check()
    manifest.rule = "model"
    manifest.replace_suggestions([(doc, page, page % 2 == 1, 0.9) for doc in docs for page in range(4)])
    check()
    assert pv.filter_counts(manifest, None)["kept"] == 4  # the stock cuts and the near cuts
    manifest.rule = "picture"
    manifest.set_picture_override(picture_id(manifest, docs[0], 0, 2), True)
    scored(manifest, docs[0], 0, [ENGRAVING])  # rescored: the included stock cut no longer found, kept
    scored(manifest, docs[1], 2, [PLATE, NEAR_CUT])  # a picture found anew
    check()
    assert pv.filter_counts(manifest, None)["gone"] == 1
    manifest.save_pages(docs[1], [scored_failed(3)])  # a page that fails is not counted
    check()
    manifest.conn.execute("DELETE FROM pictures WHERE doc_id = ?", (docs[1],))
    check()
    manifest.set_document(docs[0], status="replaced")
    check()
    assert pv.filter_counts(manifest, None)["all"] == 0


def test_a_cutoff_moved_up_and_down_decides_again_the_pictures_it_can_change(manifest):
    docs = documents(manifest)
    check = lambda: assert_stored_as_evaluated(manifest, docs)  # noqa: E731
    manifest.set_picture_override(picture_id(manifest, docs[0], 0, 2), False)  # an edited page: its own figures
    manifest.conn.execute("UPDATE pages SET picture_area = NULL WHERE doc_id = ? AND page = 1", (docs[1],))
    check()  # a page without features: the picture rule falls back to σ
    # Page figures apart from their pictures' areas, so each place the decision reads the area cutoff (the
    # picture's area, its page's, its edited page's) is alone between two cutoffs tried below.
    manifest.conn.execute("UPDATE pages SET picture_area = 7.0 WHERE doc_id = ? AND page = 2", (docs[0],))
    manifest.conn.execute("UPDATE pages SET pictures_auto_area = 3.0 WHERE doc_id = ? AND page = 0", (docs[0],))
    check()
    for rule in ("picture", "sigma", "picture"):
        manifest.rule = rule
        check()
        # Across the pages' σ and onto it, from above and from below.
        for threshold in (35.0, 55.0, 45.0, 29.0, 61.0, 40.0, 35.0, 50.0, 40.0 + 1e-9, 45.0):
            manifest.threshold = threshold
            check()
        for area in (1.0, 5.2, 3.0, 10.0, 7.0, 48.0, 48.5, 0.48, 0.5, 2.2, 2.0):  # onto and between the pictures' areas
            manifest.picture_area_min = area
            check()
    kept = pv.filter_counts(manifest, None)["kept"]
    with manifest.recording("setting"):  # the Threshold page's Save: one action
        manifest.threshold, manifest.picture_area_min, manifest.rule = 58.0, 6.0, "sigma"
    check()
    manifest.undo()
    check()
    assert pv.filter_counts(manifest, None)["kept"] == kept
    for key in picture_decisions.DECIDING_SETTINGS:  # removed: back to the defaults
        manifest.conn.execute("DELETE FROM settings WHERE key = ?", (key,))
        check()


def test_a_rule_switch_is_caught_up_a_chunk_at_a_time_while_readers_evaluate_the_rule(manifest, monkeypatch):
    docs = documents(manifest)
    monkeypatch.setattr(picture_decisions, "CHUNK", 3)
    monkeypatch.setattr(picture_decisions, "BUDGET_S", 0.0)  # a reader decides one chunk
    total = manifest.conn.execute("SELECT COUNT(*) FROM pictures").fetchone()[0]
    manifest.rule = "sigma"
    assert picture_decisions.stale_from(manifest.conn) == 0
    assert manifest.conn.execute("SELECT COUNT(*) FROM pictures WHERE exported IS NOT NULL").fetchone()[0] == total
    caught, reads = [], 0
    while picture_decisions.stale_from(manifest.conn) is not None:
        caught.append(picture_decisions.stale_from(manifest.conn))
        # While stale the counts are the rule's, evaluated: the stored ones may not hold yet.
        assert pv.filter_counts(manifest, None) == pv.scanned_counts(manifest, None)
        reads += 1
        assert reads <= total
    assert caught == sorted(caught) and len(caught) >= total // 3 - 1  # resumed, never restarted
    assert_stored_as_evaluated(manifest, docs)
    manifest.undo()  # the switch undone: stale again
    assert picture_decisions.stale_from(manifest.conn) == 0
    left, whole = picture_decisions.catch_up(manifest)  # progress: left, in all
    assert whole == total and total - 3 <= left < total
    manifest.picture_area_min = 10.0  # changes meanwhile are decided under the saved settings at once
    manifest.set_picture_override(picture_id(manifest, docs[1], 3), True)
    manifest.rule = "picture"  # no change from the rule undone to: nothing stale is added
    assert_stored_as_evaluated(manifest, docs)
    manifest.rule = "picture"
    assert picture_decisions.stale_from(manifest.conn) is None


def test_an_area_cutoff_moved_over_many_pictures_leaves_them_to_the_catch_up_and_a_small_move_does_not(manifest):
    docs = documents(manifest)
    manifest.set_picture_override(picture_id(manifest, docs[0], 0, 2), True)  # a curator's include
    # The triggers as a manifest makes them, with "many" at over four pictures and pages between the cutoffs.
    manifest.conn.executescript(picture_decisions.settings_triggers(schema.DEFAULT_THRESHOLD, stale_table=False,
                                                                    large_move=4))
    assert picture_decisions.stale_from(manifest.conn) is None
    manifest.picture_area_min = 48.2  # past every engraving and plate of both documents
    assert picture_decisions.stale_from(manifest.conn) == 0  # the save wrote no decision
    assert pv.filter_counts(manifest, None) == pv.scanned_counts(manifest, None)  # the readers evaluate meanwhile
    assert_stored_as_evaluated(manifest, docs)
    assert manifest.conn.execute("SELECT exported FROM pictures WHERE id = ?",
                                 (picture_id(manifest, docs[0], 0, 2),)).fetchone()[0] == 1  # the include holds
    manifest.picture_area_min = 5.3  # back over the two plates and their pages only: decided in the save
    assert picture_decisions.stale_from(manifest.conn) is None
    assert_stored_as_evaluated(manifest, docs)
    manifest.undo()
    manifest.undo()  # back over every picture: stale again, then caught up to the first cutoff
    assert picture_decisions.stale_from(manifest.conn) == 0
    assert_stored_as_evaluated(manifest, docs)
    assert manifest.picture_area_min == pytest.approx(2.0)


def test_a_cutoff_being_tried_counts_the_pictures_it_keeps_as_a_scan_of_every_picture_does(manifest, monkeypatch):
    docs = documents(manifest)
    manifest.set_picture_override(picture_id(manifest, docs[0], 0, 2), True)  # a curator's include
    manifest.set_picture_override(picture_id(manifest, docs[1], 2), False)  # and exclude
    manifest.conn.execute("UPDATE pages SET picture_area = NULL WHERE doc_id = ? AND page = 1", (docs[1],))
    moved = []
    real = cutoff_counts._kept_by_moved_cutoffs
    monkeypatch.setattr(cutoff_counts, "_kept_by_moved_cutoffs", lambda *args: moved.append(real(*args)) or moved[-1])
    for rule in ("picture", "sigma", "model", "picture"):
        manifest.rule = rule
        # On the sliders' grids (a lookup, tests/test_cutoff_counts.py) and between their steps (moved).
        for threshold, area in [(None, 5.3), (None, 0.4), (None, 48.0), (35.0, None), (61.0, None), (45.0, 2.2),
                                (29.0, 10.0), (None, 5.305), (35.05, None), (44.95, 2.195)]:
            tried = {"picture_area_min": area}
            figures = cutoff_counts.picture_figures(manifest, threshold, manifest.threshold, **tried)
            scanned = pv.scanned_counts(manifest, threshold, **tried)
            assert (figures["kept"], figures["excluded"]) == (scanned["kept"], scanned["excluded"]), (rule, threshold, area)
    assert len(moved) == 12 and all(kept is not None for kept in moved)  # between steps: the pictures between
    manifest.rule = "sigma"  # another rule tried between steps: counted by a scan
    figures = cutoff_counts.picture_figures(manifest, 45.05, manifest.threshold, rule="picture")
    assert moved[-1] is None and figures["kept"] == pv.scanned_counts(manifest, 45.05, rule="picture")["kept"]


def test_a_reader_never_waits_for_another_writer_to_catch_up(manifest):
    docs = documents(manifest)
    manifest.rule = "sigma"
    writer = sqlite3.connect(manifest.path, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")  # a job's transaction in hand
    try:
        assert pv.filter_counts(manifest, None) == pv.scanned_counts(manifest, None)  # at once, evaluated
        assert picture_decisions.stale_from(manifest.conn) == 0
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    assert manifest.conn.execute("PRAGMA busy_timeout").fetchone()[0] == 30000
    assert_stored_as_evaluated(manifest, docs)


def test_a_job_catches_up_a_rule_switch_with_its_progress(manifest, monkeypatch):
    docs = documents(manifest)
    monkeypatch.setattr(picture_decisions, "CHUNK", 2)
    monkeypatch.setattr(picture_decisions, "JOB_CHUNKS", 1)
    assert not picture_decisions.needs_job(manifest)
    switched = CliRunner().invoke(cli, ["settings", "--db", str(manifest.path), "--rule", "sigma"],
                                  catch_exceptions=False)
    assert picture_decisions.needs_job(manifest)  # more stale pictures than a chunk
    assert "python -m curation decide" in switched.output  # the command line says what brings them up to date
    result = CliRunner().invoke(cli, ["decide", "--db", str(manifest.path)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert picture_decisions.stale_from(manifest.conn) is None and not picture_decisions.needs_job(manifest)
    job = manifest.latest_job(picture_decisions.DECIDE_JOB)
    total = manifest.conn.execute("SELECT COUNT(*) FROM pictures").fetchone()[0]
    assert job["status"] == "done" and job["total"] == total
    assert_stored_as_evaluated(manifest, docs)


def scored_failed(page):
    return PageResult(page=page, status="failed", error="unreadable")


def test_kept_and_excluded_screens_read_the_stored_decisions_and_match_the_rule(manifest):
    docs = documents(manifest)
    manifest.set_picture_override(picture_id(manifest, docs[0], 1), True)
    manifest.set_override(docs[1], 0, False)
    for decision in ("kept", "excluded"):
        where, _ = pv.PictureFilter(decision).sql(stored=True)
        assert "exported" in where
        for sort in pv.SORTS:
            shown = [row["id"] for row in pv.screen(manifest, None, pv.PictureFilter(decision), sort, limit=100).rows]
            tried = [row["id"] for row in pv.screen(manifest, 45.0 + 1e-9, pv.PictureFilter(decision), sort,
                                                    limit=100).rows]  # not saved: the rule evaluated
            assert sorted(shown) == sorted(tried) and shown, (decision, sort)
    plan = " ".join(row[3] for row in manifest.conn.execute(
        "EXPLAIN QUERY PLAN SELECT x.id FROM pictures x WHERE NOT x.deleted AND x.exported = 0 "
        "ORDER BY COALESCE(x.fixed_area, x.area) DESC, x.id DESC LIMIT 49"))
    assert "pictures_decided_area" in plan and "TEMP B-TREE" not in plan


def test_an_older_manifest_gets_its_stored_decisions_when_opened(tmp_path, monkeypatch):
    monkeypatch.setenv(history.USER_VARIABLE, "ana")
    path = tmp_path / "old.sqlite"
    conn = sqlite3.connect(path)
    version = 9  # the schema before the settings' triggers (picture_decisions.settings_triggers)
    for script in store.MIGRATIONS[:version]:
        for statement in schema.statements(script):
            conn.execute(statement)
    # The triggers that decided every picture again on each setting saved, as such a manifest holds them.
    conn.execute("CREATE TRIGGER settings_decide_changed AFTER UPDATE ON settings BEGIN "
                 "UPDATE pictures SET exported = NULL; END")
    conn.execute(f"PRAGMA user_version = {version}")
    conn.execute("INSERT INTO documents (id, sha256, path, size, status, added_at, updated_at) VALUES (1, ?, '/a.pdf', 1, 'ok', '', '')",
                 ("a" * 64,))
    for page, (sigma, area) in enumerate([(60.0, 5.2), (30.0, 0.48)]):
        conn.execute("INSERT INTO pages (doc_id, page, status, sigma, width, height, picture_area, ink_tone, "
                     "scored_at) VALUES (1, ?, 'ok', ?, 1000, 1400, ?, 0.6, '')", (page, sigma, area))
        conn.execute("INSERT INTO pictures (doc_id, page, number, rank, x0, y0, x1, y1, area) "
                     "VALUES (1, ?, 1, 0, 10, 10, 400, 400, ?)", (page, area))
    conn.commit()
    conn.close()
    with Manifest(path) as manifest:
        assert manifest.schema_version == len(store.MIGRATIONS)
        assert_stored_as_evaluated(manifest, [1])
        assert pv.filter_counts(manifest, None)["kept"] == 1
        triggers = {row[0] for row in manifest.conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")}
        assert "settings_decide_changed" not in triggers and "settings_threshold_changed" in triggers
        manifest.picture_area_min = 0.4
        manifest.picture_area_min = 0.5
        manifest.rule = "sigma"
        manifest.threshold = 20.0
        assert_stored_as_evaluated(manifest, [1])
        assert pv.filter_counts(manifest, None)["kept"] == 2
