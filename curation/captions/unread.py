"""Legends left unread at ingest, read when their picture is wanted.

Ingest reads the legends of the pictures that count (curation.runs.ingest_task): one scored under the manifest's
score cutoff is judged not a picture, and its legend waits (its confidence stored as legend.UNREAD). When a
curator includes such a picture, Review reads its legend then (`read_when_included`: one picture, a moment), and
the export reads the legends still unread of the pictures it writes before it writes them (`read_unread`: those a
bulk include or a lower cutoff brought in), and keeps them in the manifest like ingest's.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..manifest.rules import PICTURE_BOX_SQL
from ..manifest.store import Manifest
from ..sources.paths import document_roots
from ..sources.reader import open_document
from .legend import UNREAD, check_languages, installed_languages, read_legends


def read_unread(manifest: Manifest, rows: Iterable) -> int:
    """Read and keep the legends still unread of the picture rows `rows` (picture_rows' rows); returns how many
    were read. A page that cannot be read leaves its legends unread (the export writes its pictures without)."""
    try:
        languages = check_languages(manifest.legend_languages) if installed_languages() else None
    except ValueError:  # a language no longer installed: read when it is again
        languages = None
    by_page: dict[tuple[int, int], list] = {}
    for row in rows:
        if row["legend_confidence"] == UNREAD:
            by_page.setdefault((row["doc_id"], row["page"]), []).append(row)
    if not by_page or not languages:
        return 0
    roots = tuple(str(root) for root in document_roots(manifest.path, manifest))
    found = []
    for (doc_id, page), wanted in sorted(by_page.items()):
        # The strips a legend is looked for in stop at the page's other pictures, as they did at ingest.
        others = manifest.conn.execute(
            f"SELECT {PICTURE_BOX_SQL} FROM pictures x WHERE x.doc_id = ? AND x.page = ? AND NOT x.deleted "
            f"AND x.id NOT IN ({','.join('?' * len(wanted))})", (doc_id, page, *(row["id"] for row in wanted)))
        boxes = [_box(row) for row in wanted] + [_box(other) for other in others]
        try:
            with open_document(manifest.document(doc_id)["path"], roots) as doc:
                legends = read_legends(doc, page, boxes, languages, wanted=[True] * len(wanted) + [False] * (
                    len(boxes) - len(wanted)))
        except Exception:  # a moved or damaged file, the engine, memory: a legend is an extra
            continue
        found += [(legend.text if legend else None, legend.confidence if legend else None, row["id"])
                  for row, legend in zip(wanted, legends)]
    with manifest.transaction():
        manifest.conn.executemany("UPDATE pictures SET legend = ?, legend_confidence = ? WHERE id = ?", found)
    return len(found)


def read_when_included(manifest: Manifest, picture_id: int) -> bool:
    """Read the legend of a picture a curator has just included, where ingest left it unread; whether it was read."""
    row = manifest.picture(picture_id)
    return bool(row is not None and row["keep"] == 1 and read_unread(manifest, [row]))


def _box(row) -> tuple[float, float, float, float]:
    """The picture's box as the curator left it (picture_rows' bx0..by1)."""
    return row["bx0"], row["by0"], row["bx1"], row["by1"]
