"""Where a manifest keeps its pictures' embeddings: for each picture, the picture stage's embedding of its crop
(curation.pictures.embedding, 1280 numbers) as half-precision floats, with the box it was computed for.

An embedding is what the curator's tools compare pictures by (more like this, near-duplicates) and what a
manifest's own picture model learns from. It is kept with its box, as a picture's thumbnail is: a box redrawn,
undone or moved by a rescore no longer matches, and the picture is embedded again; a rescore that finds the
same box keeps it. 2.5 kB a picture: 2.5 GB for a million pictures, in its own table, read by id.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence

import numpy as np

from .picture_thumbnails import box_key
from .rules import PICTURE_BOX_SQL

DIMENSIONS = 1280  # curation.pictures.embedding.DIMENSIONS (not imported: that module brings torch)
STORED = np.float16

MIGRATION = """
    CREATE TABLE picture_embeddings (
        picture_id INTEGER PRIMARY KEY,
        box TEXT NOT NULL,          -- the box it was computed for, "x0,y0,x1,y1" in reference pixels
        vector BLOB NOT NULL        -- DIMENSIONS float16, little-endian
    );
    CREATE TRIGGER picture_embeddings_removed AFTER DELETE ON pictures
    BEGIN DELETE FROM picture_embeddings WHERE picture_id = OLD.id; END;
"""

def store(conn: sqlite3.Connection, items: Iterable[tuple[int, Sequence[float], np.ndarray]]) -> int:
    """Keep (picture id, box as it was embedded, vector) embeddings; the number kept."""
    rows = [(int(picture_id), box_key(box), _blob(vector)) for picture_id, box, vector in items]
    conn.executemany("INSERT OR REPLACE INTO picture_embeddings (picture_id, box, vector) VALUES (?, ?, ?)", rows)
    return len(rows)


def read(conn: sqlite3.Connection, ids: Iterable[int] | None = None, dtype=np.float32) -> tuple[np.ndarray, np.ndarray]:
    """(picture ids, matrix with a row each, float32 or `dtype`) of the embeddings that match their picture's
    box as it is now, for `ids` (None: every picture not deleted). A picture with none, or a stale one, is left
    out. float16 (as stored) keeps a million pictures in 2.5 GB instead of 5."""
    where, params = "NOT x.deleted", ()
    if ids is not None:
        wanted = [int(i) for i in ids]
        if not wanted:
            return np.zeros(0, np.int64), np.zeros((0, DIMENSIONS), dtype)
        where, params = "x.id IN (SELECT value FROM json_each(?))", (json.dumps(wanted),)
    found, vectors = [], []
    for picture_id, box, bx0, by0, bx1, by1, vector in conn.execute(
            f"SELECT x.id, e.box, {PICTURE_BOX_SQL}, e.vector FROM pictures x "
            f"JOIN picture_embeddings e ON e.picture_id = x.id WHERE {where} ORDER BY x.id", params):
        if box == box_key((bx0, by0, bx1, by1)):
            found.append(picture_id)
            vectors.append(np.frombuffer(vector, "<f2"))
    if not found:
        return np.zeros(0, np.int64), np.zeros((0, DIMENSIONS), dtype)
    return np.array(found, np.int64), np.stack(vectors).astype(dtype, copy=False)


def missing(conn: sqlite3.Connection, limit: int | None = None, pages: Iterable[tuple[int, int]] | None = None
            ) -> list[sqlite3.Row]:
    """Pictures not deleted whose box as it is now has no embedding: id, doc_id, page, number and box (bx0..by1),
    in page order (a job reads each page once); only on `pages` ((doc_id, page) pairs) where given."""
    scope = ""
    params: tuple = ()
    if pages is not None:
        scope = "AND (x.doc_id, x.page) IN (SELECT value ->> 0, value ->> 1 FROM json_each(?))"
        params = (json.dumps([[int(d), int(p)] for d, p in pages]),)
    rows = conn.execute(
        f"SELECT x.id, x.doc_id, x.page, x.number, {PICTURE_BOX_SQL}, e.box AS embedded FROM pictures x "
        f"LEFT JOIN picture_embeddings e ON e.picture_id = x.id WHERE NOT x.deleted {scope} "
        f"ORDER BY x.doc_id, x.page, x.number", params)
    stale = (row for row in rows if row["embedded"] != box_key((row["bx0"], row["by0"], row["bx1"], row["by1"])))
    out = []
    for row in stale:
        out.append(row)
        if limit is not None and len(out) >= limit:
            break
    return out


def _blob(vector: np.ndarray) -> bytes:
    vector = np.asarray(vector, np.float32).reshape(-1)
    if vector.size != DIMENSIONS:
        raise ValueError(f"an embedding has {DIMENSIONS} numbers, not {vector.size}")
    return vector.astype("<f2").tobytes()
