"""Which pages an export takes (the curator's decisions) and the file name each one gets."""

from __future__ import annotations

import pathlib
import re
import unicodedata
from dataclasses import dataclass

from ..manifest import Manifest

MAX_STEM = 48


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


def select_items(manifest: Manifest, threshold: float | None = None) -> list[Item]:
    """Every kept page, in document order: a snapshot, so decisions changed during an export do
    not change it half way. Rows are small; no image is read here."""
    items, used = [], set()
    for row in manifest.export_pages(threshold):
        name = f"{safe_stem(row['doc'])}-{row['sha256'][:8]}-p{row['page']:04d}"
        while name in used:  # two documents sharing a name and a hash prefix: vanishingly rare
            name += "x"
        used.add(name)
        items.append(Item(row["doc_id"], row["page"], row["doc"], row["sha256"], row["doc_size"],
                          row["sigma"], row["decided_by"], row["caption"], name))
    return items


def safe_stem(path: str) -> str:
    """A document's file name reduced to what is safe in any ZIP and file system: ASCII letters,
    digits, `_`, `-` and `.`, never a folder, never hidden, at most 48 characters."""
    stem = pathlib.PurePath(re.split(r"[\\/]", path)[-1]).stem
    stem = unicodedata.normalize("NFKD", stem).encode("ascii", "ignore").decode("ascii")
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", stem).strip("._-")
    return stem[:MAX_STEM].rstrip("._-") or "doc"
