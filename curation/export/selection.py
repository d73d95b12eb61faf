"""Which pages an export takes (the curator's decisions, one page per group of near-duplicates), the
images they become (one per page, or one per picture with crop "pictures") and the file name each one
gets."""

from __future__ import annotations

import dataclasses
import pathlib
import re
import unicodedata
from dataclasses import dataclass, field

from ..captions.best import counted_sources, kind_of
from ..decisions.picture_kinds import learned_kinds
from ..manifest import aggregates, history, picture_thumbnails
from ..manifest.page_rows import scoring_stamp
from ..manifest.store import Manifest
from ..pictures.region import MaskSource
from ..sources.page_numbers import page_number
from ..views.cutoff_counts import COUNT_JOB

MAX_STEM = 48
EXPORT_JOB = "export"  # the job kind of `python -m curation export`, which the Export page launches
# The scorer's largest picture of a page, as `pages` stores it (crop "picture" prefers the curator's: see
# largest_picture).
BOX_COLUMNS = ("picture_x0", "picture_y0", "picture_x1", "picture_y1")


@dataclass(frozen=True)
class Item:
    """One exported image: a kept page, or one picture of it, as the export needs it."""

    doc_id: int
    page: int  # 0-based, as everywhere in the manifest; people read page_number(page)
    doc: str  # the PDF's path
    sha256: str
    doc_size: int  # bytes: a file whose size changed since scoring is not read
    sigma: float
    decided_by: str  # "override" or "threshold"
    caption: str | None  # the page's own caption from the Review page
    name: str  # file stem in the ZIP: unique, safe, and stable across exports
    width: int | None = None  # the page in reference pixels (144 dpi), as scored
    height: int | None = None
    picture_box: tuple[int, int, int, int] | None = None  # the illustration (or this picture), in reference pixels
    picture_share: float | None = None
    group: int | None = None  # its near-duplicate group, None when it has no near-identical page
    picture: int | None = None  # crop "pictures": which picture of the page, 1 the largest; None: the page
    # The picture's printed legend (OCR) and a captioning model's caption and its name; for a whole page,
    # those of its largest kept picture (see `with_caption_sources`).
    legend: str | None = None
    auto_caption: str | None = None
    auto_caption_model: str | None = None
    kind: str | None = None  # the picture's kind (the curator's, else learned or suggested), for the template's {kind}
    method: str | None = None  # how ingest read the page: "jpeg" (one plain JPEG covering it) or a render
    mask: MaskSource | None = None  # what the picture's mask is made from; None: a whole page (all of it learned)


_ITEM_FIELDS = frozenset(f.name for f in dataclasses.fields(Item))


@dataclass(frozen=True)
class LeftOut:
    """A kept page not exported because a near-identical page of its group is."""

    item: Item
    kept: Item  # the page of the group that is exported

    def as_dict(self) -> dict:
        return {"document": self.item.doc, "page": page_number(self.item.page), "group": self.item.group,
                "picture_share": _share(self.item.picture_share),
                "kept": {"document": self.kept.doc, "page": page_number(self.kept.page)}}


@dataclass(frozen=True)
class Selection:
    items: list[Item]  # what the export writes, in document order
    left_out: list[LeftOut] = field(default_factory=list)  # near-duplicates not written
    duplicates: int = 0  # pages that are near-duplicates of another exported page (written or not)

    @property
    def pages(self) -> int:
        """How many pages the images come from (fewer than the images when pictures are exported apart)."""
        return len({(item.doc_id, item.page) for item in self.items})


def select(manifest: Manifest, threshold: float | None = None, duplicates: str = "one",
           crop: str = "page") -> Selection:
    """The kept pages, in document order: a snapshot, so decisions changed during an export do not
    change it half way (one query). With `duplicates="one"` each group of near-identical plates gives one page:
    the one whose picture covers most of it, ties to the first by document path and page. With
    `crop="pictures"` each page then gives one item per picture (see `one_per_picture`). Rows are
    small; no image is read here."""
    items, used, stems = [], set(), {}
    for row in manifest.export_pages(threshold):
        stem = stems.get(row["doc"]) or stems.setdefault(row["doc"], safe_stem(row["doc"]))  # once a document
        name = f"{stem}-{row['sha256'][:8]}-p{page_number(row['page']):04d}"  # p0001: page 1
        while name in used:  # two documents sharing a name and a hash prefix: vanishingly rare
            name += "x"
        used.add(name)
        box = tuple(row[c] for c in BOX_COLUMNS)
        items.append(Item(row["doc_id"], row["page"], row["doc"], row["sha256"], row["doc_size"], row["sigma"],
                          row["decided_by"], row["caption"], name, row["width"], row["height"],
                          None if None in box else box, row["picture_share"], row["duplicate_group"],
                          method=row["method"]))
    selection = one_per_group(items) if duplicates == "one" else Selection(items, [], _duplicates(items))
    pictures = manifest.exported_pictures(threshold)
    learned = learned_kinds(manifest, (row["id"] for rows in pictures.values() for row in rows if not row["kind"]))
    if crop == "pictures":  # each picture's item is made with its caption sources: one copy of each, not two
        return dataclasses.replace(selection, items=one_per_picture(selection.items, pictures, learned))
    if crop == "picture":
        selection = dataclasses.replace(selection, items=largest_picture(selection.items, manifest, threshold))
    return dataclasses.replace(selection, items=with_caption_sources(selection.items, pictures, learned))


UNREAD_JOBS = (COUNT_JOB, EXPORT_JOB)


def selection_stamp(manifest: Manifest, threshold: float | None = None) -> tuple:
    """What `select` reads, in a few milliseconds: it changes whenever the selection may (a scoring or any job's
    progress, a person's change, the counters the manifest's triggers move, the rule's settings), so a selection
    kept under it is the one `select` would make now (Export keeps one between script runs: at 100,000 pictures
    it takes a second to make)."""
    params = manifest.decision_params(threshold)
    # Not the progress of a job that writes nothing `select` reads (the Threshold page's counting job, an export):
    # one running beside Export would have it list everything again on every run.
    return (str(manifest.path), scoring_stamp(manifest, UNREAD_JOBS), history.latest_id(manifest.conn),
            aggregates.version(manifest.conn), tuple(sorted(params.items())))


# Rows (pages and pictures) up to which `select` lists in a fraction of a second: at 40,000 pages and 100,000
# pictures it takes about a second, more on a busy server (docs/scale.md, first opens).
QUICK_ROWS = 20_000


def quick_to_select(manifest: Manifest) -> bool:
    """Whether `select` takes a fraction of a second here: the manifest's pages and pictures (their largest row
    ids, never fewer than the rows) under QUICK_ROWS. Milliseconds."""
    rows = manifest.conn.execute("SELECT IFNULL((SELECT MAX(rowid) FROM pages), 0) "
                                 "+ IFNULL((SELECT MAX(id) FROM pictures), 0)").fetchone()[0]
    return rows < QUICK_ROWS


def select_items(manifest: Manifest, threshold: float | None = None, duplicates: str = "one",
                 crop: str = "page") -> list[Item]:
    """The images an export writes (see `select`)."""
    return select(manifest, threshold, duplicates, crop).items


def thumbnail_sizes(manifest: Manifest, items: list[Item]) -> list[int | None]:
    """The bytes of each item's kept thumbnail (its picture's; its page's where it shows a page), None where none
    is kept: what the export's size estimate weighs each image by (preview.estimate_export)."""
    return picture_thumbnails.sizes(manifest.conn, manifest.thumbnail_folder, [
        (item.doc_id, item.sha256, item.page, item.picture, item.picture_box) for item in items])


def one_per_picture(items: list[Item], pictures: dict[tuple[int, int], list], learned: dict | None = None) -> list[Item]:
    """Each page with kept pictures (`Manifest.exported_pictures`) as one item per picture, in number order,
    named `<page's name>_pic<n>` after the picture's number on its page, which stays the same whatever the
    cutoff and across re-scoring; its caption is the picture's, else the page's; its legend, model caption and
    kind as `with_caption_sources` gives them. A kept page without a kept picture (the curator included the
    page itself) stays one item: it exports whole."""
    learned = learned or {}
    expanded = []
    for item in items:
        rows = pictures.get((item.doc_id, item.page))
        if not rows:
            expanded.append(item)
            continue
        expanded.extend(replaced(
            item, name=f"{item.name}_pic{row['number']}", picture_box=(row["bx0"], row["by0"], row["bx1"], row["by1"]),
            picture=row["number"], caption=row["caption"] or item.caption, mask=MaskSource.of_row(row),
            **caption_sources(row, learned)) for row in rows)
    return expanded


def replaced(item: Item, **changes) -> Item:
    """`dataclasses.replace(item, **changes)` without its work per field (a copy of the fields, the changes over
    them): a selection of 100,000 pictures makes two per picture, which took most of Export's first second."""
    unknown = changes.keys() - _ITEM_FIELDS
    if unknown:
        raise TypeError(f"Item has no field {', '.join(sorted(unknown))}")
    copy = object.__new__(Item)
    copy.__dict__.update(item.__dict__)
    copy.__dict__.update(changes)
    return copy


def with_caption_sources(items: list[Item], pictures: dict[tuple[int, int], list],
                         learned: dict | None = None) -> list[Item]:
    """Each item with its picture's legend, model caption and kind (`Manifest.exported_pictures` rows; `learned`:
    the kinds learned from the curator's marks, by picture id, curation.decisions.picture_kinds). A whole page
    takes those of its largest kept picture, and that picture's caption where the page has none of its own;
    a page without a kept picture has none."""
    learned = learned or {}
    filled = []
    for item in items:
        rows = pictures.get((item.doc_id, item.page)) or []
        if item.picture is not None:
            row = next((r for r in rows if r["number"] == item.picture), None)
        else:
            row = max(rows, key=lambda r: (r["box_area"], -r["number"]), default=None)
        if row is None:
            filled.append(item)
            continue
        filled.append(replaced(item, caption=item.caption if item.picture is not None else item.caption or row["caption"],
                               **caption_sources(row, learned)))
    return filled


def caption_sources(row, learned: dict) -> dict:
    """A picture row's legend, model caption (and its model's name) and kind, as an item takes them: a legend
    switched off is never exported."""
    _, legend, auto_caption = counted_sources(row)
    return {"legend": legend, "auto_caption": auto_caption,
            "auto_caption_model": row["auto_caption_model"] if auto_caption else None,
            "kind": kind_of(row, learned.get(row["id"]))}


def largest_picture(items: list[Item], manifest: Manifest, threshold: float | None = None) -> list[Item]:
    """Each page cut (crop "picture") to its largest picture as the curator left it: kept pictures first
    (an included or added one, a redrawn box), then the others; never one the curator deleted or excluded.
    A page whose every picture is deleted or excluded exports whole; a page without picture rows (scored
    before pictures were rows) keeps the scorer's box."""
    best: dict[tuple[int, int], tuple] = {}
    for row in manifest.picture_rows(threshold, order="x.doc_id, x.page, (x.deleted OR x.keep IS 0), "
                                                       "keep_picture DESC, box_area DESC, x.number"):
        key = (row["doc_id"], row["page"])
        if key not in best:
            refused = row["deleted"] or row["keep"] == 0
            best[key] = (None, None) if refused else ((row["bx0"], row["by0"], row["bx1"], row["by1"]),
                                                      MaskSource.of_row(row))
    return [replaced(item, picture_box=best[(item.doc_id, item.page)][0], mask=best[(item.doc_id, item.page)][1])
            if (item.doc_id, item.page) in best else item for item in items]


def one_per_group(items: list[Item]) -> Selection:
    """Keep the best page of each near-duplicate group, in the items' order; the others are left out."""
    best: dict[int, Item] = {}
    for item in items:
        if item.group is not None and (item.group not in best or _rank(item) < _rank(best[item.group])):
            best[item.group] = item
    kept, left_out = [], []
    for item in items:
        if item.group is None or best[item.group] is item:
            kept.append(item)
        else:
            left_out.append(LeftOut(item, best[item.group]))
    return Selection(kept, left_out, len(left_out))


def _rank(item: Item) -> tuple:
    """Smaller is better: the largest picture, then the first document by path, then the first page."""
    share = item.picture_share if item.picture_share is not None else -1.0
    return -share, item.doc, item.page, item.doc_id


def _duplicates(items: list[Item]) -> int:
    groups = [item.group for item in items if item.group is not None]
    return len(groups) - len(set(groups))


def _share(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def safe_stem(path: str) -> str:
    """A document's file name reduced to what is safe in any ZIP and file system: ASCII letters,
    digits, `_`, `-` and `.`, never a folder, never hidden, at most 48 characters."""
    stem = pathlib.PurePath(re.split(r"[\\/]", path)[-1]).stem
    stem = unicodedata.normalize("NFKD", stem).encode("ascii", "ignore").decode("ascii")
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", stem).strip("._-")
    return stem[:MAX_STEM].rstrip("._-") or "doc"
