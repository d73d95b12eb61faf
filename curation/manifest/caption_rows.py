"""The manifest's page captions: one text per page, set one at a time or many in one transaction, each
change recorded in the history."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable

from . import history
from .caption_limit import stored_caption
from .history import now

class CaptionRows:
    """The page captions of a Manifest (mixed into it: uses its `conn` and `recording`)."""

    conn: sqlite3.Connection

    def caption(self, doc_id: int, page: int) -> str | None:
        row = self.conn.execute("SELECT text FROM captions WHERE doc_id = ? AND page = ?", (doc_id, page)).fetchone()
        return row[0] if row else None

    def set_caption(self, doc_id: int, page: int, text: str | None) -> None:
        """Set one page's caption; None or blank text removes it. Stored trimmed, as written."""
        self.set_captions([(doc_id, page, text)])

    def set_captions(self, items: Iterable[tuple[int, int, str | None]]) -> int:
        """Set many captions in one transaction (bulk editing); returns how many were given. CaptionTooLong
        for a caption past CAPTION_CHARS, and none is written."""
        stamp, count = now(), 0
        with self.recording("caption") as action:
            for doc_id, page, text in items:
                text = stored_caption(text) or ""
                history.record(self.conn, action, "caption", self.caption(doc_id, page), text or None,
                               doc_id=doc_id, page=page)
                if text:
                    self.conn.execute(
                        "INSERT INTO captions (doc_id, page, text, updated_at) VALUES (?, ?, ?, ?) "
                        "ON CONFLICT(doc_id, page) DO UPDATE SET text = excluded.text, updated_at = excluded.updated_at",
                        (doc_id, page, text, stamp),
                    )
                else:
                    self.conn.execute("DELETE FROM captions WHERE doc_id = ? AND page = ?", (doc_id, page))
                count += 1
        return count

    def captions(self, doc_id: int | None = None) -> dict[tuple[int, int], str]:
        """Captions by (doc_id, page), of one document or all."""
        rows = self.conn.execute(
            "SELECT doc_id, page, text FROM captions WHERE ? IS NULL OR doc_id = ?", (doc_id, doc_id)
        )
        return {(row[0], row[1]): row[2] for row in rows}
