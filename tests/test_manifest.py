"""The manifest: versioned schema, readers beside a writer, decisions derived from overrides and threshold."""

import sqlite3
import subprocess
import sys
import threading
import time

import pytest

from curation import Manifest, ManifestError, ingest
from curation.manifest import schema
from curation.manifest.store import MIGRATIONS
from curation.scoring.result import PageResult

from conftest import ROOT, small_pdf


def fake_document(manifest, name="a.pdf", sigmas=(10.0, 50.0, 80.0)):
    doc = manifest.register_document(sha256=name * 4, path=f"/archive/{name}", size=1)
    manifest.save_pages(doc["id"], [PageResult(page=i, status="ok", sigma=s, width=10, height=10) for i, s in enumerate(sigmas)])
    manifest.set_document(doc["id"], status="ok", pages=len(sigmas))
    return doc["id"]


def test_new_manifest_is_at_the_latest_schema_in_wal_mode(tmp_path):
    with Manifest(tmp_path / "m.sqlite") as m:
        assert m.schema_version == len(MIGRATIONS)
        assert m.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert m.threshold == 45.0


def test_a_manifest_from_a_newer_version_is_refused(tmp_path):
    path = tmp_path / "m.sqlite"
    Manifest(path).close()
    with sqlite3.connect(path) as raw:
        raw.execute(f"PRAGMA user_version = {len(MIGRATIONS) + 1}")
    with pytest.raises(ManifestError, match="newer version"):
        Manifest(path)


def test_a_file_that_is_not_a_manifest_is_a_clear_error(tmp_path):
    path = tmp_path / "notes.sqlite"
    path.write_bytes(b"these are not the pages you are looking for" * 100)
    with pytest.raises(ManifestError, match="not a readable manifest"):
        Manifest(path)
    with pytest.raises(ManifestError, match="no manifest"):
        Manifest(tmp_path / "absent.sqlite", create=False)


def test_decision_is_override_else_threshold(manifest):
    doc = fake_document(manifest)
    rows = list(manifest.pages())
    assert [(r["keep"], r["decided_by"]) for r in rows] == [(0, "threshold"), (1, "threshold"), (1, "threshold")]
    manifest.set_override(doc, 0, True)
    manifest.set_override(doc, 2, False)
    rows = list(manifest.pages(threshold=60))
    assert [(r["keep"], r["decided_by"]) for r in rows] == [(1, "override"), (0, "threshold"), (0, "override")]
    manifest.set_override(doc, 0, None)
    assert next(manifest.pages())["decided_by"] == "threshold"
    manifest.threshold = 5
    assert manifest.summary()["kept"] == 2  # page 2 excluded by its override


def test_failed_pages_are_not_kept_unless_a_curator_says_so(manifest):
    doc = fake_document(manifest, sigmas=())
    manifest.save_pages(doc, [PageResult(page=0, status="failed", error="broken")])
    assert next(manifest.pages())["keep"] == 0
    manifest.set_override(doc, 0, True)
    assert next(manifest.pages())["keep"] == 1


def counted_and_recounted(manifest) -> tuple[dict, dict]:
    counted = {d["id"]: (d["scored"], d["failed"]) for d in manifest.documents()}
    recounted = {doc_id: (
        manifest.conn.execute("SELECT COUNT(*) FROM pages WHERE doc_id = ? AND status = 'ok'", (doc_id,)).fetchone()[0],
        manifest.conn.execute("SELECT COUNT(*) FROM pages WHERE doc_id = ? AND status = 'failed'", (doc_id,)).fetchone()[0],
    ) for doc_id in counted}
    return counted, recounted


def test_documents_count_their_scored_and_failed_pages_through_every_write(manifest):
    doc = fake_document(manifest)
    manifest.save_pages(doc, [PageResult(page=3, status="failed", error="broken")])
    assert manifest.document(doc)["scored"] == 3 and manifest.document(doc)["failed"] == 1
    # Rescored pages replace their rows: the failed page now scores, a scored one fails.
    manifest.save_pages(doc, [PageResult(page=3, status="ok", sigma=20.0, width=10, height=10),
                              PageResult(page=0, status="failed", error="timed out")])
    other = fake_document(manifest, "b.pdf", sigmas=(30.0,))
    manifest.conn.execute("UPDATE pages SET doc_id = ?, page = 5 WHERE doc_id = ? AND page = 2", (other, doc))
    manifest.conn.execute("UPDATE pages SET status = 'failed' WHERE doc_id = ? AND page = 1", (doc,))
    manifest.conn.execute("DELETE FROM pages WHERE doc_id = ? AND page = 3", (doc,))
    counted, recounted = counted_and_recounted(manifest)
    assert counted == recounted == {doc: (0, 2), other: (2, 0)}


def test_an_older_manifest_counts_its_documents_pages_when_opened(tmp_path):
    path = tmp_path / "old.sqlite"
    version = 10  # the schema before the counts
    conn = sqlite3.connect(path)
    for script in MIGRATIONS[:version]:
        for statement in schema.statements(script):
            conn.execute(statement)
    conn.execute(f"PRAGMA user_version = {version}")
    conn.execute("INSERT INTO documents (id, sha256, path, size, status, added_at, updated_at) "
                  "VALUES (1, ?, '/a.pdf', 1, 'ok', '', '')", ("a" * 64,))
    for page, status in enumerate(("ok", "ok", "failed")):
        conn.execute("INSERT INTO pages (doc_id, page, status, scored_at) VALUES (1, ?, ?, '')", (page, status))
    conn.commit()
    conn.close()
    with Manifest(path) as m:
        assert m.schema_version == len(MIGRATIONS)
        assert [(d["scored"], d["failed"]) for d in m.documents()] == [(2, 1)]


def older_manifest(path, finder: str | None = None, scored: bool = True):
    """A manifest as the version before the picture network was the default left it: pages scored (by the
    rules, the default then) unless not `scored`, and the picture finder saved only where a person chose one."""
    version = schema.MIGRATIONS.index(schema.KEEP_RULES_MIGRATION)
    conn = sqlite3.connect(path)
    for script in MIGRATIONS[:version]:
        for statement in schema.statements(script):
            conn.execute(statement)
    conn.execute(f"PRAGMA user_version = {version}")
    if scored:
        conn.execute("INSERT INTO documents (id, sha256, path, size, status, added_at, updated_at) "
                     "VALUES (1, ?, '/a.pdf', 1, 'ok', '', '')", ("a" * 64,))
        conn.execute("INSERT INTO pages (doc_id, page, status, scored_at) VALUES (1, 0, 'ok', '')")
    if finder is not None:
        conn.execute("INSERT INTO settings (key, value) VALUES ('picture_finder', ?)", (finder,))
    conn.commit()
    conn.close()
    return path


def test_a_new_manifest_finds_pictures_with_the_network_and_keeps_it_once_it_has_pages(tmp_path):
    with Manifest(tmp_path / "m.sqlite") as m:
        assert m.picture_finder == "network"
        fake_document(m)
    with Manifest(tmp_path / "m.sqlite") as m:
        assert m.picture_finder == "network"


@pytest.mark.parametrize("finder, scored, kept", [
    (None, True, "rules"),  # scored by the rules when they were the default: its next ingest finds as before
    ("network", True, "network"), ("learned", True, "learned"),  # a person's choice stays
    (None, False, "network"),  # nothing scored yet: as a new manifest
])
def test_an_older_manifest_keeps_the_finder_its_pages_were_scored_with(tmp_path, finder, scored, kept):
    path = older_manifest(tmp_path / "old.sqlite", finder, scored)
    with Manifest(path) as m:
        assert m.schema_version == len(MIGRATIONS)
        assert m.picture_finder == kept
        assert m.conn.execute("SELECT count(*) FROM history").fetchone()[0] == 0  # no person's change to undo
        m.picture_finder = "network"  # until asked
    with Manifest(path) as m:
        assert m.picture_finder == "network"


def test_overrides_survive_a_rescan_of_the_same_archive(tmp_path, archive):
    with Manifest(tmp_path / "m.sqlite") as m:
        ingest(m, [archive], workers=1)
        first = list(m.pages())
        m.set_override(first[0]["doc_id"], first[0]["page"], False)
        m.set_override(first[1]["doc_id"], first[1]["page"], True)
        before = [dict(r) for r in m.overrides()]
        # A re-scan that re-scores every page: drop the scores, keep everything else.
        m.conn.execute("DELETE FROM pages")
        m.conn.execute("UPDATE documents SET status = 'pending'")
        assert ingest(m, [archive], workers=1).pages_scored == 15
        assert [dict(r) for r in m.overrides()] == before
        decided = {(r["doc_id"], r["page"]): (r["keep"], r["decided_by"]) for r in m.pages()}
        assert decided[(first[0]["doc_id"], first[0]["page"])] == (0, "override")
        assert decided[(first[1]["doc_id"], first[1]["page"])] == (1, "override")


def test_readers_poll_while_ingest_writes_without_locking_errors(tmp_path):
    folder = tmp_path / "archive"
    for n in range(6):  # six small tasks: readers see the count grow in several steps
        small_pdf(folder / f"{n}.pdf", pages=4, seed=n, dpi=200)
    db = tmp_path / "m.sqlite"
    Manifest(db).close()
    proc = subprocess.Popen([sys.executable, "-m", "curation", "ingest", str(folder), "--db", str(db), "-q", "-w", "2"],
                            cwd=ROOT)
    errors, reads, seen = [], 0, set()

    def poll():
        nonlocal reads
        reader = Manifest(db)
        while proc.poll() is None:
            try:
                summary = reader.summary()
                job = reader.latest_job()
                seen.add(summary["pages"])
                reads += 1
                if job is not None and reads % 5 == 0:  # writes from a reader: the curator's overrides
                    # Always the same page, whichever documents are scored yet: one override in the end.
                    rows = list(reader.pages(where="d.path LIKE :first AND p.page = 0", params={"first": "%/0.pdf"}))
                    if rows:
                        reader.set_override(rows[0]["doc_id"], rows[0]["page"], True)
            except sqlite3.OperationalError as exc:
                errors.append(str(exc))
            time.sleep(0.01)
        reader.close()

    threads = [threading.Thread(target=poll) for _ in range(3)]
    for t in threads:
        t.start()
    assert proc.wait(timeout=300) == 0
    for t in threads:
        t.join()
    assert errors == []
    assert reads > 30 and len(seen) > 2  # readers saw the counts grow
    with Manifest(db) as m:
        assert m.summary()["pages"] == 24
        assert len(m.overrides()) == 1
