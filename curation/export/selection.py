"""Which pages an export takes (the curator's decisions, one page per group of near-duplicates) and the
file name each one gets."""

from __future__ import annotations

import pathlib
import re
import unicodedata
from dataclasses import dataclass, field

from ..manifest import Manifest

MAX_STEM = 48
BOX_COLUMNS = ("picture_x0", "picture_y0", "picture_x1", "picture_y1")


@dataclass(frozen=True)
class Item:
    """One kept page, as the export needs it."""

    doc_id: int
    page: int  # 0-based, as everywhere in the manifest
    doc: str  # the PDF's path
    sha256: str
    doc_size: int  # bytes: a file whose size changed since scoring is not read
    sigma: float
    decided_by: str  # "override" or "threshold"
    caption: str | None  # the page's own caption from the Review page
    name: str  # file stem in the ZIP: unique, safe, and stable across exports
    width: int | None = None  # the page in reference pixels (144 dpi), as scored
    height: int | None = None
    picture_box: tuple[int, int, int, int] | None = None  # the illustration, in reference pixels
    picture_share: float | None = None
    group: int | None = None  # its near-duplicate group, None when it has no near-identical page


@dataclass(frozen=True)
class LeftOut:
    """A kept page not exported because a near-identical page of its group is."""

    item: Item
    kept: Item  # the page of the group that is exported

    def as_dict(self) -> dict:
        return {"document": self.item.doc, "page": self.item.page, "group": self.item.group,
                "picture_share": _share(self.item.picture_share),
                "kept": {"document": self.kept.doc, "page": self.kept.page}}


@dataclass(frozen=True)
class Selection:
    items: list[Item]  # what the export writes, in document order
    left_out: list[LeftOut] = field(default_factory=list)  # near-duplicates not written
    duplicates: int = 0  # pages that are near-duplicates of another exported page (written or not)


def select(manifest: Manifest, threshold: float | None = None, duplicates: str = "one") -> Selection:
    """The kept pages, in document order: a snapshot, so decisions changed during an export do not
    change it half way (one query). With `duplicates="one"` each group of near-identical plates gives one page:
    the one whose picture covers most of it, ties to the first by document path and page. Rows are
    small; no image is read here."""
    items, used = [], set()
    for row in manifest.export_pages(threshold):
        name = f"{safe_stem(row['doc'])}-{row['sha256'][:8]}-p{row['page']:04d}"
        while name in used:  # two documents sharing a name and a hash prefix: vanishingly rare
            name += "x"
        used.add(name)
        box = tuple(row[c] for c in BOX_COLUMNS)
        items.append(Item(row["doc_id"], row["page"], row["doc"], row["sha256"], row["doc_size"], row["sigma"],
                          row["decided_by"], row["caption"], name, row["width"], row["height"],
                          None if None in box else box, row["picture_share"], row["duplicate_group"]))
    return one_per_group(items) if duplicates == "one" else Selection(items, [], _duplicates(items))


def select_items(manifest: Manifest, threshold: float | None = None, duplicates: str = "one") -> list[Item]:
    """The pages an export writes (see `select`)."""
    return select(manifest, threshold, duplicates).items


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
