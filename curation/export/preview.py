"""A few pages exactly as the export will write them, and what the whole ZIP will weigh."""

from __future__ import annotations

import threading
from dataclasses import dataclass

from .captions import caption_for
from .geometry import crop_box
from .selection import Item
from .settings import ExportSettings
from .worker import Exported, export_one, page_task

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
    crop: tuple[int, int, int, int] | None = None  # the picture the image was cut to (reference pixels)


def sample_items(items: list[Item], count: int = 4, settings: ExportSettings | None = None) -> list[Item]:
    """`count` items spread evenly over the selection, first and last included: a fair sample.

    When `settings` cut pages to their picture, at least half the sample (as many as there are) is
    pages that are cut, so the preview shows what the crop does; the rest are whole pages."""
    if settings is not None and settings.crop == "picture":
        cut = [item for item in items if crop_box(item, settings) is not None]
        whole = [item for item in items if crop_box(item, settings) is None]
        take_cut = min(len(cut), max(count - len(whole), (count + 1) // 2))
        chosen = set(map(id, _spread(cut, take_cut) + _spread(whole, count - take_cut)))
        return [item for item in items if id(item) in chosen]
    return _spread(items, count)


def _spread(items: list[Item], count: int) -> list[Item]:
    if len(items) <= count:
        return list(items)
    if count <= 1:
        return list(items[:count])
    step = (len(items) - 1) / (count - 1)
    return [items[round(i * step)] for i in range(count)]


def preview(item: Item, settings: ExportSettings) -> Preview:
    """One page as the export writes it: the same reader, crop, shaping and encoder."""
    with _MUPDF:
        result = export_one(page_task(item, settings))
    caption = caption_for(item, settings)
    crop = crop_box(item, settings)
    if isinstance(result, Exported):
        return Preview(item, result, caption, crop=crop)
    return Preview(item, None, caption, result.reason, crop)


def estimate_bytes(image_sizes: list[int], images: int) -> int | None:
    """The ZIP's size for `images` images from the sizes of a few sample JPEGs; None without samples."""
    if not image_sizes:
        return None
    return round(images * (sum(image_sizes) / len(image_sizes) + MEMBER_OVERHEAD)) + 4096
