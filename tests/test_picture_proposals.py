"""The picture stage's candidates (curation.pictures.candidates): a picture proposed only in part is also
proposed whole, its box grown to the ink it cuts through."""

import numpy as np

from curation.pictures.candidates import MEASURES, grown_to_ink
from curation.pictures.judge import is_clean
from curation.pictures.verdict import page_candidates

from conftest import line_drawing
from test_pictures import paper, text_page

DPI = 144


def outline_over_stipple(seed: int) -> tuple[np.ndarray, tuple[int, int, int, int]]:
    """A page of text columns with a 4 by 4 inch figure set into them: a pen outline above, and below it a
    stipple of dots too small to be strokes, as a woodcut's faint half; the box of the figure's ink."""
    page = text_page(DPI, seed=seed)
    left, top, side = page.shape[1] // 2 - 2 * DPI, 2 * DPI, 4 * DPI
    paper(page, left - DPI // 5, top - DPI // 5, left + side + DPI // 5, top + side + DPI // 5)
    figure = np.full((side, side), 235, np.uint8)
    figure[:side // 2] = np.minimum(235, line_drawing(side, np.random.default_rng(seed))[:side // 2])
    rng = np.random.default_rng(seed)
    for y in range(side // 2, side, 4):
        for x in range(0, side, 4):
            if rng.random() < 0.7:
                figure[y:y + 2, x:x + 2] = 90
    page[top:top + side, left:left + side] = figure
    rows, cols = np.flatnonzero((figure < 150).any(axis=1)), np.flatnonzero((figure < 150).any(axis=0))
    return page, (left + cols[0], top + rows[0], left + cols[-1] + 1, top + rows[-1] + 1)


def clean_candidates(page: np.ndarray, figure, grown: bool) -> list[int]:
    """The candidates (grown ones or the others) whose box, as a kept picture's is made (tightened, a 1 %
    margin), is a clean crop of `figure`, as the real pages are judged."""
    height, width = page.shape
    found = page_candidates(page)
    as_fractions = lambda b: (b[0] / width, b[1] / height, b[2] / width, b[3] / height)  # noqa: E731
    return [i for i, c in enumerate(found.candidates) if c.measures["from_grown"] == grown
            and is_clean(as_fractions(found.picture_box(i, page.shape, True, 0.01)), [as_fractions(figure)],
                         width / height)]


def test_a_picture_proposed_only_in_part_is_also_proposed_whole_as_one_clean_candidate():
    page, figure = outline_over_stipple(seed=41)
    assert clean_candidates(page, figure, grown=False) == []  # the outline alone: the stipple is no stroke
    assert clean_candidates(page, figure, grown=True), "no grown candidate holds the whole figure"


def test_a_box_grows_to_the_pieces_it_cuts_and_no_further():
    ink = np.zeros((200, 300), np.uint8)
    ink[20:120, 20:40] = 1  # a piece the box cuts through
    ink[118:121, 40:120] = 1  # joined to it: one piece of two strokes
    ink[20:60, 200:260] = 1  # a piece apart
    assert grown_to_ink([(10, 10, 30, 50)], ink, DPI) == [(10, 10, 120, 121)]
    assert grown_to_ink([(150, 150, 180, 190)], ink, DPI) == [(150, 150, 180, 190)]  # cuts nothing


def test_the_grown_kind_is_a_measure_the_verdict_can_weigh():
    page, _ = outline_over_stipple(seed=42)
    found = page_candidates(page)
    kinds = found.inputs[:, MEASURES.index("from_grown")]
    assert set(kinds) == {0.0, 1.0}
