"""The manifest's pages: ingest's scores saved with their pictures, thumbnails and cards, and the pages read
back with their decisions (the pages' list, the summary, the pages a training export takes)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator, Sequence

from ..scoring.result import PageResult
from . import aggregates, page_figures, picture_inputs, picture_thumbnails, tallies, thumbnail_store
from .history import now
from .rules import DECIDED_BY_SQL, KEEP_SQL, LIVE_DOCUMENT_SQL, SAVED_SCORE_MIN_SQL


class PageRows:
    """The pages of a Manifest (mixed into it: uses its `conn`, `transaction`, settings and documents)."""

    conn: sqlite3.Connection

    def done_pages(self, doc_id: int) -> set[int]:
        return {row[0] for row in self.conn.execute("SELECT page FROM pages WHERE doc_id = ?", (doc_id,))}

    def save_pages(self, doc_id: int, results: Iterable[PageResult], finder: str | None = None) -> int:
        """Store scored pages in one transaction, their pictures found by `finder` (curation.manifest.finders.label).
        Overrides live elsewhere and are never touched."""
        stamp = now()
        count = 0
        store, folder = self.thumbnail_store, self.thumbnail_folder
        # The folder's files are named by content; looked up unless thumbnails go to SQLite and no folder exists.
        sha256 = self.document(doc_id)["sha256"] if store != "sqlite" or folder.is_dir() else None
        with self.transaction():
            for r in results:
                features = dict(r.features or {})
                pictures = json.loads(features.pop("pictures", "[]"))
                columns = {"doc_id": doc_id, "page": r.page, "status": r.status, "sigma": r.sigma, "width": r.width,
                           "height": r.height, "method": r.method, "error": r.error, "scored_at": stamp, **features}
                self.conn.execute(
                    f"INSERT OR REPLACE INTO pages ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
                    list(columns.values()),
                )
                self.set_pictures(doc_id, r.page, pictures, finder)
                if any(len(picture) > 7 and picture[7] is not None for picture in pictures):
                    self.conn.execute(page_figures.update_sql("doc_id = ? AND page = ?", SAVED_SCORE_MIN_SQL),
                                      (doc_id, r.page))
                if r.picture_cards:
                    self._store_picture_cards(doc_id, r.page, pictures, r.picture_cards, store, folder, sha256)
                if r.picture_inputs:
                    self._store_picture_inputs(doc_id, r.page, pictures, r.picture_inputs)
                if r.thumbnail is not None:
                    self._store_thumbnail(doc_id, r.page, r.thumbnail, store,
                                          thumbnail_store.file_of(folder, sha256, r.page) if sha256 else None)
                count += 1
        return count

    def _store_thumbnail(self, doc_id: int, page: int, jpeg: bytes, store: str, file) -> None:
        """A page scored again keeps one thumbnail, in the store set now: a copy in another store goes."""
        if store == "sqlite":
            self.conn.execute("INSERT OR REPLACE INTO thumbnails (doc_id, page, jpeg) VALUES (?, ?, ?)", (doc_id, page, jpeg))
        else:
            self.conn.execute("DELETE FROM thumbnails WHERE doc_id = ? AND page = ?", (doc_id, page))
        if store == "folder":
            thumbnail_store.write_file(file, jpeg)
        elif file is not None:
            thumbnail_store.remove_file(file)

    def _store_picture_cards(self, doc_id: int, page: int, found: list, cards: Sequence, store: str, folder,
                             sha256: str | None) -> None:
        """The cards ingest cut for the pictures it found (PageResult.picture_cards), kept beside the page's
        thumbnail."""
        by_rank = {row["rank"]: row for row in self.conn.execute(
            "SELECT id, number, rank FROM pictures WHERE doc_id = ? AND page = ? AND rank IS NOT NULL", (doc_id, page))}
        kept = []
        for rank, (box, card) in enumerate(zip(found, cards)):
            row = by_rank.get(rank)
            if row is None or card is None:
                continue
            kept.append((row["id"], page, row["number"], box[:4], card))
        if store == "folder" and sha256 is None:
            sha256 = self.document(doc_id)["sha256"]
        picture_thumbnails.store(self.conn, store, folder, sha256, kept)

    def _store_picture_inputs(self, doc_id: int, page: int, found: list, inputs: Sequence) -> None:
        """The picture job's inputs ingest cut for the pictures it found (PageResult.picture_inputs), by rank as
        their cards; not for a picture already embedded for that box (a rescore that finds it again)."""
        by_rank = {rank: (picture_id, embedded) for rank, picture_id, embedded in self.conn.execute(
            "SELECT x.rank, x.id, e.box FROM pictures x LEFT JOIN picture_embeddings e ON e.picture_id = x.id "
            "WHERE x.doc_id = ? AND x.page = ? AND x.rank IS NOT NULL", (doc_id, page))}
        picture_inputs.store(self.conn, (
            (by_rank[rank][0], box[:4], png) for rank, (box, png) in enumerate(zip(found, inputs))
            if png is not None and rank in by_rank and by_rank[rank][1] != picture_thumbnails.box_key(box)))

    def store_picture_cards(self, cards: Iterable[tuple]) -> None:
        """Cards cut for pictures' boxes as the curator left them (an added or redrawn box, a manifest ingested
        before cards were kept): (picture row as picture_rows gives it, jpeg), kept as ingest keeps its cards,
        in one transaction."""
        items = [(row["id"], row["page"], row["number"], (row["bx0"], row["by0"], row["bx1"], row["by1"]), jpeg,
                  row["sha256"]) for row, jpeg in cards]
        with self.transaction():
            for *item, sha256 in items:
                picture_thumbnails.store(self.conn, self.thumbnail_store, self.thumbnail_folder, sha256, [item])

    def picture_cards(self, rows) -> dict[int, bytes]:
        """The kept cards of `rows` (picture rows) cut for their box as it is now, by picture id."""
        return picture_thumbnails.read(self.conn, self.thumbnail_folder, rows)

    def remove_orphan_thumbnails(self) -> int:
        """Thumbnail files of documents this manifest does not hold are deleted (see thumbnail_store)."""
        if not self.thumbnail_folder.is_dir():
            return 0
        return thumbnail_store.remove_orphans(
            self.thumbnail_folder, (row[0] for row in self.conn.execute("SELECT sha256 FROM documents")))

    def pages(self, threshold: float | None = None, *, where: str = "", params: dict | None = None,
              order: str = "d.path, p.page", limit: int | None = None, offset: int = 0,
              rule: str | None = None) -> Iterator[sqlite3.Row]:
        """Pages of live documents with their decision at `threshold` (default: the saved one).

        `where` is an extra SQL condition over the aliases p (pages), d (documents), o (overrides).
        """
        sql = (
            f"SELECT d.path AS doc, p.doc_id, p.page, p.status, p.sigma, p.width, p.height, p.method, p.error, "
            f"{KEEP_SQL} AS keep, {DECIDED_BY_SQL} AS decided_by, o.keep AS override, "
            f"p.sigma_content, p.ink_tone, p.ink_coverage, p.picture_share, p.picture_area, p.picture_count, "
            f"p.text_height, p.picture_x0, p.picture_y0, p.picture_x1, p.picture_y1, p.phash, "
            f"s.keep AS suggestion, s.confidence, g.group_id AS duplicate_group "
            f"FROM pages p JOIN documents d ON d.id = p.doc_id "
            f"LEFT JOIN overrides o ON o.doc_id = p.doc_id AND o.page = p.page "
            f"LEFT JOIN suggestions s ON s.doc_id = p.doc_id AND s.page = p.page "
            f"LEFT JOIN duplicates g ON g.doc_id = p.doc_id AND g.page = p.page "
            f"WHERE {LIVE_DOCUMENT_SQL} {('AND (' + where + ')') if where else ''} ORDER BY {order}"
        )
        if limit is not None:
            sql += f" LIMIT {int(limit)} OFFSET {int(offset)}"
        return iter(self.conn.execute(sql, {**self.decision_params(threshold, rule), **(params or {})}))

    def summary(self, threshold: float | None = None, *, sigma: bool = True) -> dict:
        """Counts a curator looks at first, summed from the pages counted in bins (aggregates); with `sigma`,
        σ's smallest, mean and largest too (one pass over the pages)."""
        bound = self.decision_params(threshold)
        bound["base_rule"] = "picture" if bound["rule"] == "model" else bound["rule"]
        counts = tallies.tally(self, bound).counts()
        found = aggregates.bins(self)
        result = {"pages": counts["pages"], "scored": int(found.pages[found.ok].sum()), "failed": counts["failed"],
                  "kept": counts["kept"], "overrides": counts["overridden"], "rejected": counts["rejected"]}
        if sigma:
            row = self.conn.execute(
                f"SELECT MIN(p.sigma), AVG(p.sigma), MAX(p.sigma) FROM pages p JOIN documents d ON d.id = p.doc_id "
                f"WHERE {LIVE_DOCUMENT_SQL}").fetchone()
            result.update(sigma_min=row[0], sigma_mean=row[1], sigma_max=row[2])
        result["threshold"] = bound["threshold"]
        result["rule"] = bound["rule"]
        result["documents"] = dict(
            self.conn.execute("SELECT status, COUNT(*) FROM documents GROUP BY status").fetchall()
        )
        return result

    def export_pages(self, threshold: float | None = None) -> list[sqlite3.Row]:
        """The pages a training export takes: kept at `threshold` (default: the saved one) and scored,
        of live documents, in a stable order, each with its document's path, hash and size, its
        decision, and its caption (None when it has none)."""
        bound = self.decision_params(threshold)
        return self.conn.execute(
            f"SELECT p.doc_id, p.page, d.path AS doc, d.sha256, d.size AS doc_size, p.sigma, p.width, p.height, "
            f"p.method, {DECIDED_BY_SQL} AS decided_by, c.text AS caption, p.picture_share, p.picture_area, "
            f"p.picture_x0, p.picture_y0, p.picture_x1, p.picture_y1, g.group_id AS duplicate_group "
            f"FROM pages p JOIN documents d ON d.id = p.doc_id "
            f"LEFT JOIN overrides o ON o.doc_id = p.doc_id AND o.page = p.page "
            f"LEFT JOIN captions c ON c.doc_id = p.doc_id AND c.page = p.page "
            f"LEFT JOIN duplicates g ON g.doc_id = p.doc_id AND g.page = p.page "
            f"WHERE {LIVE_DOCUMENT_SQL} AND p.status = 'ok' AND {KEEP_SQL} = 1 ORDER BY d.path, d.id, p.page",
            bound,
        ).fetchall()


def scoring_stamp(manifest, unread_jobs: Sequence[str] = ()) -> tuple:
    """Changes whenever the pictures or pages change other than by a person (whose every change is an
    action of the history): a scoring (ingest and rescore run as jobs: a job's start, progress and end; the
    pages' latest time), a new picture, new near-duplicate groups, a replaced document. Milliseconds.
    `unread_jobs`: kinds of job whose writes the caller does not read (their progress changes nothing)."""
    return (*manifest.conn.execute(
        "SELECT (SELECT MAX(id) FROM pictures), (SELECT MAX(scored_at) FROM pages), (SELECT COUNT(*) FROM duplicates), "
        "(SELECT COUNT(*) FROM documents WHERE status = 'replaced')").fetchone(),
        *manifest.conn.execute("SELECT MAX(id), MAX(finished_at), SUM(done) FROM jobs "
                               f"WHERE kind NOT IN ({', '.join('?' * len(unread_jobs))})", tuple(unread_jobs)).fetchone())
