"""What a page's decision is made from besides its scores, as the manifest keeps it: the curator's
overrides (recorded in the history), the learned model's suggestions and the near-duplicate groups."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterable

from . import aggregates, history, picture_decisions
from .history import now
from .rules import DEFAULT_THRESHOLD


class PageDecisionRows:
    """The overrides, suggestions and duplicate groups of a Manifest (mixed into it: uses its `conn`,
    `transaction`, `recording` and `rule`)."""

    conn: sqlite3.Connection

    def set_override(self, doc_id: int, page: int, keep: bool | None) -> None:
        """Include (True), exclude (False) or clear (None) the curator's decision for one page."""
        new = None if keep is None else int(bool(keep))
        with self.recording("override") as action:
            old = self.conn.execute("SELECT keep FROM overrides WHERE doc_id = ? AND page = ?", (doc_id, page)).fetchone()
            history.record(self.conn, action, "override", old[0] if old else None, new, doc_id=doc_id, page=page)
            if new is None:
                self.conn.execute("DELETE FROM overrides WHERE doc_id = ? AND page = ?", (doc_id, page))
                return
            stamp = now()
            self.conn.execute(
                "INSERT INTO overrides (doc_id, page, keep, created_at, updated_at) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT(doc_id, page) DO UPDATE SET keep = excluded.keep, updated_at = excluded.updated_at",
                (doc_id, page, new, stamp, stamp),
            )

    def overrides(self) -> list[sqlite3.Row]:
        return self.conn.execute("SELECT * FROM overrides ORDER BY doc_id, page").fetchall()

    def replace_suggestions(self, rows: Iterable[tuple[int, int, bool, float]]) -> None:
        """The model's (doc_id, page, keep, confidence) for every page, replacing the last fit's.

        The rows are gathered first in a temporary table, which takes no lock on the manifest; the write
        itself is then two statements, so a curator's click waits for a copy in SQL, not for Python to hand
        SQLite a million rows one by one (at 1 M pages: seconds)."""
        conn = self.conn
        conn.execute("DROP TABLE IF EXISTS temp.suggestions_new")
        conn.execute("CREATE TEMP TABLE suggestions_new (doc_id INTEGER NOT NULL, page INTEGER NOT NULL, "
                     "keep INTEGER NOT NULL, confidence REAL NOT NULL)")
        try:
            with contextlib.nullcontext() if conn.in_transaction else _TempTransaction(conn):
                conn.executemany("INSERT INTO temp.suggestions_new (doc_id, page, keep, confidence) VALUES (?, ?, ?, ?)",
                                 ((d, p, int(k), float(c)) for d, p, k, c in rows))
            with self.transaction():
                conn.execute("DELETE FROM suggestions")
                aggregates.bump_suggestions(conn)
                # Built again after the rows, not row by row: the confidence index takes the rows out of order.
                indexes = conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'index' "
                                       "AND tbl_name = 'suggestions' AND sql IS NOT NULL").fetchall()
                for name, _ in indexes:
                    conn.execute(f'DROP INDEX "{name}"')
                conn.execute("INSERT INTO suggestions (doc_id, page, keep, confidence) SELECT doc_id, page, keep, "
                             "confidence FROM temp.suggestions_new ORDER BY doc_id, page")
                for _, sql in indexes:
                    conn.execute(sql)
                if self.rule == "model":  # no trigger watches the suggestions: a million rows at a time
                    picture_decisions.decide_all(conn, DEFAULT_THRESHOLD)
        finally:
            conn.execute("DROP TABLE IF EXISTS temp.suggestions_new")

    def replace_duplicates(self, groups: Iterable[Iterable[tuple[int, int]]]) -> int:
        """Near-duplicate groups of (doc_id, page), numbered from 1, replacing the last grouping."""
        with self.transaction():
            self.conn.execute("DELETE FROM duplicates")
            count = 0
            for count, members in enumerate(groups, start=1):
                self.conn.executemany(
                    "INSERT INTO duplicates (doc_id, page, group_id) VALUES (?, ?, ?)",
                    ((d, p, count) for d, p in members),
                )
            return count


class _TempTransaction:
    """BEGIN ... COMMIT for writes to temporary tables only: a deferred transaction, so it takes no lock on the
    manifest and other processes write on meanwhile."""

    def __init__(self, conn: sqlite3.Connection):
        self.conn = conn

    def __enter__(self):
        self.conn.execute("BEGIN")
        return self.conn

    def __exit__(self, exc_type, exc, tb):
        self.conn.execute("ROLLBACK" if exc_type else "COMMIT")
