"""The picture judge: its measures tell a block of type from an engraving, and its recipe, leave one source out,
keeps the finder's pictures and drops the boxes it put on type."""

import pathlib

import cv2
import numpy as np
import pytest

from curation.pictures import finder, finder_train, picture_judge, picture_judge_train
from curation.pictures.picture_judge import MEASURES, Head, measures
from curation.scoring.features import REFERENCE_DPI
from curation.sources.synthetic import PageSpec, page_image_and_pictures

SIDE = 512  # the cells' grid is the page at the network's side, 8 pixels a cell


def gray_page(kind: str, seed: int) -> tuple[np.ndarray, list]:
    rgb, pictures = page_image_and_pictures(PageSpec(kind=kind, seed=seed, dpi=REFERENCE_DPI))
    return cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY), pictures


def cells_over(gray: np.ndarray, boxes: list) -> np.ndarray:
    """Cells as a head would give them: sure over `boxes` (page pixels), unsure elsewhere."""
    h, w = gray.shape
    scale = SIDE / max(h, w) / finder.STRIDE
    cells = np.full((max(1, round(h * scale)), max(1, round(w * scale))), 0.05, np.float32)
    for x0, y0, x1, y1 in boxes:
        cells[int(y0 * scale):int(np.ceil(y1 * scale)), int(x0 * scale):int(np.ceil(x1 * scale))] = 0.9
    return cells


def text_block(gray: np.ndarray, pictures: list) -> tuple[int, int, int, int]:
    """A block of the page's type, clear of its pictures: where a finder wrongly marks a picture."""
    h, w = gray.shape
    below = max((p[3] for p in pictures), default=0)
    top = below + 120 if below < 0.6 * h else int(0.1 * h)  # some cells of paper between: two regions
    return int(0.12 * w), top, int(0.45 * w), min(h - 20, top + int(0.25 * h))


def test_the_measures_tell_type_from_an_engraving():
    gray, pictures = gray_page("mixed", 3)
    assert pictures, "the generated page holds an engraving"
    block = text_block(gray, pictures)
    cells = cells_over(gray, [pictures[0], block])
    engraving = dict(zip(MEASURES, measures(gray, cells, pictures[0])))
    type_ = dict(zip(MEASURES, measures(gray, cells, block)))
    assert type_["letter_share"] > engraving["letter_share"] + 0.2, (type_, engraving)
    assert type_["letters_per_sq_in"] > 2 * engraving["letters_per_sq_in"]
    assert engraving["score"] == pytest.approx(0.9) and 0 <= engraving["edge_margin"] < 0.5


def test_a_head_keeps_its_numbers_and_refuses_other_measures():
    head = Head(np.zeros(len(MEASURES)), np.ones(len(MEASURES)), np.linspace(-1, 1, len(MEASURES)), 0.25, 0.4)
    again = Head.from_dict(head.as_dict())
    row = np.arange(len(MEASURES), dtype=float)
    assert again.probability(row) == pytest.approx(head.probability(row)) and again.cutoff == 0.4
    with pytest.raises(ValueError, match="other measures"):
        Head.from_dict({**head.as_dict(), "measures": ["score"]})


def held_out_measure(tmp_path: pathlib.Path) -> list:
    """Three sources of three pages, each page an engraving the finder's cells find and a block of type they
    wrongly mark too; only the engravings are boxed by hand."""
    held = []
    for source in range(3):
        for n in range(3):
            gray, pictures = gray_page("mixed", 10 * source + n)
            h, w = gray.shape
            labelled = [{"box": [p[0] / w, p[1] / h, p[2] / w, p[3] / h], "counts": True} for p in pictures]
            page = finder_train.Measured(tmp_path / f"{source}-{n}.png", REFERENCE_DPI, f"source-{source}", w / h,
                                         labelled, bool(pictures))
            held.append(finder_train.HeldOut(page, gray, cells_over(gray, [*pictures, text_block(gray, pictures)])))
    return held


def test_leave_one_source_out_the_judge_drops_the_boxes_on_type_and_keeps_the_pictures(tmp_path, monkeypatch):
    monkeypatch.setattr(finder_train, "SETTINGS_GRID", [finder.Settings(cell_cutoff=0.5, score_cutoff=0.5)])
    held = held_out_measure(tmp_path)
    results = picture_judge_train.leave_one_source_out(held, lambda message: None)
    assert sorted(results) == ["source-0", "source-1", "source-2"]
    alone, judged = finder_train.Tally(), finder_train.Tally()
    for result in results.values():
        alone += result["alone"]
        judged += result["judged"]
    assert alone.wrong >= 6, alone.line()  # the finder's boxes on type, on nearly every page
    assert judged.wrong < alone.wrong / 3, judged.line()
    assert judged.found >= alone.found - 1 and judged.precision > alone.precision


def test_a_stored_score_counts_at_the_manifest_s_default_cutoff_where_the_judge_s_own_cutoff_falls():
    from curation.manifest.rules import DEFAULT_PICTURE_SCORE_MIN

    assert picture_judge.STORED_CUTOFF == DEFAULT_PICTURE_SCORE_MIN
    head = Head(np.zeros(len(MEASURES)), np.ones(len(MEASURES)), np.linspace(-1, 1, len(MEASURES)), 0.25, 0.6)
    rows = np.random.default_rng(1).normal(size=(200, len(MEASURES)))
    probability, score = head.probability(rows), head.score(rows)
    assert np.array_equal(probability >= 0.6, score >= DEFAULT_PICTURE_SCORE_MIN)  # the same pictures count
    assert np.array_equal(np.argsort(probability), np.argsort(score))  # in the same order


def test_the_judge_scores_the_finder_s_box_on_type_under_the_cutoff_and_its_engraving_over_it(tmp_path, monkeypatch):
    """A head learned (as the recipe learns it) on three sources of pages where the cells mark type too, then used
    as ingest uses it on a page of a fourth: the engraving counts, the block of type does not."""
    monkeypatch.setattr(finder_train, "SETTINGS_GRID", [finder.Settings(cell_cutoff=0.5, score_cutoff=0.5)])
    held = held_out_measure(tmp_path)
    settings = finder.Settings(cell_cutoff=0.5, score_cutoff=0.0)
    boxes = picture_judge_train.boxes_of(held, settings)
    cutoff = picture_judge_train.chosen_cutoff(held, boxes, ["source-0", "source-1", "source-2"])
    head = picture_judge_train.fitted(boxes, cutoff)
    gray, pictures = gray_page("mixed", 77)
    block = text_block(gray, pictures)
    cells = cells_over(gray, [*pictures, block])
    found = picture_judge.judged(finder.pictures_from_cells(cells, gray, REFERENCE_DPI, settings), gray, cells,
                                 REFERENCE_DPI, head)
    on_type = [p for p in found if p.box[1] >= block[1] - 40]
    on_picture = [p for p in found if p.box[1] < block[1] - 40]
    assert on_type and on_picture
    assert all(p.score < picture_judge.STORED_CUTOFF for p in on_type), on_type
    assert all(p.score >= picture_judge.STORED_CUTOFF for p in on_picture), on_picture


def test_without_a_judge_the_cells_score_counts_where_the_finder_s_recipe_counted_it():
    """The finder's settings count a picture at its cells' certainty of 0.97 (chosen leave one source out); stored,
    that falls on the manifest's default score cutoff, so the manifest counts what the recipe measured."""
    from curation.manifest.rules import DEFAULT_PICTURE_SCORE_MIN

    scores = [0.0, 0.5, 0.96, 0.97, 0.99, 1.0]
    stored = [picture_judge.cells_stored(s, 0.97) for s in scores]
    assert [s >= DEFAULT_PICTURE_SCORE_MIN for s in stored] == [s >= 0.97 for s in scores]
    assert stored == sorted(stored) and stored[0] == 0.0 and stored[-1] == pytest.approx(1.0)
    assert finder.Finder.score_cutoff == DEFAULT_PICTURE_SCORE_MIN
