"""Images exactly as the export will write them, screen by screen over all it writes, and what the whole
ZIP will weigh."""

from __future__ import annotations

import threading
from dataclasses import dataclass

from .captions import CaptionTooLong, caption_for
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
    pages that are cut, so the preview shows what the crop does; the rest are whole pages. When each
    picture is an image of its own, the sample is of pages, each shown with all its pictures (up to
    `count` images in all, a page with several pictures first)."""
    if settings is not None and settings.crop == "pictures":
        return _sample_pages(items, count, settings)
    if settings is not None and settings.crop == "picture":
        return _balanced(items, count, lambda item: crop_box(item, settings) is not None)
    return _spread(items, count)


def screens(items: list, per_screen: int) -> int:
    """How many screens of `per_screen` images the preview pages through (at least one)."""
    return max(1, -(-len(items) // per_screen))


def screen_items(items: list[Item], screen: int, per_screen: int) -> list[Item]:
    """The images of preview screen `screen` (from 1, clamped to the screens there are), in the order the
    export writes them."""
    screen = min(max(1, screen), screens(items, per_screen))
    return items[(screen - 1) * per_screen:screen * per_screen]


def _balanced(units: list, count: int, is_cut) -> list:
    """`count` of `units`, at least half of them cut (as many as there are), each kind spread evenly."""
    cut = [unit for unit in units if is_cut(unit)]
    whole = [unit for unit in units if not is_cut(unit)]
    take_cut = min(len(cut), max(count - len(whole), (count + 1) // 2))
    chosen = set(map(id, _spread(cut, take_cut) + _spread(whole, count - take_cut)))
    return [unit for unit in units if id(unit) in chosen]


def _sample_pages(items: list[Item], count: int, settings: ExportSettings) -> list[Item]:
    pages: dict[tuple[int, int], list[Item]] = {}
    for item in items:
        pages.setdefault((item.doc_id, item.page), []).append(item)
    several = _spread([images for images in pages.values() if len(images) > 1], 1)
    others = [images for images in pages.values() if not several or images is not several[0]]
    # What this crop is for first: one page shown as its pictures (leaving room for one other page).
    chosen = several[0][:count - 1 if others else count] if several else []
    rest = _balanced(others, count - len(chosen), lambda images: crop_box(images[0], settings) is not None)
    whole = [images for images in rest if crop_box(images[0], settings) is None]
    for images in whole + [images for images in rest if images not in whole]:  # whole pages before they are crowded out
        chosen += images[:count - len(chosen)]
    position = {id(item): n for n, item in enumerate(items)}
    return sorted(chosen, key=lambda item: position[id(item)])


def _spread(items: list[Item], count: int) -> list[Item]:
    if len(items) <= count:
        return list(items)
    if count <= 1:
        return list(items[:count])
    step = (len(items) - 1) / (count - 1)
    return [items[round(i * step)] for i in range(count)]


def preview(item: Item, settings: ExportSettings, roots=None) -> Preview:
    """One page as the export writes it: the same reader (its PDF read only under `roots`), crop, shaping
    and encoder."""
    with _MUPDF:
        result = export_one(page_task(item, settings, roots))
    crop = crop_box(item, settings)
    try:
        caption = caption_for(item, settings)
    except CaptionTooLong as exc:  # the export skips this image for it: the preview says so
        return Preview(item, None, "", str(exc), crop)
    if isinstance(result, Exported):
        return Preview(item, result, caption, crop=crop)
    return Preview(item, None, caption, result.reason, crop)


def estimate_bytes(image_sizes: list[int], images: int) -> int | None:
    """The ZIP's size for `images` images from the sizes of a few sample JPEGs; None without samples."""
    if not image_sizes:
        return None
    return round(images * (sum(image_sizes) / len(image_sizes) + MEMBER_OVERHEAD)) + 4096
