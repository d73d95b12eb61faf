"""A legend set vertically beside its picture (a Japanese book's figure title, a column of a few characters
level with the picture's top) is read, turned a quarter, by the recognizer; a column of body text running
down beside the picture is not a legend, nor is anything beside a picture whose legend is under it. Pages are
generated as in test_legends, the characters set one under another."""

import numpy as np
import pymupdf
import pytest
from test_legend_recognizer import needs_recognizer
from test_legends import PICTURE, accuracy, as_scan, centred_line, legend_page, needs_engine, reference_box

from curation.captions import vertical
from curation.captions.legend import read_legends

TITLE = "雪輪の圖"
BODY = "後より南の方へ日入る時は右の圖の如く輪を廻して時を知るべし" * 2


def column(page, text: str, x: float, y: float, size: float) -> None:
    """`text` set vertically: each character under the last, on a square."""
    writer = pymupdf.TextWriter(page.rect)
    font = pymupdf.Font("japan")
    for i, ch in enumerate(text):
        writer.append((x, y + (i + 1) * size), ch, font=font, fontsize=size)
    writer.write_text(page)


def vertical_page(title: str | None, body_beside: bool = True, scan: bool = True) -> pymupdf.Document:
    doc = legend_page([], under=False, beside=False)
    page = doc[0]
    if title:
        column(page, title, PICTURE[2] + 8, PICTURE[1], 12)
    if body_beside:  # the column's text runs down the picture's other side, past its foot
        for k in range(3):
            column(page, BODY[k * 20:(k + 1) * 20], PICTURE[0] - 20 - 16 * k, PICTURE[1] - 10, 11)
    return as_scan(doc, dpi=200) if scan else doc


@needs_engine
@needs_recognizer
@pytest.mark.parametrize("scan", [False, True])
def test_a_title_set_vertically_beside_the_picture_is_read(scan):
    [found] = read_legends(vertical_page(TITLE, scan=scan), 0, [reference_box()])
    assert found is not None
    assert accuracy(found.text, TITLE) >= 0.75, found.text


@needs_engine
@needs_recognizer
def test_a_column_of_body_text_running_down_beside_the_picture_is_not_its_legend():
    assert read_legends(vertical_page(None), 0, [reference_box()]) == [None]
    doc = legend_page([], under=False, beside=False)
    column(doc[0], BODY[:24], PICTURE[2] + 8, PICTURE[1], 12)  # level with its top, but past its foot
    assert read_legends(as_scan(doc), 0, [reference_box()]) == [None]


@needs_engine
@needs_recognizer
def test_the_legend_under_a_picture_is_read_before_a_column_beside_it():
    doc = legend_page([], under=False, beside=False)
    centred_line(doc[0], "SEPTEMBER MORN.", PICTURE[3] + 13, pymupdf.Font("tiro"), 9)
    column(doc[0], TITLE, PICTURE[2] + 8, PICTURE[1], 12)
    [found] = read_legends(as_scan(doc), 0, [reference_box()])
    assert found is not None and accuracy(found.text, "SEPTEMBER MORN.") >= 0.9, found


def test_the_column_beside_is_found_by_its_gap_and_not_through_a_box_round_it():
    """Ink beside a picture, the picture at the left edge, 300 dpi: a boxed column of four squares level
    with the picture's top is found (without the box's rules); a column running down past its foot is not."""
    dpi, square = 300, 60
    strip = vertical.Beside((0, 0, 100, 300), (72, 300), True)  # reference pixels: 0.5 in over the picture
    ink = np.zeros((round(300 * dpi / 144), 200), bool)
    top = 150 + 20  # a little under the picture's top
    for i in range(4):
        ink[top + i * (square + 6):top + i * (square + 6) + square:3, 40:40 + square] = True  # strokes across
    ink[top - 10, 25:115] = ink[top + 4 * (square + 6) + 10, 25:115] = True  # the box's rules
    ink[top - 10:top + 4 * (square + 6) + 10, 25] = ink[top - 10:top + 4 * (square + 6) + 10, 114] = True
    box = vertical.column_box(ink, strip, dpi / 144, dpi)
    assert box is not None
    x0, y0, x1, y1 = box
    assert (x0, x1) == (40, 40 + square) and y0 == top and abs(y1 - (top + 4 * (square + 6) - 6)) <= 3
    ink[::3, 40:40 + square] = True  # the column runs on down
    assert vertical.column_box(ink, strip, dpi / 144, dpi) is None
