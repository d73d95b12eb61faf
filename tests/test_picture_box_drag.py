"""Fixing a box by dragging: the corner handles drawn are exactly where a drag moves a corner; any other drag,
from inside the old box too, draws a new box; and what a box would do to the picture's decision is known before
anything is saved (the large view asks before a drag excludes a picture)."""

import io

import numpy as np
import PIL.Image

from curation import Manifest
from curation.manifest import history
from curation.views import picture_views as pv
from test_app_pictures import ENGRAVING, with_pictures

PAGE_WIDTH = 1224


def page_jpeg(width=PAGE_WIDTH, height=1584) -> bytes:
    out = io.BytesIO()
    PIL.Image.new("RGB", (width, height), (200, 190, 170)).save(out, "JPEG", quality=95)
    return out.getvalue()


def boxes():
    return [{"id": 1, "number": 1, "deleted": 0, "bx0": ENGRAVING[0], "by0": ENGRAVING[1], "bx1": ENGRAVING[2],
             "by1": ENGRAVING[3]}]


def test_the_handles_are_drawn_where_a_drag_grabs_a_corner():
    region = (0, 0, PAGE_WIDTH, 1584)
    grab = pv.CORNER_GRAB * (region[2] - region[0])
    plain = np.asarray(pv.numbered_outline(page_jpeg(), boxes(), PAGE_WIDTH, selected=1))
    handled = np.asarray(pv.numbered_outline(page_jpeg(), boxes(), PAGE_WIDTH, selected=1, handles=grab))
    x1, y1 = ENGRAVING[2], ENGRAVING[3]
    inside_handle = (int(y1 + grab * 0.6), int(x1 + grab * 0.6))  # within the handle, off the box's own line
    assert tuple(handled[inside_handle]) > (240, 240, 240) and tuple(plain[inside_handle]) < (215, 215, 215)
    outside = (int(y1 + grab * 1.6), int(x1 + grab * 1.6))
    assert tuple(handled[outside]) == tuple(plain[outside])
    # A drag from inside that handle moves the corner; the opposite corner stays.
    start = (x1 + grab * 0.6, y1 + grab * 0.6)
    assert pv.dragged_box(ENGRAVING[:4], start, (650, 700), grab) == [ENGRAVING[0], ENGRAVING[1], 650, 700]


def test_a_drag_from_inside_the_old_box_away_from_the_handles_draws_a_new_box():
    grab = pv.CORNER_GRAB * PAGE_WIDTH  # about 18 reference pixels at 1x
    x0, y0 = ENGRAVING[0], ENGRAVING[1]
    # The drag began about 3 screen pixels (6 reference pixels at 731 px) inside the corner: that is on
    # the handle, drawn now. One that begins clear of the handles, inside the box, is a new box.
    start = (x0 + 3 * grab, y0 + 3 * grab)
    assert pv.dragged_box(ENGRAVING[:4], start, (500, 600), grab) == [round(start[0]), round(start[1]), 500, 600]
    on_handle = (x0 + 6, y0 + 6)
    assert pv.dragged_box(ENGRAVING[:4], on_handle, (500, 600), grab) == [500, 600, ENGRAVING[2], ENGRAVING[3]]


def test_what_a_box_would_do_is_said_before_anything_is_saved(tmp_path):
    db = tmp_path / "data" / "manifest.sqlite"
    with_pictures(db, pages=1)
    with Manifest(db) as manifest:
        engraving = next(r["id"] for r in manifest.picture_rows() if r["number"] == 1)
        before = dict(manifest.picture(engraving))
        actions = len(history.actions(manifest.conn))
        sliver = [ENGRAVING[0], ENGRAVING[1], ENGRAVING[0] + 60, ENGRAVING[1] + 80]  # 0.23 sq in
        change = pv.box_change(manifest, engraving, sliver)
        assert change.startswith("excluded now") and "0.23 sq in" in change and "picture cutoff" in change
        assert pv.box_change(manifest, engraving, [ENGRAVING[0], ENGRAVING[1], 650, 700]) is None  # still kept
        after = dict(manifest.picture(engraving))
        assert after == before and len(history.actions(manifest.conn)) == actions  # nothing saved or recorded
        assert manifest.picture_area_min == 2.0
