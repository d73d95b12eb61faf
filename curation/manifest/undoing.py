"""Undo: what an action replaced, written back as a new action's changes (curation.manifest.history).

The rows' writers (`pictures` among them) record through `history`; undoing writes a picture's box and a
page's found pictures back through `pictures`, so it sits over both, and `history` imports neither.
"""

from __future__ import annotations

import sqlite3

from . import pictures
from .history import (BOXED_FIELD, CURRENT_SQL, FOUND_FIELD, PAGE_FIELDS, PICTURE_COLUMNS, PICTURE_FIELDS, UNDOABLE,
                      UndoError, found_state, record)


def undo(conn: sqlite3.Connection, undo_action: int, target: int, stamp: str) -> int:
    """Write back what action `target` replaced, as the changes of `undo_action` (inside its transaction).

    Only pages and settings still as `target` left them are restored: a later change by anyone stays.
    Undoing an undo redoes. Returns how many of the target's changes were left because they changed since.
    """
    row = conn.execute("SELECT * FROM history WHERE id = ?", (target,)).fetchone()
    if row is None:
        raise UndoError(f"there is no action #{target} (see `python -m curation history`)")
    if row["kind"] not in (*UNDOABLE, "undo"):
        raise UndoError(f"#{target} {row['description']}: a job cannot be undone")
    if row["undone_by"] is not None:
        raise UndoError(f"#{target} {row['description']}: already undone by #{row['undone_by']}")
    still = " ".join(f"WHEN '{field}' THEN {CURRENT_SQL[field]} IS k.new" for field in (*PAGE_FIELDS, *PICTURE_FIELDS, FOUND_FIELD, BOXED_FIELD))
    conn.execute(  # what is still as the target left it, its value before: one pass over a bulk action's pages
        f"INSERT INTO history_changes (action_id, field, doc_id, page, name, old, new) "
        f"SELECT ?, k.field, k.doc_id, k.page, k.name, k.new, k.old FROM history_changes k "
        f"WHERE k.action_id = ? AND k.doc_id IS NOT NULL AND CASE k.field {still} ELSE 0 END", (undo_action, target))
    _write_back(conn, undo_action, stamp)
    settings = conn.execute("SELECT name, old, new FROM history_changes WHERE action_id = ? AND doc_id IS NULL "
                            "AND field = 'setting'", (target,)).fetchall()  # doc_id in the index: no pass over pages
    for setting in settings:
        current = conn.execute("SELECT value FROM settings WHERE key = ?", (setting["name"],)).fetchone()
        if (current[0] if current else None) != setting["new"]:
            continue
        if setting["old"] is None:
            conn.execute("DELETE FROM settings WHERE key = ?", (setting["name"],))
        else:
            conn.execute("INSERT INTO settings (key, value) VALUES (?, ?) "
                         "ON CONFLICT(key) DO UPDATE SET value = excluded.value", (setting["name"], setting["old"]))
        record(conn, undo_action, "setting", setting["new"], setting["old"], name=setting["name"])
    conn.execute("UPDATE history SET undoes = ? WHERE id = ?", (target, undo_action))
    conn.execute("UPDATE history SET undone_by = ? WHERE id = ?", (undo_action, target))
    if row["kind"] == "undo":  # redone: the action it undid stands again, and can be undone again
        conn.execute("UPDATE history SET undone_by = NULL WHERE id = ?", (row["undoes"],))
    restored = conn.execute("SELECT COUNT(*) FROM history_changes WHERE action_id = ?", (undo_action,)).fetchone()[0]
    return row["changes"] - restored


def _write_back(conn: sqlite3.Connection, action: int, stamp: str) -> None:
    """Make the pages hold the `new` values of `action`'s page changes: set-based, whatever their number."""
    pages = "SELECT doc_id, page FROM history_changes WHERE action_id = ? AND field = ? AND new IS NULL"
    conn.execute(f"DELETE FROM overrides WHERE (doc_id, page) IN ({pages})", (action, "override"))
    conn.execute(f"DELETE FROM captions WHERE (doc_id, page) IN ({pages})", (action, "caption"))
    conn.execute(
        "INSERT INTO overrides (doc_id, page, keep, created_at, updated_at) "
        "SELECT doc_id, page, new, ?, ? FROM history_changes WHERE action_id = ? AND field = 'override' "
        "AND new IS NOT NULL ON CONFLICT(doc_id, page) DO UPDATE SET keep = excluded.keep, updated_at = excluded.updated_at",
        (stamp, stamp, action))
    conn.execute(
        "INSERT INTO captions (doc_id, page, text, updated_at) "
        "SELECT doc_id, page, new, ? FROM history_changes WHERE action_id = ? AND field = 'caption' "
        "AND new IS NOT NULL ON CONFLICT(doc_id, page) DO UPDATE SET text = excluded.text, updated_at = excluded.updated_at",
        (stamp, action))
    _write_back_pictures(conn, action, stamp)


def _write_back_pictures(conn: sqlite3.Connection, action: int, stamp: str) -> None:
    for field, column in PICTURE_COLUMNS.items():
        conn.execute(
            f"UPDATE pictures SET {column} = c.new, updated_at = ? FROM history_changes c WHERE c.action_id = ? "
            f"AND c.field = ? AND pictures.id = CAST(c.name AS INTEGER)", (stamp, action, field))
    boxes = conn.execute("SELECT name, new FROM history_changes WHERE action_id = ? AND field = 'picture_box'",
                         (action,)).fetchall()
    for row in boxes:
        pictures.write_box(conn, int(row["name"]), pictures.box_of(row["new"]))
    conn.execute("UPDATE pages SET boxed = c.new FROM history_changes c WHERE c.action_id = ? AND c.field = ? "
                 "AND pages.doc_id = c.doc_id AND pages.page = c.page", (action, BOXED_FIELD))
    found = conn.execute("SELECT doc_id, page, new FROM history_changes WHERE action_id = ? AND field = ?",
                         (action, FOUND_FIELD)).fetchall()
    for row in found:
        if pictures.write_found(conn, row["doc_id"], row["page"], row["new"]):  # ids moved: record the page as it is
            conn.execute("UPDATE history_changes SET new = ? WHERE action_id = ? AND field = ? AND doc_id = ? "
                         "AND page = ?", (found_state(conn, row["doc_id"], row["page"]), action, FOUND_FIELD,
                                          row["doc_id"], row["page"]))
    fields = (*PICTURE_FIELDS, FOUND_FIELD)
    pages = conn.execute(
        f"SELECT DISTINCT doc_id, page FROM history_changes WHERE action_id = ? "
        f"AND field IN ({', '.join('?' * len(fields))})", (action, *fields)).fetchall()
    pictures.refresh_pages(conn, [tuple(row) for row in pages])
