"""Images exactly as the export will write them, screen by screen over all it writes, and what the whole
ZIP will weigh."""

from __future__ import annotations

import dataclasses
import threading
from dataclasses import dataclass

from .captions import CaptionTooLong, caption_for
from .geometry import crop_box
from .selection import Item
from .settings import ExportSettings
from .job import ENLARGED
from .worker import Exported, Measured, TooSmall, export_one, measure_all, page_task

# Per image: two local headers, two central-directory entries (names twice each) and the caption.
MEMBER_OVERHEAD = 2 * (30 + 46) + 4 * 64 + 120
MASK_MEMBER_OVERHEAD = (30 + 46) + 2 * 64  # its mask, where masks are written: one more member
# Images encoded for the estimate: a second's work after the page is drawn, kept per image and settings. Twelve,
# weighed by their thumbnails, were 7.6 % over on 103 real pictures (bench/bench_estimate.py).
ESTIMATE_SAMPLE = 24
# An image's bytes go as its thumbnail's (kept in the manifest: free to weigh) times its enlargement to this power:
# a small source enlarged comes out smooth, which its thumbnail does not show. Chosen on ../shared/boxed, where
# -0.75 missed least (-0.5 and -1 more), and measured on the shared real pages, where -0.75 also missed least
# (bench/bench_estimate.py).
ENLARGED_POWER = -0.75
WEIGHED = 20_000  # images whose thumbnails weigh the estimate at most (spread over the export)
# MuPDF is not thread-safe and the app runs each browser session in a thread of one process.
_MUPDF = threading.Lock()


@dataclass(frozen=True)
class Preview:
    item: Item
    image: Exported | None  # None when the page could not be read
    caption: str
    problem: str | None = None
    crop: tuple[int, int, int, int] | None = None  # the picture the image was cut to (reference pixels)
    too_small: int | None = None  # left out under the minimum source size: the source's short side in pixels


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
    return Preview(item, None, caption, result.reason, crop, getattr(result, "source_side", None))


@dataclass(frozen=True)
class Counted:
    """What an export of these items writes, counted on every one of them as the export decides it: the
    same selection, the same minimum source size, the same captions, the same enlargements."""

    images: int  # written
    too_small: int  # left out under the minimum source size
    unreadable: int  # left out: the page cannot be read, or its caption is too long
    enlarged: int  # of the written, enlarged from a smaller source (ENLARGED or more)
    twice: int  # of those, more than 2x
    smallest: float  # the least and the most enlarged (1.0 when none is)
    largest: float
    left_out: tuple[tuple[int, str], ...] = ()  # the items not written: their positions in the selection, and why
    upscales: tuple[float, ...] = ()  # each written image's enlargement (1.0: none), in the order written

    def written(self, items: list) -> list:
        """Of `items` (the selection these figures were counted on), those the export writes."""
        gone = {n for n, _ in self.left_out}
        return [item for n, item in enumerate(items) if n not in gone]


def count_export(items: list[Item], settings: ExportSettings, roots=None) -> Counted:
    """The export's figures, exact: each item's source measured from its header (no pixel decoded; about a
    millisecond an image), each caption made. What the finished ZIP's export.json and manifest.csv say."""
    with _MUPDF:
        results = measure_all([page_task(item, settings, roots) for item in items])
    factors, too_small, unreadable, left_out = [], 0, 0, []
    for n, (item, result) in enumerate(zip(items, results)):
        if isinstance(result, TooSmall):
            too_small += 1
            left_out.append((n, result.reason))
            continue
        why = result.reason if not isinstance(result, Measured) else _caption_too_long(item, settings)
        if why:
            unreadable += 1
            left_out.append((n, why))
            continue
        factors.append(result.upscale)
    enlarged = [factor for factor in factors if factor >= ENLARGED]
    return Counted(len(factors), too_small, unreadable, len(enlarged), sum(f > 2 for f in enlarged),
                   min(enlarged, default=1.0), max(enlarged, default=1.0), tuple(left_out), tuple(factors))


def _caption_too_long(item: Item, settings: ExportSettings) -> str | None:
    """Why the item's caption cannot be written (the message of CaptionTooLong), or None."""
    try:
        caption_for(item, settings)
    except CaptionTooLong as exc:
        return str(exc)
    return None


def estimate_items(items: list[Item], count: int = ESTIMATE_SAMPLE) -> list[Item]:
    """The images the estimate encodes: `count` spread evenly over all the export writes (a preview screen
    shows four neighbours, often alike: a page's pictures, or one issue's pages)."""
    return _spread(items, count)


def estimate_export(items: list[Item], counted: Counted | None, previews, thumbnails=None) -> "Estimate":
    """The estimate of the export of `items`: `previews` (a callable, items to their Preview) of estimate_items'
    images, spread over the images the export writes where each was counted (`counted`), else over all. Spread over
    all under a minimum source size, the sample was spent on images left out: 13 written of 45 real pictures were
    estimated 38 % over the ZIP, and 2 % over sampled among the written.

    With `thumbnails` (a callable, items to the bytes of their kept thumbnails, None where none is kept), a
    regression estimate: each image weighs its thumbnail's bytes times its enlargement to ENLARGED_POWER, and the
    mean image is the sample's, moved along the line the sample draws from weight to bytes by as much as the
    export's mean weight (up to WEIGHED images, spread) differs from the sample's (a blank page's paper grain
    costs bytes that its thumbnail does not show: a line, not a ratio). Twelve real pictures miss their export's
    mean image by 10 % at the median (24 % at the 90th percentile); 24 weighed so, by 3.6 % (8 %)
    (bench/bench_estimate.py)."""
    pool = counted.written(items) if counted else items
    chosen = estimate_items(pool)
    shown = previews(chosen)
    guess = estimate(shown, len(pool), counted.images if counted else None)
    if thumbnails is None or guess.bytes is None:
        return guess
    weighed = _spread(list(range(len(pool))), WEIGHED)
    sampled_ids = {id(item) for item in chosen}
    looked = sorted(set(weighed) | {n for n, item in enumerate(pool) if id(item) in sampled_ids})
    enlarged = counted.upscales if counted else (1.0,) * len(pool)
    weight = {n: size * enlarged[n] ** ENLARGED_POWER
              for n, size in zip(looked, thumbnails([pool[n] for n in looked])) if size}
    by_name = {pool[n].name: w for n, w in weight.items()}
    sampled = [(image_bytes(p), by_name.get(p.item.name)) for p in shown if p.image is not None]
    known = [weight[n] for n in weighed if n in weight]
    if not sampled or not known or any(w is None for _, w in sampled):  # a sampled image unweighed: the plain mean
        return guess
    each = _regression(sampled, sum(known) / len(known))
    return dataclasses.replace(guess, bytes=zip_size(guess.images, each, shown))


def _regression(sampled: list[tuple[int, float]], mean_weight: float) -> float:
    """The mean image's bytes: the sample's (bytes, weight) pairs' mean bytes, moved by their least-squares slope
    (none where it falls: weight that predicts fewer bytes is noise) times how far `mean_weight` lies from theirs."""
    count = len(sampled)
    bytes_mean = sum(b for b, _ in sampled) / count
    weight_mean = sum(w for _, w in sampled) / count
    spread = sum((w - weight_mean) ** 2 for _, w in sampled)
    slope = sum((b - bytes_mean) * (w - weight_mean) for b, w in sampled) / spread if spread else 0.0
    return bytes_mean + max(0.0, slope) * (mean_weight - weight_mean)


def image_bytes(shown: Preview) -> int:
    """The bytes an image brings besides its caption: its JPEG and its mask."""
    return len(shown.image.jpeg) + len(shown.image.mask_png or b"")


def zip_size(written: int, each: float, shown: list[Preview]) -> int:
    """The ZIP of `written` images of `each` bytes (image and mask), with the captions and entries of `shown`."""
    made = [p for p in shown if p.image is not None]
    captions = sum(len(p.caption.encode()) for p in made) / max(1, len(made))
    members = MEMBER_OVERHEAD + (MASK_MEMBER_OVERHEAD if any(p.image.mask_png for p in made) else 0)
    return round(written * (each + captions + members)) + 4096


@dataclass(frozen=True)
class Estimate:
    """What the whole export will be, from `sampled` images encoded exactly as it encodes them."""

    bytes: int | None  # the ZIP; None when no sampled image could be made
    images: int  # images it writes: all selected, less those under the minimum source size
    enlarged: int  # of those, enlarged from a smaller source (ENLARGED or more)
    largest: float  # the largest enlargement sampled
    twice: int  # enlarged more than 2x: soft
    too_small: int  # left out under the minimum source size
    sampled: int

    @property
    def exact(self) -> bool:
        return self.sampled >= self.images + self.too_small


def estimate(previews: list[Preview], images: int, written: int | None = None) -> Estimate:
    """The export of `images` images, scaled up from `previews` (estimate_items' images, previewed): its ZIP's
    size (the mean image, caption and ZIP entry per image), how many are enlarged and how many left out.
    `written`: the images the export writes, when counted (`count_export`); the size is for those."""
    shown = [p for p in previews if p.image is not None]
    made = [p.image for p in shown]
    measured = len(made) + sum(p.too_small is not None for p in previews)
    if not measured:
        return Estimate(None, images, 0, 1.0, 0, 0, 0)
    share = images / measured

    def scaled(count: int) -> int:
        return round(count * share)

    factors = [image.upscale for image in made if image.upscale >= ENLARGED]
    too_small = scaled(measured - len(made))
    written = images - too_small if written is None else written
    size = zip_size(written, sum(map(image_bytes, shown)) / len(shown), shown) if made else None
    return Estimate(size, written, scaled(len(factors)), max(factors, default=1.0), scaled(sum(f > 2 for f in factors)),
                    too_small, measured)
