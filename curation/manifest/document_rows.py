"""The manifest's documents: the files' remembered hashes, a document per content, and its status as
ingest reads it."""

from __future__ import annotations

import sqlite3

from ..sources.page_numbers import page_number
from .history import now


class DocumentRows:
    """The documents of a Manifest (mixed into it: uses its `conn` and `transaction`)."""

    conn: sqlite3.Connection

    def cached_hash(self, path: str, size: int, mtime_ns: int) -> str | None:
        row = self.conn.execute(
            "SELECT sha256 FROM files WHERE path = ? AND size = ? AND mtime_ns = ?", (path, size, mtime_ns)
        ).fetchone()
        return row[0] if row else None

    def remember_hash(self, path: str, size: int, mtime_ns: int, sha256: str) -> None:
        self.conn.execute(
            "INSERT OR REPLACE INTO files (path, size, mtime_ns, sha256) VALUES (?, ?, ?, ?)",
            (path, size, mtime_ns, sha256),
        )

    def register_document(self, sha256: str, path: str, size: int) -> sqlite3.Row:
        """The document with this content, created if new, and known by its latest path.

        A document whose file now holds other content is marked replaced: its pages and
        overrides stay in the manifest but take no part in decisions.
        """
        with self.transaction():
            stamp = now()
            self.conn.execute(
                "UPDATE documents SET status = 'replaced', error = ?, updated_at = ? "
                "WHERE path = ? AND sha256 != ? AND status != 'replaced'",
                ("the file at this path changed; its new content is a new document", stamp, path, sha256),
            )
            row = self.document_by_hash(sha256)
            if row is None:
                self.conn.execute(
                    "INSERT INTO documents (sha256, path, size, added_at, updated_at) VALUES (?, ?, ?, ?, ?)",
                    (sha256, path, size, stamp, stamp),
                )
            elif row["path"] != path or row["status"] == "replaced":
                status = "pending" if row["status"] == "replaced" else row["status"]
                self.conn.execute(
                    "UPDATE documents SET path = ?, status = ?, updated_at = ? WHERE id = ?",
                    (path, status, stamp, row["id"]),
                )
            return self.document_by_hash(sha256)

    def document_by_hash(self, sha256: str) -> sqlite3.Row | None:
        return self.conn.execute("SELECT * FROM documents WHERE sha256 = ?", (sha256,)).fetchone()

    def document(self, doc_id: int) -> sqlite3.Row | None:
        return self.conn.execute("SELECT * FROM documents WHERE id = ?", (doc_id,)).fetchone()

    def documents(self) -> list[sqlite3.Row]:
        """Every document with its scored and failed pages (counted by triggers, schema.MIGRATIONS)."""
        return self.conn.execute("SELECT * FROM documents ORDER BY path").fetchall()

    def set_document(self, doc_id: int, *, status: str, error: str | None = None, pages: int | None = None) -> None:
        self.conn.execute(
            "UPDATE documents SET status = ?, error = ?, pages = COALESCE(?, pages), updated_at = ? WHERE id = ?",
            (status, error, pages, now(), doc_id),
        )

    def finish_document(self, doc_id: int) -> None:
        """Set a fully processed document's status from its pages."""
        doc = self.document(doc_id)
        failed = self.conn.execute(
            "SELECT page, error FROM pages WHERE doc_id = ? AND status = 'failed' ORDER BY page", (doc_id,)
        ).fetchall()
        if not failed:
            note = doc["error"] if (doc["error"] or "").startswith("repaired") else None
            self.set_document(doc_id, status="ok", error=note)
        elif len(failed) == doc["pages"]:
            self.set_document(doc_id, status="failed", error=f"no page could be scored: {failed[0]['error']}")
        else:
            shown = "; ".join(f"page {page_number(row['page'])}: {row['error']}" for row in failed[:3])
            more = f" (and {len(failed) - 3} more)" if len(failed) > 3 else ""
            self.set_document(
                doc_id, status="partial", error=f"{len(failed)} of {doc['pages']} pages failed: {shown}{more}"
            )
