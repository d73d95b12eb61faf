"""Learn from my boxes learns the archive's judge from the curator's decisions (curation.runs.learn_judge): on an
archive whose every page holds a drawing and a seal with lettering round it, which the finder boxes as pictures
too, a curator who boxes the drawing alone on a third of the pages (the seal's boxes deleted) makes the learn
judge the seal's boxes on the untouched pages not a picture: they stay, not counted, with their score; the drawing
still counts; a curator's decision is never overridden; undo puts the scores back; too few decisions say why."""

import json

import cv2
import numpy as np
import pytest
from click.testing import CliRunner

from curation import Manifest
from curation.cli import cli
from curation.manifest import finders
from curation.runs import learn_boxes, learn_judge
from curation.views.picture_views import page_boxes, status_words

from conftest import manifest_copy
from test_learn_boxes import ingested_by_the_network, scanned_pdf
from test_picture_verdict import drawing_page

PAGES = 12
BOXED = (1, 2, 3, 4)  # a third of the pages, boxed by the curator
INCLUDED_SEAL_PAGE = 12  # where the curator includes a seal's box: their decision wins


def sealed_page(seed: int) -> tuple[np.ndarray, list[float]]:
    """A drawing set in text columns and, at the foot, a seal: two rings, letters round them and a dark centre;
    the page and the drawing's box in fractions of the page."""
    page, drawing = drawing_page(seed)
    rng = np.random.default_rng(seed)
    cx, cy, r = 230, page.shape[0] - 260, 110
    cv2.circle(page, (cx, cy), r + 40, 232, -1)
    cv2.circle(page, (cx, cy), r, 40, 6)
    cv2.circle(page, (cx, cy), r - 18, 40, 3)
    for a in np.linspace(0, 2 * np.pi, 28, endpoint=False):
        x, y = int(cx + (r - 9) * np.cos(a)), int(cy + (r - 9) * np.sin(a))
        cv2.putText(page, str(rng.choice(list("ABCDEFGHIKLMNOPRST"))), (x - 4, y + 4), cv2.FONT_HERSHEY_SIMPLEX,
                    0.35, 40, 1)
    cv2.circle(page, (cx, cy), 45, 60, -1)
    h, w = page.shape
    return page, [(drawing[0] - 4) / w, (drawing[1] - 4) / h, (drawing[2] + 4) / w, (drawing[3] + 4) / h]


def sealed_pdf(path, seeds) -> list[list[float]]:
    """A scanned PDF of sealed pages, one a seed; each page's drawing box."""
    return scanned_pdf(path, [sealed_page(seed) for seed in seeds])


@pytest.fixture(scope="module")
def archive(tmp_path_factory):
    """A manifest of one scanned PDF of PAGES sealed pages found by the network; each page's drawing box."""
    return ingested_by_the_network(tmp_path_factory.mktemp("judge"), sealed_pdf, "seals.pdf", range(300, 300 + PAGES))


@pytest.fixture
def db(archive, tmp_path):
    with manifest_copy(archive[0], tmp_path) as manifest:
        return manifest.path


def box_drawings(db, tmp_path, drawings, pages) -> None:
    """The curator's boxes on `pages`: the drawing alone, so the seal's boxes are deleted."""
    file = tmp_path / "boxes.jsonl"
    file.write_text("".join(json.dumps({"doc": "seals.pdf", "page": page, "pictures": [
        {"box": drawings[page - 1], "counts": True}]}) + "\n" for page in pages))
    result = CliRunner().invoke(cli, ["boxes", "--from", str(file), "--db", str(db)])
    assert result.exit_code == 0, result.output


def learn(db, *more):
    return CliRunner().invoke(cli, ["learn", "--boxes", "--steps", "1", "--db", str(db), *more])


def learn_judge_too(db):
    return learn(db, "--judge")


def on_drawing(row, drawing, width, height) -> bool:
    """The picture's box lies mostly on the drawing."""
    x0, y0, x1, y1 = row["x0"] / width, row["y0"] / height, row["x1"] / width, row["y1"] / height
    meet = max(0, min(x1, drawing[2]) - max(x0, drawing[0])) * max(0, min(y1, drawing[3]) - max(y0, drawing[1]))
    return meet >= 0.5 * (x1 - x0) * (y1 - y0)


def shown(manifest, drawings) -> dict[int, list[tuple[bool, dict]]]:
    """Each page's pictures not deleted, as Review shows them: (on the drawing, row)."""
    doc_id, width, height = manifest.conn.execute("SELECT doc_id, width, height FROM pages LIMIT 1").fetchone()
    return {page: [(on_drawing(row, drawings[page - 1], width, height), row)
                   for row in page_boxes(manifest, doc_id, page - 1) if not row["deleted"]]
            for page in range(1, PAGES + 1)}


def scores(manifest) -> list[tuple]:
    return manifest.conn.execute("SELECT id, score FROM pictures ORDER BY id").fetchall()


def test_the_seal_the_curator_deleted_on_a_third_of_the_pages_is_judged_not_a_picture_on_the_rest(archive, db, tmp_path):
    drawings = archive[1]
    with Manifest(db) as manifest:
        before = shown(manifest, drawings)
        seal = next(row for on, row in before[INCLUDED_SEAL_PAGE] if not on)
        manifest.set_picture_override(seal["id"], True)  # the curator includes one seal's box
    for page in range(1, PAGES + 1):  # the finder counts the seal's boxes: the archive's repeated wrong box
        assert any(not on and row["picture_decided_by"] == "threshold" and row["keep_picture"]
                   for on, row in before[page]), before[page]
    box_drawings(db, tmp_path, drawings, BOXED)
    with Manifest(db) as manifest:
        ready = learn_judge.readiness(manifest, 37)
        assert (ready.pages, ready.pictures) == (5, 5) and ready.not_pictures >= 4 and ready.why_not is None
        assert f"learns from {ready.pictures} pictures you kept" in ready.summary
        assert ready.summary in learn_boxes.readiness(manifest, judge=True).summary  # what the panel would say
        assert learn_boxes.readiness(manifest).judge is None
        untouched_scores = {row[0]: row[1] for row in scores(manifest)}
    result = learn_judge_too(db)
    assert result.exit_code == 0, result.output
    assert "learned a judge" in result.output and "nobody touched again" in result.output, result.output
    with Manifest(db) as manifest:
        assert finders.judge(manifest.conn) is not None
        after = shown(manifest, drawings)
        for page in set(range(1, PAGES + 1)) - set(BOXED) - {INCLUDED_SEAL_PAGE}:
            seals = [row for on, row in after[page] if not on]
            assert seals and all(not row["keep_picture"] for row in seals), seals  # there, not counted
            assert all("judged not a picture (score " in status_words(row) for row in seals)
            assert all(row["keep_picture"] for on, row in after[page] if on), "the drawing still counts"
        kept = {row["id"]: row for on, row in after[INCLUDED_SEAL_PAGE]}
        assert kept[seal["id"]]["keep_picture"] and kept[seal["id"]]["picture_decided_by"] == "override"
        for page in BOXED:  # the curator's pages as they left them
            assert [(on, row["id"], row["keep_picture"]) for on, row in after[page]] == [(True, after[page][0][1]["id"], 1)]
    more = sealed_pdf(tmp_path / "more" / "later.pdf", (400, 401))  # a later issue of the archive, ingested
    result = CliRunner().invoke(cli, ["ingest", str(tmp_path / "more"), "--db", str(db), "-q"])
    assert result.exit_code == 0, result.output
    with Manifest(db) as manifest:
        doc_id = manifest.conn.execute("SELECT id FROM documents WHERE path LIKE '%later.pdf'").fetchone()[0]
        width, height = manifest.conn.execute("SELECT width, height FROM pages WHERE doc_id = ?", (doc_id,)).fetchone()
        for page, drawing in enumerate(more):
            rows = [row for row in page_boxes(manifest, doc_id, page) if not row["deleted"]]
            assert all(bool(row["keep_picture"]) == on_drawing(row, drawing, width, height) for row in rows), rows
            assert any(not on_drawing(row, drawing, width, height) for row in rows), "the seal is there, judged"
    undone = learn(db, "--undo")
    assert undone.exit_code == 0, undone.output
    with Manifest(db) as manifest:
        assert finders.judge(manifest.conn) is None
        now = {row[0]: row[1] for row in scores(manifest)}
        assert {i: now[i] for i in untouched_scores} == untouched_scores, "undo puts the scores back"


def test_too_few_decisions_say_why_and_change_nothing(archive, db, tmp_path):
    box_drawings(db, tmp_path, archive[1], (1,))
    with Manifest(db) as manifest:
        assert learn_judge.readiness(manifest, 37).why_not.startswith("1 page with pictures you decided")
        before = scores(manifest)
    alone = learn(db)  # the judge is learned only when asked for
    assert alone.exit_code == 1 and "judge" not in alone.output
    result = learn_judge_too(db)
    assert result.exit_code == 1 and "kept no judge: 1 page with pictures you decided; at least 2" in result.output
    with Manifest(db) as manifest:
        assert scores(manifest) == before and finders.judge(manifest.conn) is None


def test_a_judge_that_decides_no_better_than_the_finder_alone_is_not_kept():
    rng = np.random.default_rng(5)  # by chance, a judge decides one box more right than the finder here
    examples = learn_judge.Examples()
    for page in range(6):  # pictures and not-pictures alike in every measure, all counted by the finder
        for picture in (True, False, True, False):
            examples.add(rng.normal(size=len(learn_judge.picture_judge.MEASURES)), page, picture, True, 0.9)
    outcome = learn_judge.learned(examples, 0.2)
    assert outcome.head is None and outcome.message.startswith("kept no judge: ")
    assert "against the finder alone's 12" in outcome.message and outcome.message.endswith("not more than chance")
    assert outcome.figures["judge"]["right"] > outcome.figures["finder"]["right"]
