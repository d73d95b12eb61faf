"""Pictures as rows of the manifest: every picture the scorer found on a page, and every one a curator
added, with its box, size, printed legend, captions and the curator's decision on it.

A picture keeps its row, its id and its number on the page (1, 2, ... as the export names it) for as long
as the manifest holds it. Re-scoring a page matches the new boxes to the old pictures by overlap: a matched
picture takes the new box and keeps everything a person or a job gave it; a picture the scorer no longer
finds is kept while it carries a person's work (a decision, a caption, a redrawn box), with `rank` NULL so
the app can say so, and dropped otherwise. Decisions are SQL (curation.manifest.rules); the writer here keeps
each page's two picture figures that SQL reads (`pages.pictures_included`, `pages.pictures_auto_area`)
in the same transaction as the change.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence

from ..pictures.kind import KINDS
from ..pictures.region import stamps_of, stamps_text
from . import history, page_figures, picture_decisions
from .caption_limit import stored_caption
from .history import now
from .rules import (DECIDED_BY_SQL, EXPORTED_SQL, KEEP_SQL, LIVE_DOCUMENT_SQL, PICTURE_AREA_SQL, PICTURE_BOX_SQL,
                    OUTLINED_SQL, PICTURE_DECIDED_BY_SQL, PICTURE_KEEP_SQL, SAVED_SCORE_MIN_SQL,
                    score_admits)

MIGRATION = """
    CREATE TABLE picture_rows (
        id INTEGER PRIMARY KEY,
        doc_id INTEGER NOT NULL,
        page INTEGER NOT NULL,
        number INTEGER NOT NULL,    -- on its page, from 1: stable while the picture is held
        rank INTEGER,               -- the scorer's order on the page now (0 the largest); NULL: not found now
        x0 INTEGER NOT NULL,        -- the scorer's box (an added picture's: the curator's), reference pixels
        y0 INTEGER NOT NULL,
        x1 INTEGER NOT NULL,
        y1 INTEGER NOT NULL,
        area REAL NOT NULL,         -- square inches of that box
        legend TEXT,                -- the printed legend read beside it, and how sure the reading is (0..1)
        legend_confidence REAL,
        auto_caption TEXT,          -- a captioning model's, and which model
        auto_caption_model TEXT,
        caption TEXT,               -- the curator's: always wins, never written by a job
        keep INTEGER CHECK (keep IN (0, 1)),  -- the curator's decision; NULL: the rule's
        fx0 INTEGER,                -- the curator's redrawn box; NULL: the scorer's
        fy0 INTEGER,
        fx1 INTEGER,
        fy1 INTEGER,
        fixed_area REAL,
        added INTEGER NOT NULL DEFAULT 0,
        deleted INTEGER NOT NULL DEFAULT 0,
        updated_at TEXT,
        UNIQUE (doc_id, page, number)
    );
    INSERT INTO picture_rows (doc_id, page, number, rank, x0, y0, x1, y1, area)
        SELECT doc_id, page, n + 1, n, x0, y0, x1, y1, area FROM pictures;
    DROP TABLE pictures;
    ALTER TABLE picture_rows RENAME TO pictures;
    CREATE INDEX pictures_touched ON pictures(doc_id, page) WHERE keep IS NOT NULL OR added OR deleted;
    ALTER TABLE pages ADD COLUMN pictures_included INTEGER;
    ALTER TABLE pages ADD COLUMN pictures_auto_area REAL;
"""

# Indexes for reading pictures a screen at a time (curation.manifest.store.MIGRATIONS): ORDER BY
# COALESCE(x.fixed_area, x.area) (PICTURE_AREA_SQL) walks the first; a filter on x.caption IS NOT NULL or
# x.rank IS NULL, in (doc_id, page, number) order, the others.
INDEXES = """
    CREATE INDEX pictures_box_area ON pictures(COALESCE(fixed_area, area));
    CREATE INDEX pictures_captioned ON pictures(doc_id, page, number) WHERE caption IS NOT NULL;
    CREATE INDEX pictures_lost ON pictures(doc_id, page, number) WHERE rank IS NULL;
"""

MATCH_IOU = 0.5  # a new box is the same picture as an old one when they overlap this much (intersection/union)
REFERENCE_DPI = 144  # boxes are measured at the scorer's reference resolution (curation.scoring.features)
# What makes a picture a person's work, kept when the scorer no longer finds it.
TOUCHED_SQL = ("(keep IS NOT NULL OR caption IS NOT NULL OR fx0 IS NOT NULL OR added OR deleted OR kind IS NOT NULL "
               "OR no_legend OR no_auto_caption OR mask_off OR mask_stamps IS NOT NULL)")
# A page's decision reads its pictures when one is decided, added, deleted or redrawn, or no longer found.
PICTURE_FIELDS = history.PICTURE_COLUMNS


# The curator's columns beside the scorer's (schema 13), and each picture's thumbnail as the export crops it.
MIGRATION_KINDS = """
    ALTER TABLE pictures ADD COLUMN kind TEXT;            -- the curator's; NULL: the suggestion's
    ALTER TABLE pictures ADD COLUMN kind_suggested TEXT;  -- the analysis's, from the picture's crop
    ALTER TABLE pictures ADD COLUMN no_legend INTEGER NOT NULL DEFAULT 0;        -- the curator: the legend is wrong
    ALTER TABLE pictures ADD COLUMN no_auto_caption INTEGER NOT NULL DEFAULT 0;  -- ... the model's caption is
"""


# Schema 22: a picture's region from the finder (curation.pictures.region), NULL where none was fitted, and the
# curator's mask: switched off (the whole box is learned) or rectangles painted out of it (JSON, reference pixels).
MIGRATION_MASKS = """
    ALTER TABLE pictures ADD COLUMN region TEXT;
    ALTER TABLE pictures ADD COLUMN mask_off INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE pictures ADD COLUMN mask_stamps TEXT;
"""


class PictureError(ValueError):
    """A picture edit that cannot be made; the message says why, for a person."""


def box_area(box: Sequence[int]) -> float:
    """Square inches of a box in reference pixels."""
    x0, y0, x1, y1 = box
    return round(max(0, x1 - x0) * max(0, y1 - y0) / REFERENCE_DPI / REFERENCE_DPI, 3)


def overlap(a: Sequence[float], b: Sequence[float]) -> float:
    """Intersection over union of two boxes (x0, y0, x1, y1)."""
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    if w <= 0 or h <= 0:
        return 0.0
    inter = w * h
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def match(old: list[Sequence[float]], new: list[Sequence[float]]) -> dict[int, int]:
    """{index in new: index in old}: each old box paired with the new box it overlaps most, best pairs first."""
    pairs = sorted(((overlap(o, n), i, j) for i, o in enumerate(old) for j, n in enumerate(new)), reverse=True)
    matched: dict[int, int] = {}
    taken: set[int] = set()
    for score, i, j in pairs:
        if score < MATCH_IOU:
            break
        if i not in taken and j not in matched:
            matched[j] = i
            taken.add(i)
    return matched


class PictureRows:
    """The Manifest's picture methods (mixed into curation.manifest.store.Manifest)."""

    conn: sqlite3.Connection

    # -- the scorer's pictures ------------------------------------------------------------------

    def set_pictures(self, doc_id: int, page: int, found: Iterable[Sequence], finder: str | None = None) -> None:
        """The scorer's pictures of one page, largest first: (x0, y0, x1, y1, square inches[, legend,
        legend confidence[, the learned verdict's score[, region (curation.pictures.region)]]]), found by `finder`
        (curation.manifest.finders.label). Matched to the page's pictures by overlap (see the module's docstring);
        a matched picture takes the new region with the new box."""
        found = [list(picture) for picture in found]
        old = self.conn.execute("SELECT * FROM pictures WHERE doc_id = ? AND page = ? AND NOT added",
                                (doc_id, page)).fetchall()
        matched = match([_scorer_box(row) for row in old], [f[:4] for f in found]) if old else {}
        kept = {old[i]["id"] for i in matched.values()}
        for row in old:
            if row["id"] in kept:
                continue
            if _touched(row):
                self.conn.execute("UPDATE pictures SET rank = NULL WHERE id = ?", (row["id"],))
            else:
                self.conn.execute("DELETE FROM pictures WHERE id = ?", (row["id"],))
        number = self._last_number(doc_id, page)
        for rank, picture in enumerate(found):
            legend, confidence, score, region = (picture[5:9] + [None] * 4)[:4]
            values = (rank, *picture[:5], legend, confidence, score, finder, region)
            if rank in matched:
                self.conn.execute("UPDATE pictures SET rank = ?, x0 = ?, y0 = ?, x1 = ?, y1 = ?, area = ?, legend = ?, "
                                  "legend_confidence = ?, score = ?, finder = ?, region = ? WHERE id = ?",
                                  (*values, old[matched[rank]]["id"]))
            else:
                number += 1
                self.conn.execute("INSERT INTO pictures (doc_id, page, number, rank, x0, y0, x1, y1, area, legend, "
                                  "legend_confidence, score, finder, region) "
                                  "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                                  (doc_id, page, number, *values))
        self._refresh_pages([(doc_id, page)])

    def _last_number(self, doc_id: int, page: int) -> int:
        return self.conn.execute("SELECT COALESCE(MAX(number), 0) FROM pictures WHERE doc_id = ? AND page = ?",
                                 (doc_id, page)).fetchone()[0]

    def pictures(self, doc_id: int, page: int) -> list[tuple[int, int, int, int, float]]:
        """One page's pictures as the curator left them (deleted ones, and candidates under the score cutoff that
        a curator did not include, left out): box in reference pixels and
        square inches, the scorer's largest first, added ones last."""
        return [tuple(row) for row in self.conn.execute(
            f"SELECT {PICTURE_BOX_SQL}, {PICTURE_AREA_SQL} FROM pictures x WHERE doc_id = ? AND page = ? "
            f"AND NOT deleted AND {OUTLINED_SQL} ORDER BY rank IS NULL, rank, number", (doc_id, page))]

    def pictures_at_least(self, min_area: float) -> dict[tuple[int, int], list[tuple[int, int, int, int, int]]]:
        """The scorer's pictures of at least `min_area` square inches on every page, in one query: {(doc_id,
        page): [(number, x0, y0, x1, y1), ...]}, largest first; what the scorer found at the saved score cutoff,
        before any curator."""
        boxes: dict[tuple[int, int], list] = {}
        for doc_id, page, *picture in self.conn.execute(
                f"SELECT doc_id, page, number, x0, y0, x1, y1 FROM pictures x WHERE area >= ? AND rank IS NOT NULL "
                f"AND NOT added AND {score_admits('x', SAVED_SCORE_MIN_SQL)} ORDER BY doc_id, page, rank",
                (float(min_area),)):
            boxes.setdefault((doc_id, page), []).append(tuple(picture))
        return boxes

    # -- reading pictures with their decision -----------------------------------------------------

    def picture(self, picture_id: int) -> sqlite3.Row | None:
        """One picture with its decision (see picture_rows)."""
        rows = self.picture_rows(where="x.id = :picture_id", params={"picture_id": int(picture_id)})
        return next(iter(rows), None)

    def picture_by_number(self, doc_id: int, page: int, number: int) -> sqlite3.Row | None:
        rows = self.picture_rows(where="x.doc_id = :doc_id AND x.page = :page AND x.number = :number",
                                 params={"doc_id": doc_id, "page": page, "number": int(number)})
        return next(iter(rows), None)

    def picture_rows(self, threshold: float | None = None, *, where: str = "", params: dict | None = None,
                     order: str = "d.path, x.page, x.number", limit: int | None = None, rule: str | None = None,
                     deleted: bool = True) -> Iterable[sqlite3.Row]:
        """Pictures of live documents with their decision: `keep` (exported when its page is kept), `page_keep`,
        `decided_by` (deleted, page, override, added, threshold), `under_score` (its score under the score cutoff:
        judged not a picture, it does not count unless a curator includes it), the box as the curator left it (bx0..by1)
        and its square inches (`box_area`), beside the page's width and height. `where` is SQL over the
        aliases x (pictures), p, d, o as in Manifest.pages(); deleted pictures are left out unless asked."""
        sql = (
            f"SELECT x.*, d.path AS doc, d.sha256, p.width, p.height, p.sigma, "
            f"{PICTURE_BOX_SQL}, {PICTURE_AREA_SQL} AS box_area, "
            f"{PICTURE_KEEP_SQL} AS keep_picture, {PICTURE_DECIDED_BY_SQL} AS picture_decided_by, "
            f"{KEEP_SQL} AS page_keep, {DECIDED_BY_SQL} AS page_decided_by, o.keep AS page_override, "
            f"NOT {score_admits('x')} AS under_score "
            f"FROM pictures x JOIN pages p ON p.doc_id = x.doc_id AND p.page = x.page "
            f"JOIN documents d ON d.id = x.doc_id LEFT JOIN overrides o ON o.doc_id = x.doc_id AND o.page = x.page "
            f"WHERE {LIVE_DOCUMENT_SQL} AND p.status = 'ok' {'' if deleted else 'AND NOT x.deleted'} "
            f"{('AND (' + where + ')') if where else ''} ORDER BY {order}"
        )
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        return self.conn.execute(sql, {**self.decision_params(threshold, rule), **(params or {})})

    def kept_pictures(self, threshold: float | None = None) -> dict[tuple[int, int], list[sqlite3.Row]]:
        """What `export --crop pictures` writes of each kept page: its kept pictures, in number order, as
        picture_rows gives them."""
        kept: dict[tuple[int, int], list[sqlite3.Row]] = {}
        for row in self.picture_rows(threshold, where=f"({PICTURE_KEEP_SQL}) = 1", deleted=False,
                                     order="x.doc_id, x.page, x.number"):
            kept.setdefault((row["doc_id"], row["page"]), []).append(row)
        return kept

    def exported_pictures(self, threshold: float | None = None) -> dict[tuple[int, int], list[sqlite3.Row]]:
        """What `export --crop pictures` writes: the kept pictures of the kept pages, by page, in number order, as
        picture_rows gives them. Under the saved settings the stored decisions say which (an index: at 100,000
        pictures a third of the time that deciding each one again takes)."""
        exported = ("x.exported = 1" if picture_decisions.is_saved(self, self.decision_params(threshold))
                    else f"({EXPORTED_SQL}) = 1")
        pictures: dict[tuple[int, int], list[sqlite3.Row]] = {}
        for row in self.picture_rows(threshold, where=exported, deleted=False, order="x.doc_id, x.page, x.number"):
            pictures.setdefault((row["doc_id"], row["page"]), []).append(row)
        return pictures

    # -- a curator's edits --------------------------------------------------------------------------

    def set_picture_override(self, picture_id: int, keep: bool | None) -> None:
        """Include (True), exclude (False) or give back to the rule (None) one picture."""
        self.set_picture_overrides([(picture_id, keep)])

    def set_picture_overrides(self, items: Iterable[tuple[int, bool | None]]) -> int:
        """Many picture decisions as one action; returns how many were given."""
        return self._edit("picture_override", ((pid, None if keep is None else int(bool(keep))) for pid, keep in items))

    def set_picture_captions(self, items: Iterable[tuple[int, str | None]]) -> int:
        """The curator's captions of many pictures as one action (blank removes); returns how many.
        CaptionTooLong for a caption past CAPTION_CHARS, and none is written."""
        return self._edit("picture_caption", ((pid, stored_caption(text)) for pid, text in items))

    def set_picture_kinds(self, items: Iterable[tuple[int, str | None]]) -> int:
        """The curator's kind of many pictures as one action (None: back to the suggestion)."""
        items = list(items)
        for _, kind in items:
            if kind is not None and kind not in KINDS:
                raise PictureError(f"a picture's kind is one of {', '.join(KINDS)}, not {kind!r}")
        return self._edit("picture_kind", items)

    def set_no_legend(self, items: Iterable[tuple[int, bool]]) -> int:
        """Switch a picture's printed legend off (True: "no legend", it is wrong) or on again; one action."""
        return self._edit("picture_no_legend", ((pid, int(bool(off))) for pid, off in items))

    def set_no_auto_caption(self, items: Iterable[tuple[int, bool]]) -> int:
        """Switch a picture's model caption off (True) or on again; one action."""
        return self._edit("picture_no_auto_caption", ((pid, int(bool(off))) for pid, off in items))

    def set_mask_off(self, items: Iterable[tuple[int, bool]]) -> int:
        """Turn a picture's mask off (True: its whole box is learned) or on again; one action."""
        return self._edit("picture_mask_off", ((pid, int(bool(off))) for pid, off in items))

    def add_mask_stamp(self, picture_id: int, stamp: Sequence[int]) -> None:
        """Paint a rectangle (reference pixels: a library stamp, a mark) out of a picture's mask; one action.
        PictureError for a rectangle that misses the picture's box or is a line."""
        row = self._picture_row(picture_id)
        box = _box(row)
        x0, y0, x1, y1 = (int(round(v)) for v in stamp)
        x0, x1 = sorted((max(box[0], min(x0, box[2])), max(box[0], min(x1, box[2]))))
        y0, y1 = sorted((max(box[1], min(y0, box[3])), max(box[1], min(y1, box[3]))))
        if x1 - x0 < 2 or y1 - y0 < 2:
            raise PictureError("the rectangle to paint out needs two corners apart, inside the picture's box")
        self._edit("picture_mask_stamps", [(picture_id, stamps_text([*stamps_of(row["mask_stamps"]), (x0, y0, x1, y1)]))])

    def clear_mask_stamps(self, picture_id: int) -> None:
        """Take every rectangle painted out of a picture's mask away; one action."""
        self._edit("picture_mask_stamps", [(picture_id, None)])

    def delete_picture(self, picture_id: int, deleted: bool = True) -> None:
        """Say a picture is not one (it is never exported); deleted=False brings it back."""
        self._edit("picture_deleted", [(picture_id, int(bool(deleted)))])

    def add_picture(self, doc_id: int, page: int, box: Sequence[int]) -> int:
        """A picture the scorer missed, drawn by the curator (reference pixels); included. Returns its id."""
        box = self._checked_box(doc_id, page, box)
        with self.recording("picture") as action:
            cursor = self.conn.execute(
                "INSERT INTO pictures (doc_id, page, number, x0, y0, x1, y1, area, added, deleted, updated_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, 1, 0, ?)",
                (doc_id, page, self._last_number(doc_id, page) + 1, *box, box_area(box), now()))
            history.record(self.conn, action, "picture_deleted", 1, 0, doc_id=doc_id, page=page, name=str(cursor.lastrowid))
            self._refresh_pages([(doc_id, page)])
            return cursor.lastrowid

    def set_picture_box(self, picture_id: int, box: Sequence[int] | None) -> None:
        """Redraw a picture's box (reference pixels); None gives it back the scorer's."""
        row = self._picture_row(picture_id)
        if box is not None:
            box = self._checked_box(row["doc_id"], row["page"], box)
        with self.recording("picture") as action:
            old = _fixed_box(row)
            new = list(box) if box is not None else None
            history.record(self.conn, action, "picture_box", _box_text(old), _box_text(new),
                           doc_id=row["doc_id"], page=row["page"], name=str(picture_id))
            write_box(self.conn, picture_id, new)
            self._refresh_pages([(row["doc_id"], row["page"])])

    def set_page_pictures(self, doc_id: int, page: int, wanted: Sequence[tuple[Sequence[int], bool]]) -> dict[str, int]:
        """Make a page's pictures exactly `wanted`, as a curator would: (box in reference pixels, counts). A picture
        whose box matches one (MATCH_IOU) keeps its number and decision and takes that box as the curator's; one
        that does not count is excluded (a counted one excluded before goes back to the rule); pictures matching no
        box are deleted, boxes matching none added; the page is marked as boxed by a curator (pages.boxed). One
        action. Returns how many were kept, added and deleted."""
        boxes = [self._checked_box(doc_id, page, box) for box, _ in wanted]  # every box checked before any write
        rows = self.conn.execute("SELECT * FROM pictures WHERE doc_id = ? AND page = ? ORDER BY number",
                                 (doc_id, page)).fetchall()
        present = [row for row in rows if not row["deleted"]]
        matched = {j: present[i] for j, i in match([_box(row) for row in present], boxes).items()}
        gone = [row for row in rows if row["deleted"]]  # a deleted picture a box names comes back
        rest = [j for j in range(len(boxes)) if j not in matched]
        matched.update({rest[j]: gone[i] for j, i in match([_box(row) for row in gone], [boxes[j] for j in rest]).items()})
        counts = {"kept": 0, "added": 0, "deleted": 0}
        with self.recording("picture"):
            for j, (box, (_, counted)) in enumerate(zip(boxes, wanted)):
                row = matched.get(j)
                if row is None:
                    picture_id = self.add_picture(doc_id, page, box)
                    counts["added"] += 1
                else:
                    picture_id = row["id"]
                    if row["deleted"]:
                        self.delete_picture(picture_id, False)
                    if _fixed_box(row) != box:
                        self.set_picture_box(picture_id, box)
                    counts["kept"] += 1
                keep = self.conn.execute("SELECT keep FROM pictures WHERE id = ?", (picture_id,)).fetchone()[0]
                if not counted and keep != 0:
                    self.set_picture_override(picture_id, False)
                elif counted and keep == 0:
                    self.set_picture_override(picture_id, None)
            kept = {row["id"] for row in matched.values()}
            for row in present:
                if row["id"] not in kept:
                    self.delete_picture(row["id"])
                    counts["deleted"] += 1
            boxed = self.conn.execute("SELECT boxed FROM pages WHERE doc_id = ? AND page = ?", (doc_id, page)).fetchone()[0]
            history.record(self.conn, self._action, history.BOXED_FIELD, boxed, 1, doc_id=doc_id, page=page)
            self.conn.execute("UPDATE pages SET boxed = 1 WHERE doc_id = ? AND page = ?", (doc_id, page))
        return counts

    def set_auto_captions(self, items: Iterable[tuple[int, str | None, str | None]]) -> int:
        """A captioning job's captions: (picture id, text, model). Never touches the curator's caption."""
        rows = [(text, model, now(), int(pid)) for pid, text, model in items]
        with self.transaction():
            self.conn.executemany("UPDATE pictures SET auto_caption = ?, auto_caption_model = ?, updated_at = ? "
                                  "WHERE id = ?", rows)
        return len(rows)

    def _edit(self, field: str, items: Iterable[tuple[int, object]]) -> int:
        column = PICTURE_FIELDS[field]
        count, touched = 0, set()
        with self.recording("picture") as action:
            for picture_id, new in items:
                row = self._picture_row(picture_id)
                history.record(self.conn, action, field, row[column], new, doc_id=row["doc_id"], page=row["page"],
                               name=str(picture_id))
                self.conn.execute(f"UPDATE pictures SET {column} = ?, updated_at = ? WHERE id = ?",
                                  (new, now(), picture_id))
                touched.add((row["doc_id"], row["page"]))
                count += 1
            self._refresh_pages(touched)
        return count

    def _picture_row(self, picture_id: int) -> sqlite3.Row:
        row = self.conn.execute("SELECT * FROM pictures WHERE id = ?", (int(picture_id),)).fetchone()
        if row is None:
            raise PictureError(f"there is no picture {picture_id} in this manifest")
        return row

    def _checked_box(self, doc_id: int, page: int, box: Sequence[int]) -> list[int]:
        size = self.conn.execute("SELECT width, height FROM pages WHERE doc_id = ? AND page = ?",
                                 (doc_id, page)).fetchone()
        if size is None or not size["width"]:
            raise PictureError("this page was not scored, so it has no size to draw a picture on")
        x0, y0, x1, y1 = (int(round(v)) for v in box)
        x0, x1 = sorted((max(0, min(x0, size["width"])), max(0, min(x1, size["width"]))))
        y0, y1 = sorted((max(0, min(y0, size["height"])), max(0, min(y1, size["height"]))))
        if x1 - x0 < 4 or y1 - y0 < 4:
            raise PictureError("a picture's box needs two corners apart (it would be a line or a point)")
        return [x0, y0, x1, y1]

    def _refresh_pages(self, keys: Iterable[tuple[int, int]]) -> None:
        """Recompute the picture figures a page's decision reads (see curation.manifest.rules)."""
        self.conn.executemany(page_figures.refresh_edited_sql("doc_id = :doc_id AND page = :page", SAVED_SCORE_MIN_SQL),
                              [{"doc_id": doc_id, "page": page} for doc_id, page in keys])


def store_suggested_kinds(conn: sqlite3.Connection, items: Iterable[tuple[int, str | None]]) -> None:
    """The analysis's kind of each (picture id, kind) (None: unsure), as the picture job suggests it
    (curation.pictures.kind); the curator's kind, in its own column, stays."""
    conn.executemany("UPDATE pictures SET kind_suggested = ? WHERE id = ?", [(kind, int(i)) for i, kind in items])


def write_box(conn: sqlite3.Connection, picture_id: int, box: Sequence[int] | None) -> None:
    """Store a curator's box (or clear it) with its size; the caller refreshes the page."""
    fixed = list(box) if box is not None else [None] * 4
    conn.execute("UPDATE pictures SET fx0 = ?, fy0 = ?, fx1 = ?, fy1 = ?, fixed_area = ?, updated_at = ? WHERE id = ?",
                 (*fixed, box_area(box) if box is not None else None, now(), picture_id))


def write_found(conn: sqlite3.Connection, doc_id: int, page: int, text: str) -> bool:
    """Give a page back the pictures a finder left on it (history.FOUND_SQL's `text`): the same rows, ids and
    numbers, and the page's picture figures (not their regions: a picture given back is masked by its box); the
    caller refreshes the page. A picture whose id another page's
    picture took since (SQLite hands a deleted row's id to the next insert) comes back under a new id; returns
    whether one did, as the page's state then differs from `text` in that id."""
    state = json.loads(text)
    rows = state["pictures"]
    ids = ",".join(str(int(row[0])) for row in rows) or "NULL"
    conn.execute(f"DELETE FROM pictures WHERE doc_id = ? AND page = ? AND NOT added AND id NOT IN ({ids})", (doc_id, page))
    taken = {row[0] for row in conn.execute(
        f"SELECT id FROM pictures WHERE id IN ({ids}) AND (doc_id IS NOT ? OR page IS NOT ?)", (doc_id, page))}
    columns = ("number", "rank", "x0", "y0", "x1", "y1", "area", "legend", "legend_confidence", "score", "finder")
    conn.executemany(
        f"INSERT INTO pictures (id, doc_id, page, {', '.join(columns)}) VALUES (?, ?, ?, {', '.join('?' * len(columns))}) "
        f"ON CONFLICT(id) DO UPDATE SET {', '.join(f'{c} = excluded.{c}' for c in columns)}, region = NULL",
        [(None if row[0] in taken else row[0], doc_id, page, *row[1:1 + len(columns)]) for row in rows])
    conn.execute("UPDATE pages SET picture_area = ?, picture_count = ?, picture_share = ?, picture_x0 = ?, "
                 "picture_y0 = ?, picture_x1 = ?, picture_y1 = ? WHERE doc_id = ? AND page = ?",
                 (*state["page"], doc_id, page))
    return bool(taken)


def refresh_pages(conn: sqlite3.Connection, keys: Iterable[tuple[int, int]]) -> None:
    """PictureRows._refresh_pages for code that holds only a connection (curation.manifest.undoing)."""
    holder = PictureRows()
    holder.conn = conn
    holder._refresh_pages(keys)


def _scorer_box(row: sqlite3.Row) -> tuple:
    return (row["x0"], row["y0"], row["x1"], row["y1"])


def _touched(row: sqlite3.Row) -> bool:
    return (row["keep"] is not None or row["caption"] is not None or row["fx0"] is not None
            or bool(row["added"]) or bool(row["deleted"]) or row["kind"] is not None or bool(row["no_legend"])
            or bool(row["no_auto_caption"]) or bool(row["mask_off"]) or row["mask_stamps"] is not None)


def _box(row: sqlite3.Row) -> tuple:
    """The box as the curator left it: theirs where they redrew it, else the scorer's."""
    return _scorer_box(row) if row["fx0"] is None else (row["fx0"], row["fy0"], row["fx1"], row["fy1"])


def _fixed_box(row: sqlite3.Row) -> list[int] | None:
    return None if row["fx0"] is None else [row["fx0"], row["fy0"], row["fx1"], row["fy1"]]


def _box_text(box: Sequence[int] | None) -> str | None:
    return None if box is None else json.dumps(list(box), separators=(",", ":"))  # as SQLite's json_array


def box_of(text: str | None) -> list[int] | None:
    """A box as history stores it, back as a list."""
    return None if text is None else json.loads(text)

