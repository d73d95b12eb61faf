"""The picture stage (curation.pictures): candidates checked by the learned verdict, boxes that hold the
picture and nothing else, the head's recipe, and learned pictures through ingest and the command line."""

import json

import cv2
import numpy as np
import pytest
from click.testing import CliRunner

from curation import Manifest
from curation.cli import cli
from curation.pictures.candidates import MEASURES
from curation.pictures import judge as judging
from curation.pictures import boxes as box_steps
from curation.pictures.candidates import text_over_content
from curation.pictures.text import text_map
from curation.pictures.train import BOX_STEPS, LabelledPage, best_box_steps, fit, held_out_scores, leave_one_source_out
from curation.pictures.verdict import Head, check_page, select, shipped_head
from curation.scoring.features import analyse_page

from conftest import line_drawing
from test_pictures import handwriting_page, paper, text_page


def drawing_page(seed: int, dpi: int = 144) -> tuple[np.ndarray, tuple[int, int, int, int]]:
    """A page of text columns with a 4 by 3.5 inch pen drawing set into them; the box of the drawing's ink."""
    page = text_page(dpi, seed=seed)
    left, top, width, height = page.shape[1] // 2 - 2 * dpi, 2 * dpi, 4 * dpi, int(3.5 * dpi)
    paper(page, left - dpi // 5, top - dpi // 5, left + width + dpi // 5, top + height + dpi // 5)
    drawing = np.minimum(235, line_drawing(width, np.random.default_rng(seed))[:height])
    page[top:top + height, left:left + width] = drawing
    rows, cols = np.flatnonzero((drawing < 150).any(axis=1)), np.flatnonzero((drawing < 150).any(axis=0))
    return page, (left + cols[0], top + rows[0], left + cols[-1] + 1, top + rows[-1] + 1)


def shared(box, target) -> tuple[float, float]:
    """(share of `box` inside `target`, share of `target` inside `box`)."""
    w = min(box[2], target[2]) - max(box[0], target[0])
    h = min(box[3], target[3]) - max(box[1], target[1])
    meet = max(0, w) * max(0, h)
    return meet / ((box[2] - box[0]) * (box[3] - box[1])), meet / ((target[2] - target[0]) * (target[3] - target[1]))


def test_an_engraving_among_text_is_a_picture_boxed_without_the_columns_beside_it():
    page, drawing = drawing_page(seed=41)
    pictures = check_page(page)
    assert pictures, "the drawing was not found"
    best = max(pictures, key=lambda p: shared(p.box, drawing)[1])
    inside, holds = shared(best.box, drawing)
    assert holds >= 0.9 and inside >= 0.85, (best.box, drawing)  # a clean crop, as the real pages are judged
    assert best.score >= shipped_head().cutoff


@pytest.mark.parametrize("kind", ["handwriting", "display type", "ruled box of text"])
def test_handwriting_display_type_and_a_ruled_box_of_text_are_no_pictures(kind):
    if kind == "handwriting":
        page = handwriting_page(seed=61)
    elif kind == "display type":
        page = text_page(144, seed=62)
        paper(page, 40, 300, 1190, 420)
        cv2.putText(page, "French Gain on Canal du Nord", (50, 390), cv2.FONT_HERSHEY_TRIPLEX, 2.1, 15, 7)
    else:
        page = text_page(144, seed=63)
        paper(page, 410, 290, 810, 1010)
        for inset in (0, 6):
            cv2.rectangle(page, (420 + inset, 300 + inset), (800 - inset, 1000 - inset), 20, 2)
        rng = np.random.default_rng(63)
        for y in range(400, 970, 22):
            cv2.putText(page, "".join(rng.choice(list("abcdefghilmnoprstuvw "), 24)), (445, y),
                        cv2.FONT_HERSHEY_SIMPLEX, 0.6, 20, 1)
    assert [p for p in check_page(page) if p.area >= 1.0] == []


def test_the_best_of_overlapping_candidates_is_kept_and_pictures_apart_stay_apart():
    boxes = [(0, 0, 100, 100), (5, 5, 105, 100), (300, 0, 400, 100), (0, 0, 400, 100)]
    scores = np.array([0.8, 0.9, 0.7, 0.4])
    assert select(boxes, scores, cutoff=0.5) == [1, 2]  # the loose box over both falls under the cutoff
    assert select(boxes, scores, cutoff=0.3) == [1, 2]  # and is not taken where better boxes hold its pictures


def test_a_head_is_saved_and_loaded_to_the_same_scores(tmp_path):
    rng = np.random.default_rng(0)
    head = shipped_head()
    inputs = rng.normal(size=(50, len(MEASURES))) * 3
    head.save(tmp_path / "head.npz")
    again = Head.load(tmp_path / "head.npz")
    assert np.array_equal(again.score(inputs), head.score(inputs)) and again.cutoff == head.cutoff
    assert (again.tighten, again.margin) == (head.tighten, head.margin)  # how its pictures' boxes are made
    assert np.ptp(head.score(inputs)) > 0.1  # the trees do tell these rows apart


def test_the_heads_arrays_score_as_the_trees_they_were_read_from():
    from sklearn.ensemble import HistGradientBoostingClassifier

    from curation.pictures.train import TREES

    rng = np.random.default_rng(1)
    inputs = rng.normal(size=(400, len(MEASURES)))
    labels = (inputs[:, 0] + inputs[:, 3] ** 2 > 1).astype(int)
    model = HistGradientBoostingClassifier(**TREES).fit(inputs, labels)
    unseen = rng.normal(size=(200, len(MEASURES)))
    assert np.allclose(Head.from_trees(model, 0.5).score(unseen), model.predict_proba(unseen)[:, 1], atol=1e-12)


def synthetic_pages(seed: int) -> list[LabelledPage]:
    """Pages from three sources whose candidates' first input tells pictures from the rest."""
    rng = np.random.default_rng(seed)
    pages = []
    for n in range(12):
        labels = rng.integers(0, 2, 8).astype(np.int8)
        inputs = rng.normal(size=(8, 4)) + labels[:, None] * np.array([3.0, 0, 0, 0])
        boxes = [(0.1 * i, 0.1, 0.1 * i + 0.08, 0.3) for i in range(8)]
        labelled = [{"box": box, "counts": True} for box, label in zip(boxes, labels) if label == 1]
        pages.append(LabelledPage(f"{n}.jpg", f"source{n % 3}", 1.0, labelled, boxes, boxes, inputs, labels))
    return pages


def test_training_is_deterministic_and_measured_on_sources_it_did_not_see():
    pages = synthetic_pages(1)
    first, second = fit(pages), fit(synthetic_pages(1))
    assert all(np.array_equal(getattr(first, name), getattr(second, name))  # to the bit
               for name in ("feature", "threshold", "left", "right", "value")) and first.baseline == second.baseline
    scores = held_out_scores(pages)
    for page, score in zip(pages, scores):  # each page scored by a head that never saw its source
        unseen = fit([p for p in pages if p.source != page.source])
        assert np.allclose(score, unseen.score(page.inputs))
    assert all(((s >= 0.5) == (p.labels == 1)).mean() >= 0.75 for p, s in zip(pages, scores))


def test_a_loose_box_is_tightened_to_its_picture_without_the_text_beside_and_under_it():
    page, drawing = drawing_page(seed=47)
    analysis, _ = analyse_page(page)
    text = text_over_content(analysis, text_map(page))
    x0, y0, x1, y1 = drawing
    loose = (x0 - 144, y0, x1 + 144, y1 + 144)  # an inch of the columns beside it and of the text under it
    assert shared(loose, drawing)[0] < 0.7
    tight = box_steps.tighten(analysis, text, loose)
    inside, holds = shared(tight, drawing)
    assert inside >= 0.95 and holds >= 0.95, (tight, drawing)
    assert box_steps.tighten(analysis, text, tight) == tight  # a tight box stays as it is


def test_a_margin_grows_a_box_by_a_share_of_the_pages_shorter_side_and_stays_on_the_page():
    assert box_steps.with_margin((100, 100, 300, 400), (1000, 800), 0.01) == (92, 92, 308, 408)
    assert box_steps.with_margin((2, 0, 800, 990), (1000, 800), 0.01) == (0, 0, 800, 998)


def test_the_way_boxes_are_made_is_chosen_leave_one_source_out():
    """Pages whose found boxes take in the next column and whose tightened ones hold just the picture:
    tightening is chosen, on the other sources, for every source."""
    pages = synthetic_pages(2)
    for page in pages:
        page.tight = list(page.boxes)
        page.boxes = [(x0, y0, x1 + 0.05, y1) for x0, y0, x1, y1 in page.boxes]
        page.labels = np.where(page.labels == 1, 1, 0).astype(np.int8)
    assert best_box_steps(pages, [p.labels.astype(float) for p in pages], 0.5) == (True, 0.0)
    results = leave_one_source_out(pages)
    assert {steps for _, _, steps in results.values()} == {(True, 0.0)}
    assert all(t.clean == t.right > 0 for t, _, _ in results.values())
    assert (False, 0.0) == BOX_STEPS[0]  # where the ways tie, the found box is kept as it is


def test_a_crop_is_judged_clean_only_when_it_holds_the_picture_and_little_else():
    labelled = [{"box": (0.2, 0.2, 0.6, 0.6), "counts": True}, {"box": (0.8, 0.8, 0.85, 0.85), "counts": False}]
    result = judging.judge([(0.2, 0.2, 0.6, 0.6), (0.2, 0.2, 0.75, 0.6), (0.2, 0.3, 0.6, 0.6), (0.8, 0.8, 0.85, 0.85),
                            (0.0, 0.7, 0.1, 0.9)], labelled, aspect=1.0)
    assert result["verdicts"] == ["right", "right", "right", "neither", "wrong"]
    assert result["clean"] == [True, False, False, False, False]  # the next column taken in; the sky cut off
    assert result["found"] == [True]


def drawing_archive(tmp_path, seed: int):
    """A folder holding one scanned PDF of `drawing_page(seed)` at 144 dpi; (the folder, the page, the drawing's box)."""
    import pymupdf

    page, drawing = drawing_page(seed=seed)
    ok, jpeg = cv2.imencode(".jpg", page)
    folder = tmp_path / "archive"
    folder.mkdir()
    with pymupdf.open() as doc:
        doc.new_page(width=page.shape[1] / 2, height=page.shape[0] / 2).insert_image(
            pymupdf.Rect(0, 0, page.shape[1] / 2, page.shape[0] / 2), stream=jpeg.tobytes())
        doc.save(folder / "issue.pdf")
    return folder, page, drawing


def test_learned_pictures_are_found_at_ingest_with_their_scores_and_decisions_survive_a_rescore(tmp_path):
    folder, page, drawing = drawing_archive(tmp_path, seed=43)
    db = str(tmp_path / "m.sqlite")
    result = CliRunner().invoke(cli, ["ingest", str(folder), "--db", db, "-q", "--pictures", "learned"])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in CliRunner().invoke(
        cli, ["pictures", "--db", db, "--format", "jsonl"], catch_exceptions=False).output.splitlines()]
    assert rows and all(0 <= row["score"] <= 1 for row in rows)
    width, height = page.shape[1], page.shape[0]
    best = max(rows, key=lambda r: shared((r["x0"] * width, r["y0"] * height, r["x1"] * width, r["y1"] * height),
                                          drawing)[1])
    assert best["keep"] and best["score"] >= shipped_head().cutoff
    with Manifest(db) as manifest:
        assert manifest.picture_finder == "learned"
        picture_id = manifest.conn.execute("SELECT id FROM pictures WHERE number = ?", (best["picture"],)).fetchone()[0]
        manifest.set_picture_override(picture_id, False)
    assert CliRunner().invoke(cli, ["rescore", "--all", "--db", db, "-q"]).exit_code == 0
    rows = [json.loads(line) for line in CliRunner().invoke(
        cli, ["pictures", "--db", db, "--format", "jsonl"], catch_exceptions=False).output.splitlines()]
    again = next(r for r in rows if r["picture"] == best["picture"])
    assert again["override"] == "exclude" and not again["keep"] and again["score"] is not None


def test_generated_pages_are_a_source_labelled_by_the_generators_own_boxes():
    from curation.pictures.train import GENERATED, generated_pages

    engraving, text = generated_pages(2)  # the first kinds: a full-page engraving, then text
    assert engraving.source == text.source == GENERATED
    assert engraving.illustrated and len(engraving.labelled) == 1 and (engraving.labels == 1).any()
    assert not text.illustrated and not text.labelled and not (text.labels == 1).any()
