"""A job's writes hold the manifest only briefly, so a curator's click (one page's or one picture's decision)
never waits seconds behind them: the learned suggestions are copied in SQL from a temporary table gathered
without a lock, and a bulk job writes a chunk per transaction."""

import pytest

from apptest_support import filled_db
from curation import Manifest
from curation.manifest import history
from curation.views import bulk


@pytest.fixture
def db(tmp_path, monkeypatch):
    monkeypatch.setenv(history.USER_VARIABLE, "ana")
    return filled_db(tmp_path / "manifest.sqlite", documents=3, pages=1000)


def statements_while_holding_the_manifest(manifest, action) -> list[list[str]]:
    """The statements run inside each BEGIN IMMEDIATE ... COMMIT (the manifest's write lock) while `action` runs."""
    held, inside = [], None

    def trace(sql):
        nonlocal inside
        word = sql.strip().split(None, 1)[0].upper()
        if sql.strip().upper().startswith("BEGIN IMMEDIATE"):
            inside = []
        elif word in ("COMMIT", "ROLLBACK") and inside is not None:
            held.append(inside)
            inside = None
        elif inside is not None:
            inside.append(sql)

    manifest.conn.set_trace_callback(trace)
    try:
        action()
    finally:
        manifest.conn.set_trace_callback(None)
    return held


def test_storing_suggestions_holds_the_manifest_for_a_few_statements_not_one_per_page(db):
    with Manifest(db) as manifest:
        keys = [tuple(row) for row in manifest.conn.execute("SELECT doc_id, page FROM pages")]
        rows = [(doc_id, page, page % 2 == 0, 0.5 + (page % 7) / 20) for doc_id, page in keys]
        held = statements_while_holding_the_manifest(manifest, lambda: manifest.replace_suggestions(rows))
        assert held and max(len(statements) for statements in held) < 10  # was one INSERT per page: 3,000
        stored = {(r[0], r[1]): (r[2], r[3]) for r in manifest.conn.execute("SELECT * FROM suggestions")}
        assert stored == {(d, p): (int(k), c) for d, p, k, c in rows}
        manifest.replace_suggestions([])  # a fit without result clears them
        assert manifest.conn.execute("SELECT COUNT(*) FROM suggestions").fetchone()[0] == 0


def test_a_bulk_job_holds_the_manifest_a_chunk_at_a_time(db):
    with Manifest(db, user="ana") as manifest:
        held = statements_while_holding_the_manifest(manifest, lambda: bulk.run_job(
            manifest, bulk.Bulk(view="pages", do="exclude", filter={"decision": "all"}), chunk=500))
        writes = [s for s in held if any("INSERT INTO overrides" in sql for sql in s)]
        assert len(writes) == 6  # 3,000 pages, 500 a transaction
        assert len(manifest.overrides()) == 3000
