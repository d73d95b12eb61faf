"""What the Pictures view draws: a card's picture, and the large view's page with every box numbered, zoomed
around the open picture, where a drag draws a box.

A card shows the picture as the export crops it (curation.export.card), cut when the picture was found and
kept like the page thumbnails (curation.manifest.picture_thumbnails): reading a screen of them costs what
reading page thumbnails does. A card missing (a box added or redrawn elsewhere, a manifest ingested before
cards were kept, the store `none`) is drawn from the PDF (30 ms a picture on a real 300-dpi front page) and
kept; without the PDF it is cut from the page's thumbnail, small and soft, as before. The large view draws the
whole page from its PDF, on demand and kept for the next few (0.4 s at 1,400 pixels,
curation.views.render_page).
"""

from __future__ import annotations

import functools
import io
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import PIL.Image
import PIL.ImageDraw

from ..manifest.pictures import PictureError
from ..manifest.store import Manifest
from ..pictures.region import MaskSource
from .images import OUTLINE_COLOUR, draw_cards, open_jpeg, thumbnails

CROP_SIDE = 200  # pixels: a card's square crop, enough for the widest card of the grid
CROP_MARGIN = 0.03  # of the page's width: a little of the page around the box, to see what the box cut
PAPER = (243, 238, 228)  # the theme's secondary background: the letterbox around a crop
OUTLINE_MIN_WIDTH = 800  # pixels: a smaller page image is enlarged before its boxes are drawn
SELECTED_COLOUR = (0, 114, 178)  # the open picture's box: a blue no scan is printed in
MASK_VEIL_COLOUR, MASK_VEIL_ALPHA = (213, 94, 0), 140  # what the mask leaves out, veiled: an orange-red, half seen


# -- crops and the page with its boxes ----------------------------------------------------------


def crop(image: bytes, box: Sequence[float], page_width: int, page_height: int, side: int = CROP_SIDE) -> bytes:
    """The part of `image` (a page, any size, JPEG) inside `box` (reference pixels of a page `page_width` by
    `page_height`) with a small margin, fitted into a `side`-pixel square on paper colour: every card the
    same height, whatever the picture's shape."""
    with open_jpeg(image) as opened:
        picture = opened.convert("RGB")
    sx, sy = picture.width / page_width, picture.height / page_height
    margin = CROP_MARGIN * page_width
    x0, y0, x1, y1 = box[:4]
    region = (max(0, int((x0 - margin) * sx)), max(0, int((y0 - margin) * sy)),
              min(picture.width, int(round((x1 + margin) * sx))), min(picture.height, int(round((y1 + margin) * sy))))
    if region[2] - region[0] < 1 or region[3] - region[1] < 1:
        region = (0, 0, picture.width, picture.height)
    part = picture.crop(region)
    scale = side / max(part.width, part.height)
    part = part.resize((max(1, round(part.width * scale)), max(1, round(part.height * scale))), PIL.Image.LANCZOS)
    square = PIL.Image.new("RGB", (side, side), PAPER)
    square.paste(part, ((side - part.width) // 2, (side - part.height) // 2))
    out = io.BytesIO()
    square.save(out, "JPEG", quality=85)
    return out.getvalue()


def crops(manifest: Manifest, rows: Iterable[dict]) -> dict[int, bytes]:
    """Each picture's card by id: the kept one cut for its box as it is now, else drawn from the PDF (and
    kept), else cut from its page's thumbnail; pictures whose page has no image are absent."""
    return screen_crops(manifest, rows).cards


@dataclass(frozen=True)
class ScreenCards:
    """A screen's cards by picture id, and those of its pictures still to be drawn from their PDF (each shown
    cut from its page's thumbnail meanwhile)."""

    cards: dict[int, bytes]
    to_draw: tuple[int, ...] = ()


def screen_crops(manifest: Manifest, rows: Iterable[dict], seconds: float | None = None) -> ScreenCards:
    """`crops`, drawing missing cards from their PDFs for at most about `seconds` (None: all): past it a card
    is cut from its page's thumbnail for now and named in `to_draw`, for the next run to draw."""
    rows = list(rows)
    cut = manifest.picture_cards(rows)
    missing = [row for row in rows if row["id"] not in cut]
    if seconds is None:
        cut.update(draw_cards(manifest, missing))
        missing = []
    deadline = time.monotonic() + (seconds or 0)
    while missing and time.monotonic() < deadline:  # one at a time, each kept as it is drawn
        cut.update(draw_cards(manifest, [missing.pop(0)]))
    to_draw = tuple(row["id"] for row in missing)
    rows = [row for row in rows if row["id"] not in cut]
    pages = thumbnails(manifest, {(row["doc_id"], row["page"]) for row in rows}, draw_missing=True)
    for row in rows:
        thumb = pages.get((row["doc_id"], row["page"]))
        if thumb and row["width"] and row["height"]:
            cut[row["id"]] = _kept_crop(thumb, (row["bx0"], row["by0"], row["bx1"], row["by1"]), row["width"],
                                        row["height"])
    return ScreenCards(cut, to_draw)


CROPS_KEPT = 1000  # crops kept in memory (about 10 kB each, and their thumbnail's 10 kB): twenty screens


@functools.lru_cache(maxsize=CROPS_KEPT)
def _kept_crop(image: bytes, box: tuple, page_width: int, page_height: int) -> bytes:
    """Keyed by the thumbnail's bytes and the box: a redrawn box or a new thumbnail is cut anew."""
    return crop(image, box, page_width, page_height)


def numbered_outline(image: bytes, boxes: list[dict], page_width: int, selected: int | None = None,
                     handles: float | None = None) -> PIL.Image.Image:
    """`image` (the page drawn, JPEG) with every picture box of `boxes` (page_boxes) drawn and numbered as the
    export numbers them; the `selected` picture in blue, deleted ones dashed. `handles` (reference pixels): the
    selected box's corner handles, squares reaching this far from each corner: a drag that starts inside one
    moves that corner (`dragged_box` with the same `grab`)."""
    with open_jpeg(image) as opened:
        picture = opened.convert("RGB")
    if picture.width < OUTLINE_MIN_WIDTH:  # a thumbnail, when the PDF is not at hand: boxes and numbers legible
        height = round(picture.height * OUTLINE_MIN_WIDTH / picture.width)
        picture = picture.resize((OUTLINE_MIN_WIDTH, height), PIL.Image.LANCZOS)
    scale = picture.width / page_width
    draw = PIL.ImageDraw.Draw(picture)
    line = max(2, round(picture.width / 300))
    size = max(14, round(picture.width / 40))
    for row in boxes:
        x0, y0, x1, y1 = (row[k] * scale for k in ("bx0", "by0", "bx1", "by1"))
        colour = SELECTED_COLOUR if row["id"] == selected else OUTLINE_COLOUR
        if row["deleted"]:
            _dashed_rectangle(draw, (x0, y0, x1, y1), colour, line)
        else:
            draw.rectangle([x0, y0, x1, y1], outline=colour, width=line * (2 if row["id"] == selected else 1))
        label = str(row["number"])
        draw.rectangle([x0, y0, x0 + size * (0.7 * len(label) + 0.5), y0 + size * 1.3], fill=colour)
        draw.text((x0 + size * 0.25, y0 + size * 0.1), label, fill=(255, 255, 255), font_size=size)
    chosen = next((row for row in boxes if row["id"] == selected), None)
    if handles and chosen is not None:
        reach = max(3.0, handles * scale)
        x0, y0, x1, y1 = (chosen[k] * scale for k in ("bx0", "by0", "bx1", "by1"))
        for cx, cy in ((x0, y0), (x1, y0), (x0, y1), (x1, y1)):
            draw.rectangle([cx - reach, cy - reach, cx + reach, cy + reach], fill=(255, 255, 255),
                           outline=SELECTED_COLOUR, width=max(2, line))
    return picture


def with_mask(picture: PIL.Image.Image, row, page_width: int) -> PIL.Image.Image:
    """`picture` (the page as numbered_outline draws it, `page_width` reference pixels wide) with the open picture's
    mask shown (`row`: its picture row): what of its box the export's mask does not learn (the paper, a legend or
    type the box took in, a stamp painted out) veiled in red; the learned part as it is."""
    box = tuple(int(row[k]) for k in ("bx0", "by0", "bx1", "by1"))
    mask = MaskSource.of_row(row).mask(box, box)
    if mask.all() or not mask.size:
        return picture
    scale = picture.width / page_width
    x0, y0, x1, y1 = (round(v * scale) for v in box)
    if x1 <= x0 or y1 <= y0:
        return picture
    veil = PIL.Image.fromarray(((~mask).view("uint8") * MASK_VEIL_ALPHA)).resize((x1 - x0, y1 - y0), PIL.Image.NEAREST)
    shown = picture.copy()
    shown.paste(PIL.Image.new("RGB", veil.size, MASK_VEIL_COLOUR), (x0, y0), veil)
    return shown


def mask_words(row) -> str:
    """What a picture's mask is made of, in words (`row`: its picture row)."""
    source = MaskSource.of_row(row)
    made = ("the whole box (turned off)" if source.off else "the picture's own region" if source.kind == "region"
            else "its box (no region found)")
    return made + (f"; {len(source.stamps)} part(s) painted out" if source.stamps and not source.off else "")


def _dashed_rectangle(draw: PIL.ImageDraw.ImageDraw, box: tuple, colour: tuple, width: int, dash: int = 12) -> None:
    x0, y0, x1, y1 = box
    for start, end in (((x0, y0), (x1, y0)), ((x1, y0), (x1, y1)), ((x1, y1), (x0, y1)), ((x0, y1), (x0, y0))):
        length = max(abs(end[0] - start[0]), abs(end[1] - start[1]))
        for t in range(0, int(length), dash * 2):
            a, b = t / length, min(1.0, (t + dash) / length)
            draw.line([(start[0] + (end[0] - start[0]) * a, start[1] + (end[1] - start[1]) * a),
                       (start[0] + (end[0] - start[0]) * b, start[1] + (end[1] - start[1]) * b)],
                      fill=colour, width=width)


def zoom_region(box: Sequence[float], page_width: int, page_height: int, zoom: float) -> tuple[int, int, int, int]:
    """What the large view shows of a page at `zoom` (reference pixels): the whole page at 1×, else a window
    of the page's shape, 1/zoom of its sides, centred on the picture's box and held inside the page."""
    if zoom <= 1:
        return 0, 0, page_width, page_height
    width, height = page_width / zoom, page_height / zoom
    x0 = min(max(0.0, (box[0] + box[2]) / 2 - width / 2), page_width - width)
    y0 = min(max(0.0, (box[1] + box[3]) / 2 - height / 2), page_height - height)
    return round(x0), round(y0), round(x0 + width), round(y0 + height)


FIT_ASPECT = 1.4  # the fitted view's width over its height: 731 px wide, about 520 px tall in the dialog
FIT_MARGIN = 1.35  # the fitted view's side over the picture's: the picture fills about three quarters of it


def fit_region(box: Sequence[float], page_width: int, page_height: int, aspect: float = FIT_ASPECT,
               margin: float = FIT_MARGIN) -> tuple[int, int, int, int]:
    """The part of a page the large view opens on (reference pixels): centred on the picture's `box`, the
    picture filling most of it, about as wide as `aspect` times its height (taller for a tall picture), held
    inside the page. On a newspaper page the picture is then on screen at once, large enough to fix."""
    bw, bh = max(1.0, box[2] - box[0]), max(1.0, box[3] - box[1])
    width = min(float(page_width), max(bw * margin, bh * margin * aspect))
    height = min(float(page_height), max(width / aspect, bh * margin))
    x0 = min(max(0.0, (box[0] + box[2]) / 2 - width / 2), page_width - width)
    y0 = min(max(0.0, (box[1] + box[3]) / 2 - height / 2), page_height - height)
    return round(x0), round(y0), round(x0 + width), round(y0 + height)


def zoomed(page: PIL.Image.Image, region: Sequence[int], page_width: int) -> PIL.Image.Image:
    """`page` (numbered_outline's image of a page `page_width` reference pixels wide) cut to `region` and
    enlarged back to the image's width: the large view at its zoom."""
    scale = page.width / page_width
    part = page.crop(tuple(round(v * scale) for v in region))
    if part.width >= page.width:
        return part
    return part.resize((page.width, round(part.height * page.width / part.width)), PIL.Image.LANCZOS)


def page_point(click: Sequence[float], shown_width: float, region: Sequence[int]) -> tuple[float, float]:
    """A click on `region` of a page (zoom_region) shown `shown_width` pixels wide, in reference pixels."""
    if not shown_width:
        raise PictureError("the page's size on screen is not known; click again")
    scale = (region[2] - region[0]) / shown_width
    return region[0] + click[0] * scale, region[1] + click[1] * scale


def box_of_corners(first: Sequence[float], second: Sequence[float]) -> list[int]:
    """Two opposite corners in reference pixels, in any order, as a box. Manifest.add_picture and
    set_picture_box hold it to the page and refuse a line or a point."""
    (ax, ay), (bx, by) = first[:2], second[:2]
    return [round(min(ax, bx)), round(min(ay, by)), round(max(ax, bx)), round(max(ay, by))]


def box_from_clicks(first: Sequence[float], second: Sequence[float], shown_width: float,
                    page_width: int, region: Sequence[int] | None = None) -> list[int]:
    """Two clicks on a page shown `shown_width` pixels wide (on `region` of it when zoomed; the whole page
    by default), as a box in reference pixels."""
    region = region or (0, 0, page_width, 0)
    return box_of_corners(page_point(first, shown_width, region), page_point(second, shown_width, region))


CORNER_GRAB = 0.015  # of the shown region's width: a drag starting this near a corner of the box (inside the handle drawn there) moves that corner


def dragged_box(box: Sequence[float] | None, start: Sequence[float], end: Sequence[float], grab: float) -> list[int]:
    """The box a drag from `start` to `end` (reference pixels) draws: with the open picture's `box` given, a drag
    from within `grab` of one of its corners moves that corner (the opposite one stays), so a box is adjusted
    without drawing it again; any other drag is a new box from corner to corner."""
    if box is not None:
        x0, y0, x1, y1 = box[:4]
        corners = [(x0, y0, x1, y1), (x1, y0, x0, y1), (x0, y1, x1, y0), (x1, y1, x0, y0)]  # grabbed, then opposite
        distance, opposite = min((max(abs(start[0] - cx), abs(start[1] - cy)), (ox, oy))
                                 for cx, cy, ox, oy in corners)
        if distance <= grab:
            return box_of_corners(opposite, end)
    return box_of_corners(start, end)
