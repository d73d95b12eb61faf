"""A few pages exactly as the export will write them, and what the whole ZIP will weigh."""

from __future__ import annotations

import threading
from dataclasses import dataclass

from .captions import caption_for
from .selection import Item
from .settings import ExportSettings
from .worker import Exported, PageTask, export_one

# Per image: two local headers, two central-directory entries (names twice each) and the caption.
MEMBER_OVERHEAD = 2 * (30 + 46) + 4 * 64 + 120
# MuPDF is not thread-safe and the app runs each browser session in a thread of one process.
_MUPDF = threading.Lock()


@dataclass(frozen=True)
class Preview:
    item: Item
    image: Exported | None  # None when the page could not be read
    caption: str
    problem: str | None = None


def sample_items(items: list[Item], count: int = 4) -> list[Item]:
    """`count` items spread evenly over the selection, first and last included: a fair sample."""
    if len(items) <= count:
        return list(items)
    step = (len(items) - 1) / (count - 1)
    return [items[round(i * step)] for i in range(count)]


def preview(item: Item, settings: ExportSettings) -> Preview:
    """One page as the export writes it: the same reader, shaping and encoder."""
    with _MUPDF:
        result = export_one(PageTask(item.doc, item.doc_size, item.page, settings))
    caption = caption_for(item, settings)
    if isinstance(result, Exported):
        return Preview(item, result, caption)
    return Preview(item, None, caption, result.reason)


def estimate_bytes(image_sizes: list[int], images: int) -> int | None:
    """The ZIP's size for `images` images from the sizes of a few sample JPEGs; None without samples."""
    if not image_sizes:
        return None
    return round(images * (sum(image_sizes) / len(image_sizes) + MEMBER_OVERHEAD)) + 4096
