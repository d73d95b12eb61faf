"""Who did what: every change is recorded with who and when, listed by `history`, and undone in one step."""

import csv
import datetime as dt
import getpass
import io
import json

import pytest
from click.testing import CliRunner

from apptest_support import filled_db
from curation import Manifest, views
from curation.cli import cli
from curation.manifest import history, rules, store
from curation.runs import jobs


def run(*args, code=0):
    result = CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)
    assert result.exit_code == code, result.output
    return result.output


@pytest.fixture
def db(tmp_path, monkeypatch):
    monkeypatch.delenv(history.USER_VARIABLE, raising=False)
    return filled_db(tmp_path / "manifest.sqlite", documents=2, pages=10)


def actions(manifest):
    return history.actions(manifest.conn)


def changes(manifest, action):
    return [dict(row) for row in manifest.conn.execute(
        "SELECT field, doc_id, page, name, old, new FROM history_changes WHERE action_id = ? ORDER BY rowid", (action,))]


def overrides(manifest):
    return {(row["doc_id"], row["page"]): row["keep"] for row in manifest.overrides()}


# -- recording ----------------------------------------------------------------------------------


def test_an_override_records_who_when_and_the_value_before_and_after(db):
    before = dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
    with Manifest(db, user="ana") as manifest:
        manifest.set_override(1, 2, False)
        manifest.set_override(1, 2, False)  # no change: nothing recorded
        manifest.set_override(1, 2, True)
        manifest.set_override(1, 2, None)
        (cleared, included, excluded) = actions(manifest)
        assert {a["user"] for a in (cleared, included, excluded)} == {"ana"}
        assert dt.datetime.fromisoformat(excluded["at"]) >= before
        assert excluded["kind"] == "override" and excluded["description"] == "excluded p. 3 of issue-000-0000.pdf"
        assert changes(manifest, excluded["id"]) == [
            {"field": "override", "doc_id": 1, "page": 2, "name": None, "old": None, "new": 0}]
        assert changes(manifest, included["id"])[0]["old"] == 0 and changes(manifest, included["id"])[0]["new"] == 1
        assert changes(manifest, cleared["id"])[0]["new"] is None
        assert cleared["description"] == "cleared the override of p. 3 of issue-000-0000.pdf"


def test_captions_record_each_page_and_a_bulk_caption_is_one_action(db):
    with Manifest(db, user="ana") as manifest:
        manifest.set_caption(1, 0, "a plate")
        manifest.set_captions([(1, 1, "one"), (1, 1, "two"), (1, 3, "  ")])  # a page set twice keeps one row
        count = views.bulk_caption(manifest, None, views.PageFilter(doc_id=2), "fashion plate")
        bulk, many, single = actions(manifest)
        assert single["description"] == "captioned p. 1 of issue-000-0000.pdf"
        assert changes(manifest, many["id"]) == [
            {"field": "caption", "doc_id": 1, "page": 1, "name": None, "old": None, "new": "two"}]
        assert count == 10 and bulk["changes"] == 10
        assert bulk["description"] == "captioned 10 pages (view: All pages, issue-000-0001.pdf)"


def test_every_setting_a_person_chooses_is_recorded_and_bookkeeping_is_not(db):
    with Manifest(db, user="ana") as manifest:
        manifest.threshold = 50
        manifest.rule = "sigma"
        manifest.picture_area_min = 3
        manifest.page_timeout = 0
        manifest.thumbnail_store = "folder"
        manifest.threshold = 50  # unchanged: not recorded
        manifest.set_setting("suggestions_from_overrides", 12)
        described = [a["description"] for a in reversed(actions(manifest))]
    assert described == ["σ cutoff (default) → 50", "rule (default) → sigma", "picture cutoff (default) → 3",
                         "page time limit (default) → 0", "thumbnails (default) → folder"]


def test_saving_a_decision_is_one_action(db):
    with Manifest(db, user="ana") as manifest:
        with manifest.recording("setting"):
            manifest.threshold = 40
            views.use_model(manifest)
        (action,) = actions(manifest)
        assert [c["name"] for c in changes(manifest, action["id"])] == ["threshold", "rule_before_model", "rule"]


def test_a_bulk_override_is_one_action_of_the_pages_it_changed(db):
    with Manifest(db, user="ana") as manifest:
        kept = views.filter_counts(manifest, None, views.PageFilter("kept"))["pages"]
        first_kept = views.page_rows(manifest, None, views.PageFilter("kept"), limit=1)[0]
        manifest.set_override(first_kept["doc_id"], first_kept["page"], False)  # excluded already: no change
        count = views.bulk_override(manifest, None, views.PageFilter("kept"), False)
        bulk = actions(manifest)[0]
        assert count == kept - 1  # the excluded page is no longer kept
        assert bulk["changes"] == count and bulk["description"] == f"excluded {count} pages (view: Kept)"
        assert {c["new"] for c in changes(manifest, bulk["id"])} == {0}
        assert views.bulk_override(manifest, None, views.PageFilter("kept"), False) == 0
        assert actions(manifest)[0]["id"] == bulk["id"]  # a bulk action that changed nothing leaves no row


def test_a_change_that_fails_leaves_neither_the_change_nor_its_history(db):
    with Manifest(db, user="ana") as manifest:
        with pytest.raises(RuntimeError), manifest.recording("override"):
            manifest.set_override(1, 0, True)
            raise RuntimeError("the disk is full")
        assert manifest.overrides() == [] and actions(manifest) == []


def test_a_job_started_is_recorded_with_who_and_what(db):
    with Manifest(db, user="ana") as manifest:
        job = manifest.start_job("export", {"out": "/data/out.zip"})
        manifest.finish_job(job, "done")
        manifest.start_job("ingest", {"paths": [f"/archive/{n}.pdf" for n in range(1200)]})
        described = [(a["user"], a["kind"], a["description"]) for a in actions(manifest)]
    assert described == [("ana", "ingest", "started an ingest of /archive/0.pdf, /archive/1.pdf, /archive/2.pdf "
                                           "and 1,197 more"),
                         ("ana", "export", "started an export to /data/out.zip")]


def test_an_ingest_is_one_entry_and_an_override_keeps_its_history_through_a_rescore(tmp_path, archive, monkeypatch):
    monkeypatch.delenv(history.USER_VARIABLE, raising=False)
    db = tmp_path / "m.sqlite"
    run("ingest", archive, "--db", db, "-w", 1, "-q")
    run("override", "issue-0.pdf", 2, "exclude", "--db", db)
    run("rescore", "--all", "--db", db, "-w", 1, "-q")
    with Manifest(db) as manifest:
        described = [(a["user"], a["kind"]) for a in reversed(actions(manifest))]
        # the scores of 15 pages, twice, are no history: only who started each run
        assert described == [(getpass.getuser(), "ingest"), (getpass.getuser(), "override"),
                             (getpass.getuser(), "ingest")]
        assert overrides(manifest) == {(1, 1): 0}
        assert views.page_changes(manifest, [(1, 1)])[(1, 1)].startswith(f"excluded by {getpass.getuser()}, ")


def test_a_job_the_app_starts_runs_for_the_person_who_started_it(tmp_path, monkeypatch):
    monkeypatch.delenv(history.USER_VARIABLE, raising=False)
    db = tmp_path / "data" / "manifest.sqlite"
    token = jobs.launched_by.set("bea")
    try:
        process = jobs.launch(db, "sample", "--documents", "1", "--pages", "1", "--workers", "1")
    finally:
        jobs.launched_by.reset(token)
    assert process.wait(timeout=120) == 0, process.log_path.read_text()
    with Manifest(db) as manifest:
        done = actions(manifest)
        assert {a["user"] for a in done} == {"bea"}
        assert {"sample", "ingest"} <= {a["kind"] for a in done}


ISSUER, SUBJECT = "https://accounts.example.org", "248289761001"


def test_a_signed_in_persons_actions_name_their_issuer_and_subject_beside_the_address(db, tmp_path):
    with Manifest(db, user="ana@example.org", account=(ISSUER, SUBJECT)) as manifest:
        manifest.set_override(1, 0, False)
        [action] = actions(manifest)
        assert (action["user"], action["issuer"], action["subject"]) == ("ana@example.org", ISSUER, SUBJECT)
        [change] = history.changes(manifest.conn)
        assert (change["issuer"], change["subject"]) == (ISSUER, SUBJECT)
    with Manifest(db, user="local") as manifest:  # sign-in off: a name only
        manifest.set_override(1, 1, False)
        assert (actions(manifest)[0]["issuer"], actions(manifest)[0]["subject"]) == (None, None)
    rows = [json.loads(line) for line in CliRunner().invoke(
        cli, ["history", "--db", str(db), "--format", "jsonl"], catch_exceptions=False).output.splitlines()]
    assert [(r["user"], r["issuer"], r["subject"]) for r in rows] == [("local", None, None),
                                                                       ("ana@example.org", ISSUER, SUBJECT)]


def test_a_job_the_app_starts_records_the_persons_issuer_and_subject(tmp_path, monkeypatch):
    monkeypatch.delenv(history.USER_VARIABLE, raising=False)
    db = tmp_path / "data" / "manifest.sqlite"
    tokens = jobs.launched_by.set("bea@example.org"), jobs.launched_account.set((ISSUER, SUBJECT))
    try:
        process = jobs.launch(db, "sample", "--documents", "1", "--pages", "1", "--workers", "1")
    finally:
        jobs.launched_by.reset(tokens[0])
        jobs.launched_account.reset(tokens[1])
    assert process.wait(timeout=120) == 0, process.log_path.read_text()
    with Manifest(db) as manifest:
        assert {(a["user"], a["issuer"], a["subject"]) for a in actions(manifest)} == {
            ("bea@example.org", ISSUER, SUBJECT)}


# -- undo ---------------------------------------------------------------------------------------


def test_undo_of_a_bulk_action_restores_every_override_before_it_in_one_step(db):
    with Manifest(db, user="ana") as manifest:
        manifest.set_override(1, 0, True)
        manifest.set_override(1, 1, False)
        before = overrides(manifest)
        views.bulk_override(manifest, None, views.PageFilter(doc_id=1), True)
        views.bulk_override(manifest, None, views.PageFilter(doc_id=1), None)  # clear all of them
        assert overrides(manifest) == {}
        undo, left = manifest.undo()
        assert left == 0 and undo["changes"] == 10 and undo["user"] == "ana"
        assert overrides(manifest) == {(1, page): 1 for page in range(10)}
        undo, left = manifest.undo()  # the include: back to one include, one exclude and no override elsewhere
        assert undo["description"] == "undid #3: included 9 pages (view: All pages, issue-000-0000.pdf)"
        assert overrides(manifest) == before
        assert [a["undone_by"] for a in actions(manifest)][2:4] == [undo["id"] - 1, undo["id"]]


def test_undo_leaves_a_page_someone_changed_since_and_can_be_redone(db):
    with Manifest(db, user="ana") as manifest:
        views.bulk_override(manifest, None, views.PageFilter(doc_id=1), False)
        bulk = actions(manifest)[0]["id"]
    with Manifest(db, user="bea") as manifest:
        manifest.set_override(1, 4, True)
    with Manifest(db, user="ana") as manifest:
        undo, left = manifest.undo()  # ana's last: her bulk exclude, not bea's include
        assert undo["undoes"] == bulk and left == 1
        assert overrides(manifest) == {(1, 4): 1}
        manifest.undo(undo["id"])  # an undo undone is the action redone
        assert overrides(manifest) == {**{(1, page): 0 for page in range(10)}, (1, 4): 1}
        assert history.action(manifest.conn, bulk)["undone_by"] is None
        with pytest.raises(history.UndoError, match="already undone"):
            manifest.undo(undo["id"])


def test_undo_of_captions_restores_their_text_and_their_absence(db):
    with Manifest(db, user="ana") as manifest:
        manifest.set_caption(1, 0, "a plate")
        manifest.set_caption(1, 1, "a cartoon")
        before = manifest.captions()
        views.bulk_caption(manifest, None, views.PageFilter(doc_id=1), "fashion plate", replace=False)
        views.bulk_caption(manifest, None, views.PageFilter(doc_id=1), None)
        assert manifest.captions() == {}
        manifest.undo()
        assert len(manifest.captions()) == 10
        manifest.undo()
        assert manifest.captions() == before
        manifest.undo()
        assert manifest.captions() == {(1, 0): "a plate"}


def test_undo_of_a_setting_and_what_cannot_be_undone(db):
    with Manifest(db, user="ana") as manifest:
        manifest.rule = "sigma"
        manifest.start_job("ingest", {"paths": ["/a"]})
        manifest.undo(1)
        assert manifest.get_setting("rule") is None and manifest.rule == rules.DEFAULT_RULE
        with pytest.raises(history.UndoError, match="a job cannot be undone"):
            manifest.undo(2)
        with pytest.raises(history.UndoError, match="there is no action #99"):
            manifest.undo(99)
    with Manifest(db, user="bea") as manifest, pytest.raises(history.UndoError, match="bea has nothing left"):
        manifest.undo()


# -- the command line ---------------------------------------------------------------------------


def test_the_cli_records_its_user_by_login_name_and_lists_by_user_and_time(db, tmp_path):
    labels = tmp_path / "labels.csv"
    labels.write_text("doc,page,decision\nissue-000-0000.pdf,1,include\nissue-000-0000.pdf,2,exclude\n")
    run("override", "--from", labels, "--db", db)
    with Manifest(db, user="ana") as manifest:
        manifest.threshold = 50
        manifest.conn.execute("UPDATE history SET at = '2026-01-05T10:00:00+00:00' WHERE user = 'ana'")
    rows = [json.loads(line) for line in run("history", "--db", db, "--format", "jsonl").splitlines()]
    assert [(r["user"], r["kind"], r["changes"]) for r in rows] == [("ana", "setting", 1),
                                                                   (getpass.getuser(), "override", 2)]
    assert rows[1]["description"] == "overrode 2 pages: 1 included, 1 excluded"
    mine = list(csv.DictReader(io.StringIO(run("history", "--db", db, "--user", getpass.getuser(), "--format", "csv"))))
    assert [r["kind"] for r in mine] == ["override"]
    assert [json.loads(line)["user"] for line in run("history", "--db", db, "--since", "2026-01-05",
                                                     "--format", "jsonl").splitlines()] == ["ana", getpass.getuser()]
    recent = run("history", "--db", db, "--since", "1h", "--format", "jsonl").splitlines()
    assert [json.loads(line)["user"] for line in recent] == [getpass.getuser()]
    assert run("history", "--db", db, "--since", "2099-01-01") == "(none)\n"
    assert "not a time" in run("history", "--db", db, "--since", "last week", code=2)
    detail = [json.loads(line) for line in run("history", "--db", db, "--changes", "--format", "jsonl").splitlines()]
    assert [(d["target"], d["old"], d["new"]) for d in detail] == [
        ("threshold", None, "50.0"), ("/archive/issue-000-0000.pdf p. 1", "auto", "include"),
        ("/archive/issue-000-0000.pdf p. 2", "auto", "exclude")]
    assert run("history", "--db", db).splitlines()[0].split()[:4] == ["id", "at", "user", "kind"]


def test_cli_undo_takes_back_the_login_users_last_action_or_a_named_one(db, tmp_path):
    labels = tmp_path / "labels.csv"
    labels.write_text("doc,page,decision\nissue-000-0000.pdf,1,include\nissue-000-0000.pdf,2,exclude\n")
    run("override", "--from", labels, "--db", db)
    run("settings", "--threshold", 30, "--db", db)
    with Manifest(db, user="ana") as manifest:
        manifest.set_caption(2, 0, "hers")
    assert "undid #2: σ cutoff (default) → 30: 1 change(s) taken back" in run("undo", "--db", db)
    assert "undid #1: overrode 2 pages" in run("undo", "--db", db)
    with Manifest(db) as manifest:
        assert manifest.overrides() == [] and manifest.captions() == {(2, 0): "hers"}
    assert f"{getpass.getuser()} has nothing left to undo" in run("undo", "--db", db, code=1)
    run("undo", 3, "--db", db)  # anyone's action, by its id
    with Manifest(db) as manifest:
        assert manifest.captions() == {}


# -- an existing manifest -----------------------------------------------------------------------


def test_a_manifest_from_before_the_history_is_upgraded_and_keeps_its_overrides(tmp_path, monkeypatch):
    path = tmp_path / "old.sqlite"
    monkeypatch.setattr(store, "MIGRATIONS", store.MIGRATIONS[:4])
    with Manifest(path) as old:
        old.conn.execute("INSERT INTO overrides VALUES (7, 3, 0, '2025-01-01T00:00:00+00:00', "
                         "'2025-01-01T00:00:00+00:00')")
        assert old.schema_version == 4
    monkeypatch.undo()
    with Manifest(path, user="ana") as manifest:
        assert manifest.schema_version == len(store.MIGRATIONS)
        assert overrides(manifest) == {(7, 3): 0}
        assert views.page_changes(manifest, [(7, 3)]) == {}  # made before anyone recorded who
        manifest.set_override(7, 3, None)
        assert changes(manifest, actions(manifest)[0]["id"])[0]["old"] == 0
        manifest.undo()
        assert overrides(manifest) == {(7, 3): 0}


def test_a_manifest_from_before_issuer_and_subject_is_upgraded_and_keeps_its_history(tmp_path, monkeypatch):
    path = tmp_path / "old.sqlite"
    monkeypatch.setattr(store, "MIGRATIONS", store.MIGRATIONS[:12])  # schema 12: who by name only
    with Manifest(path) as old:  # written as that version wrote it
        old.conn.execute("INSERT INTO history (at, user, kind, description, changes) "
                         "VALUES ('2026-01-05T10:00:00+00:00', 'ana', 'setting', 'σ cutoff (default) → 50', 1)")
        assert old.schema_version == 12
    monkeypatch.undo()
    with Manifest(path, user="li@example.org", account=(ISSUER, SUBJECT)) as manifest:
        assert manifest.schema_version == len(store.MIGRATIONS)
        manifest.set_override(7, 3, False)
        assert [(a["user"], a["issuer"], a["subject"]) for a in actions(manifest)] == [
            ("li@example.org", ISSUER, SUBJECT), ("ana", None, None)]


def test_history_tables_are_indexed_for_their_lookups(db):
    with Manifest(db) as manifest:
        plan = " ".join(row[3] for row in manifest.conn.execute(
            "EXPLAIN QUERY PLAN SELECT MAX(rowid) FROM history_changes WHERE doc_id = 1 AND page = 2"))
    assert "history_changes_page" in plan


def test_since_reads_dates_times_and_spans():
    now = dt.datetime(2026, 12, 3, 14, 2, tzinfo=dt.timezone.utc)
    assert history.parse_since("2h", now) == "2026-12-03T12:02:00+00:00"
    assert history.parse_since("7d", now) == "2026-11-26T14:02:00+00:00"
    assert history.parse_since("2026-12-03") == "2026-12-03T00:00:00+00:00"
    assert history.parse_since("2026-12-03T14:00+01:00") == "2026-12-03T13:00:00+00:00"
    with pytest.raises(ValueError):
        history.parse_since("yesterday")
    assert history.short_time("2026-12-03T14:02:09+00:00") == "3 Dec 14:02"
    assert str(history.PageChange("ana", "2026-12-03T14:02:09+00:00", "override", 0)) == "excluded by ana, 3 Dec 14:02"
