"""Where a manifest keeps its pictures' thumbnails: each picture's crop as the export writes it, made when the
picture is found (at ingest, from the page it just decoded) or when a curator draws or redraws its box.

A picture's thumbnail follows its page thumbnails' store (curation.manifest.thumbnail_store): in the table
`picture_thumbnails` (sqlite), as files beside the page's (folder), or not kept (none: drawn from the PDF when
shown). Each is kept with the box it was cut for: a box redrawn, undone or moved by a rescore no longer
matches, and the picture is cut again, so a card never shows an old box.
"""

from __future__ import annotations

import pathlib
import sqlite3
from collections.abc import Iterable, Sequence

from . import thumbnail_store

MIGRATION = """
    CREATE TABLE picture_thumbnails (
        picture_id INTEGER PRIMARY KEY,
        box TEXT NOT NULL,          -- the box it was cut for, "x0,y0,x1,y1" in reference pixels
        jpeg BLOB NOT NULL
    );
    CREATE TRIGGER picture_thumbnails_removed AFTER DELETE ON pictures
    BEGIN DELETE FROM picture_thumbnails WHERE picture_id = OLD.id; END;
"""


def box_key(box: Sequence[float]) -> str:
    return ",".join(str(int(round(v))) for v in box[:4])


def file_of(folder: pathlib.Path, sha256: str, page: int, number: int, box: Sequence[float]) -> pathlib.Path:
    """Beside the page's thumbnail; the box is in the name, so a file never stands for another box."""
    return folder / sha256 / f"{int(page)}-picture-{int(number)}-{box_key(box).replace(',', '_')}.jpg"


def store(conn: sqlite3.Connection, where: str, folder: pathlib.Path, sha256: str | None,
          items: Iterable[tuple[int, int, int, Sequence[float], bytes]]) -> None:
    """Keep (picture id, page, number, box, jpeg) thumbnails in the store `where` (thumbnail_store.STORES), and
    only there, as a page's thumbnail (`sha256`: the document's, where the folder may hold its files)."""
    for picture_id, page, number, box, jpeg in items:
        if where == "sqlite":
            conn.execute("INSERT OR REPLACE INTO picture_thumbnails (picture_id, box, jpeg) VALUES (?, ?, ?)",
                         (picture_id, box_key(box), jpeg))
        else:
            conn.execute("DELETE FROM picture_thumbnails WHERE picture_id = ?", (picture_id,))
        if sha256 and (where == "folder" or folder.is_dir()):
            path = file_of(folder, sha256, page, number, box)
            for old in path.parent.glob(f"{int(page)}-picture-{int(number)}-*.jpg"):  # an older box's, another store's
                thumbnail_store.remove_file(old)
            if where == "folder":
                thumbnail_store.write_file(path, jpeg)


def read(conn: sqlite3.Connection, folder: pathlib.Path, rows: Iterable) -> dict[int, bytes]:
    """The kept thumbnails of `rows` (pictures with id, doc_id's sha256, page, number and their box as the
    curator left it, bx0..by1) that were cut for that box, by picture id; from the table, then the folder."""
    rows = list(rows)
    if not rows:
        return {}
    wanted = {row["id"]: box_key([row["bx0"], row["by0"], row["bx1"], row["by1"]]) for row in rows}
    found = {picture_id: jpeg for picture_id, box, jpeg in conn.execute(
        f"SELECT picture_id, box, jpeg FROM picture_thumbnails WHERE picture_id IN "
        f"({', '.join(str(int(i)) for i in wanted)})") if wanted.get(picture_id) == box}
    if folder.is_dir():
        for row in rows:
            if row["id"] not in found and row["sha256"]:
                box = [row["bx0"], row["by0"], row["bx1"], row["by1"]]
                jpeg = thumbnail_store.read_file(file_of(folder, row["sha256"], row["page"], row["number"], box))
                if jpeg is not None:
                    found[row["id"]] = jpeg
    return found


def sizes(conn: sqlite3.Connection, folder: pathlib.Path, wanted: Sequence[tuple]) -> list[int | None]:
    """The bytes of the kept thumbnail of each of `wanted`: (doc_id, sha256, page, number, box) for a picture
    (the thumbnail cut for that box, as the curator left it), (doc_id, sha256, page, None, None) for a page; None
    where none is kept. Their lengths only: no thumbnail is read (the export's size estimate weighs each image by
    its thumbnail's bytes)."""
    pictures, pages = {}, {}
    docs = sorted({int(w[0]) for w in wanted})
    for start in range(0, len(docs), 500):
        chosen = ", ".join(str(d) for d in docs[start:start + 500])
        pictures.update({(doc_id, page, number, box): length for doc_id, page, number, box, length in conn.execute(
            "SELECT p.doc_id, p.page, p.number, t.box, length(t.jpeg) FROM picture_thumbnails t "
            f"JOIN pictures p ON p.id = t.picture_id WHERE p.doc_id IN ({chosen})")})
        pages.update({(doc_id, page): length for doc_id, page, length in conn.execute(
            f"SELECT doc_id, page, length(jpeg) FROM thumbnails WHERE doc_id IN ({chosen})")})
    found = []
    for doc_id, sha256, page, number, box in wanted:
        if number is None:
            size = pages.get((doc_id, page))
            if size is None and sha256 and folder.is_dir():
                size = thumbnail_store.file_size(thumbnail_store.file_of(folder, sha256, page))
        else:
            size = pictures.get((doc_id, page, number, box_key(box)))
            if size is None and sha256 and folder.is_dir():
                size = thumbnail_store.file_size(file_of(folder, sha256, page, number, box))
        found.append(size)
    return found
