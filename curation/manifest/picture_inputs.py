"""Where a manifest keeps, for a while, each new picture's input to the picture job's network: the crop an ingest
worker cut from the page it had just decoded, fitted to the network's square (curation.pictures.embedding,
a lossless PNG of about 15 kB), so that the picture job that follows embeds it without reading the page again.

A row lives from the ingest that found its picture until the picture job stores that picture's embedding (in
the same transaction, so nothing piles up), and stands for the box it was cut for: a box redrawn, undone or
moved by a rescore no longer matches, and the picture job reads the page for it as before.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence

from .picture_thumbnails import box_key

MIGRATION = """
    CREATE TABLE picture_inputs (
        picture_id INTEGER PRIMARY KEY,
        box TEXT NOT NULL,          -- the box it was cut for, "x0,y0,x1,y1" in reference pixels
        png BLOB NOT NULL
    );
    CREATE TRIGGER picture_inputs_removed AFTER DELETE ON pictures
    BEGIN DELETE FROM picture_inputs WHERE picture_id = OLD.id; END;
"""


def store(conn: sqlite3.Connection, items: Iterable[tuple[int, Sequence[float], bytes]]) -> None:
    """Keep (picture id, box, png) inputs."""
    conn.executemany("INSERT OR REPLACE INTO picture_inputs (picture_id, box, png) VALUES (?, ?, ?)",
                     [(int(picture_id), box_key(box), png) for picture_id, box, png in items])


def read(conn: sqlite3.Connection, boxes: dict[int, Sequence[float]]) -> dict[int, bytes]:
    """The kept inputs of the pictures `boxes` (picture id -> box as it is now) cut for that box, by id."""
    if not boxes:
        return {}
    wanted = {int(picture_id): box_key(box) for picture_id, box in boxes.items()}
    return {picture_id: png for picture_id, box, png in conn.execute(
        f"SELECT picture_id, box, png FROM picture_inputs WHERE picture_id IN ({', '.join(map(str, wanted))})")
        if wanted.get(picture_id) == box}


def remove(conn: sqlite3.Connection, ids: Iterable[int]) -> None:
    """The inputs of pictures that no longer need them (embedded) go."""
    conn.executemany("DELETE FROM picture_inputs WHERE picture_id = ?", [(int(i),) for i in ids])
