"""`learn --boxes` (curation.runs.learn_boxes): on an archive whose curator boxes every picture with its legend,
where the shipped finder boxes the drawing alone, the finder learned from the corrected pages boxes the legend
too on a page nobody touched; the touched pages stay as the curator left them; undo puts the previous finder and
boxes back; a finder that does no better on the held-out pages changes nothing and says why."""

import json
import pathlib

import cv2
import pytest
from click.testing import CliRunner

from curation import Manifest
from curation.cli import cli
from curation.manifest import finders

from conftest import manifest_copy
from test_picture_finder import legend_under
from test_picture_verdict import drawing_page

PAGES = 10
CORRECTED = 8  # the first pages: the curator's boxes; the rest nobody touches
STEPS = "150"


def legended_page(seed: int):
    """A drawing with two lines of legend under it; the page and its box as this archive's curator draws it (the
    drawing and its legend), in fractions of the page."""
    page, drawing = drawing_page(seed=seed)
    first = legend_under(page, drawing, seed)
    second = legend_under(page, (drawing[0], drawing[1], drawing[2], first[3]), seed + 1)
    h, w = page.shape
    box = (drawing[0] - 4, drawing[1] - 4, max(drawing[2], first[2], second[2]) + 4, second[3] + 4)
    return page, [box[0] / w, box[1] / h, box[2] / w, box[3] / h]


def legended_pdf(path, seeds) -> list[list[float]]:
    """A scanned PDF of a legended drawing a page, one a seed; each page's box as the curator draws it."""
    return scanned_pdf(path, [legended_page(seed) for seed in seeds])


def scanned_pdf(path, pages) -> list:
    """A PDF of `pages` ((page image, box) each) scanned at 144 dpi, a JPEG a page; their boxes."""
    import pymupdf

    with pymupdf.open() as doc:
        for page, _ in pages:
            jpeg = cv2.imencode(".jpg", page)[1].tobytes()
            doc.new_page(width=page.shape[1] / 2, height=page.shape[0] / 2).insert_image(
                pymupdf.Rect(0, 0, page.shape[1] / 2, page.shape[0] / 2), stream=jpeg)
        path.parent.mkdir(parents=True, exist_ok=True)
        doc.save(path)
    return [box for _, box in pages]


def ingested_by_the_network(folder: pathlib.Path, write_pdf, name: str, seeds) -> tuple[pathlib.Path, list]:
    """A manifest of the PDF `write_pdf` writes as `name` under `folder`/archive (one page a seed), found by the
    shipped network; and what `write_pdf` gives (each page's box)."""
    truths = write_pdf(folder / "archive" / name, seeds)
    db = folder / "m.sqlite"
    result = CliRunner().invoke(cli, ["ingest", str(folder / "archive"), "--db", str(db), "-q",
                                      "--pictures", "network"])
    assert result.exit_code == 0, result.output
    return db, truths


@pytest.fixture(scope="module")
def archive(tmp_path_factory):
    """A manifest of one scanned PDF of PAGES legended drawings, found by the shipped network; each page's box."""
    return ingested_by_the_network(tmp_path_factory.mktemp("learn"), legended_pdf, "issue.pdf", range(200, 200 + PAGES))


@pytest.fixture
def db(archive, tmp_path):
    with manifest_copy(archive[0], tmp_path) as manifest:
        return str(manifest.path)


def pictures(db) -> dict[int, list[dict]]:
    """The pictures of issue.pdf by page."""
    output = CliRunner().invoke(cli, ["pictures", "--db", db, "--format", "jsonl"], catch_exceptions=False).output
    pages: dict[int, list[dict]] = {}
    for row in map(json.loads, output.splitlines()):
        if row["doc"].endswith("issue.pdf"):
            pages.setdefault(row["page"], []).append(row)
    return pages


def give_boxes(db, tmp_path, boxes: dict[int, list]):
    file = tmp_path / "boxes.jsonl"
    file.write_text("".join(json.dumps({"doc": "issue.pdf", "page": page, "pictures": [{"box": box, "counts": True}]})
                            + "\n" for page, box in boxes.items()))
    result = CliRunner().invoke(cli, ["boxes", "--from", str(file), "--db", db])
    assert result.exit_code == 0, result.output


def learn(db, *more):
    return CliRunner().invoke(cli, ["learn", "--boxes", "--steps", STEPS, "--db", db, "-q", *more])


def bottom(rows: list[dict]) -> float:
    return max(row["y1"] for row in rows if row["decided_by"] != "deleted")


def test_the_finder_learns_the_curator_s_boxes_finds_untouched_pages_again_and_undo_puts_it_back(archive, db, tmp_path):
    truths = archive[1]
    give_boxes(db, tmp_path, {page: truths[page - 1] for page in range(1, CORRECTED + 1)})
    before = pictures(db)
    untouched = range(CORRECTED + 1, PAGES + 1)
    for page in untouched:  # the shipped finder stops at the drawing: the legend under it is left out
        assert bottom(before[page]) < truths[page - 1][3] - 0.02, (before[page], truths[page - 1])
    result = learn(db)
    assert result.exit_code == 0, result.output
    assert "learned from 6 pages" in result.output and "found the pictures of 2 pages nobody touched again" in result.output
    after = pictures(db)
    for page in untouched:  # now the legend is in the box, as this archive's curator draws it
        assert abs(bottom(after[page]) - truths[page - 1][3]) < abs(bottom(before[page]) - truths[page - 1][3]) - 0.01
        assert {row["picture"] for row in after[page]} & {row["picture"] for row in before[page]}, "numbers kept"
    for page in range(1, CORRECTED + 1):
        assert after[page] == before[page], "a curator's page is not found again"
    with Manifest(db) as manifest:
        version = finders.current_version(manifest.conn)
        assert version is not None
        figures = finders.record(manifest.conn, version)["held_out"]
        assert figures["held_out"] == 2 and figures["trained"] == 6
        assert {row[0] for row in manifest.conn.execute(
            "SELECT finder FROM pictures WHERE page >= ? AND NOT deleted", (CORRECTED,))} == {f"network:{version}"}
        action = manifest.conn.execute("SELECT * FROM history WHERE kind = 'finder'").fetchone()
        assert "found the pictures of 2 page(s) again" in action["description"]
    # A document ingested now is found by the finder the manifest learned, its legend in the box too.
    new_folder = tmp_path / "more"
    (truth,) = legended_pdf(new_folder / "later.pdf", [200 + PAGES])
    assert CliRunner().invoke(cli, ["ingest", str(new_folder), "--db", db, "-q"]).exit_code == 0
    with Manifest(db) as manifest:
        rows = manifest.conn.execute("SELECT x.finder, x.y1, p.height FROM pictures x JOIN pages p USING (doc_id, page) "
                                     "JOIN documents d ON d.id = x.doc_id WHERE d.path LIKE '%later.pdf'").fetchall()
    assert {row["finder"] for row in rows} == {f"network:{version}"}
    assert max(row["y1"] / row["height"] for row in rows) == pytest.approx(truth[3], abs=0.02)
    undone = CliRunner().invoke(cli, ["learn", "--boxes", "--undo", "--db", db])
    assert undone.exit_code == 0, undone.output
    assert pictures(db) == before
    with Manifest(db) as manifest:
        assert finders.current_version(manifest.conn) is None
        assert {row[0] for row in manifest.conn.execute(
            "SELECT finder FROM pictures x JOIN documents d ON d.id = x.doc_id "
            "WHERE NOT added AND d.path LIKE '%issue.pdf'")} == {"network"}


def test_undo_gives_a_page_its_pictures_back_when_another_page_took_their_ids_since(db):
    # SQLite hands the ids of the pictures a finder dropped to the next pictures inserted (a later ingest's): the
    # undo gives the page its pictures back under new ids and leaves the other page's pictures as they are.
    from curation.manifest import history

    drawing, second, third = (100, 100, 600, 600), (700, 100, 900, 300), (700, 400, 900, 600)
    with Manifest(db) as manifest:
        manifest.set_pictures(1, 3, [(*drawing, 9.0), (*second, 1.5), (*third, 1.5)], "network")
        before = manifest.conn.execute("SELECT id, number, x0 FROM pictures WHERE doc_id = 1 AND page = 3 "
                                       "ORDER BY number").fetchall()
        with manifest.recording("finder") as action:
            old = history.found_state(manifest.conn, 1, 3)
            manifest.set_pictures(1, 3, [(*drawing, 9.0)], "network:1")
            history.record(manifest.conn, action, history.FOUND_FIELD, old, history.found_state(manifest.conn, 1, 3),
                           doc_id=1, page=3)
        manifest.set_pictures(1, 5, [(50, 50, 150, 150, 0.5), (200, 50, 300, 150, 0.5), (400, 50, 500, 150, 0.5)])
        other = manifest.conn.execute("SELECT * FROM pictures WHERE doc_id = 1 AND page = 5 ORDER BY id").fetchall()
        assert {row["id"] for row in other} & {row["id"] for row in before}, "the ids were handed on"
        manifest.undo(action)
        after = manifest.conn.execute("SELECT id, number, x0 FROM pictures WHERE doc_id = 1 AND page = 3 "
                                      "ORDER BY number").fetchall()
        assert [(row["number"], row["x0"]) for row in after] == [(row["number"], row["x0"]) for row in before]
        assert [dict(row) for row in manifest.conn.execute(
            "SELECT * FROM pictures WHERE doc_id = 1 AND page = 5 ORDER BY id")] == [dict(row) for row in other]
        redo, left = manifest.undo()  # undoing the undo finds the page as the undo left it
        assert left == 0


def test_a_finder_that_does_no_better_on_the_held_out_pages_changes_nothing_and_says_why(archive, db, tmp_path):
    # The curator's boxes are the finder's own, nudged: it is right already, and can only do as well.
    found = pictures(db)
    give_boxes(db, tmp_path, {page: [max(row, key=lambda r: (r["x1"] - r["x0"]) * (r["y1"] - r["y0"]))[k] + d
                                     for k, d in zip(("x0", "y0", "x1", "y1"), (-0.001, -0.001, 0.001, 0.001))]
                              for page, row in ((p, found[p]) for p in range(1, CORRECTED + 1))})
    before = pictures(db)
    result = learn(db)
    assert result.exit_code == 0, result.output
    assert "kept the finder as it was" in result.output and "did no better on the 2 pages it did not learn from" in result.output
    assert pictures(db) == before
    with Manifest(db) as manifest:
        assert finders.current_version(manifest.conn) is None
        assert manifest.conn.execute("SELECT COUNT(*) FROM finders").fetchone()[0] == 0
    again = CliRunner().invoke(cli, ["learn", "--boxes", "--undo", "--db", db])
    assert again.exit_code == 1 and "there is no learned finder to undo" in again.output


def test_too_few_corrected_pages_are_refused_with_how_many_are_needed(db):
    result = learn(db)
    assert result.exit_code == 1 and "0 pages with boxes a curator corrected; at least 2 are needed" in result.output


def test_a_stop_keeps_nothing(archive, db, tmp_path):
    from curation.runs.learn_boxes import LearnBoxes

    give_boxes(db, tmp_path, {page: archive[1][page - 1] for page in range(1, CORRECTED + 1)})
    with Manifest(db) as manifest:
        learner = LearnBoxes(manifest, steps=int(STEPS),
                             on_progress=lambda done, total: manifest.request_stop(learner.progress.job_id))
        report = learner.run()
        assert report.stopped and "nothing was kept" in report.message
        assert manifest.latest_job("learn_boxes")["status"] == "stopped"
        assert finders.current_version(manifest.conn) is None
        assert manifest.conn.execute("SELECT COUNT(*) FROM finders").fetchone()[0] == 0


@pytest.mark.parametrize("script", ["pages/threshold.py", "pages/review.py"])
def test_a_viewer_cannot_start_learning_from_the_boxes(tmp_path, monkeypatch, script):
    from apptest_support import filled_db, page, ran, signed_in_as
    from curation.sources import paths
    from test_auth import CURATOR, SECRETS, VIEWER, button, forced

    def as_user(email):
        at = page(script)
        at.secrets.update(SECRETS)
        at.user = signed_in_as(email)
        at.query_params["view"] = "Pictures"  # Review's; Threshold has no views
        return ran(at)

    db = tmp_path / "data" / "manifest.sqlite"
    monkeypatch.setenv("CURATION_DB", str(db))
    monkeypatch.setenv(paths.ROOTS_ENV, str(tmp_path / "archive"))
    filled_db(db, documents=1, pages=4)
    at = as_user(VIEWER)
    forced(button(at, "Learn from my boxes")).click()
    ran(at)
    with Manifest(db) as manifest:
        assert manifest.latest_job("learn_boxes") is None
    curator = as_user(CURATOR)
    assert button(curator, "Learn from my boxes").disabled, "nothing fixed yet: the page says so before the click"
    assert any("Nothing to learn from yet" in c.value and "0 pages with boxes a curator corrected" in c.value
               for c in curator.caption)


def test_the_page_says_before_the_click_what_learning_will_use_and_what_it_needs(archive, db, tmp_path, monkeypatch):
    from apptest_support import page, ran
    from curation.runs.learn_boxes import ENOUGH_PAGES, readiness
    from curation.sources import paths
    from test_auth import button

    with Manifest(db) as manifest:
        assert readiness(manifest).why_not == ("0 pages with boxes a curator corrected; at least 2 are needed (one to "
                                               "learn from, one to check on)")
    give_boxes(db, tmp_path, {1: archive[1][0]})
    with Manifest(db) as manifest:
        assert readiness(manifest).why_not.startswith("1 page with boxes a curator corrected")
    give_boxes(db, tmp_path, {page: archive[1][page - 1] for page in range(1, 4)})
    with Manifest(db) as manifest:
        ready = readiness(manifest)
    assert (ready.pages, ready.illustrated, ready.trained + ready.held_out) == (3, 3, 3) and ready.why_not is None
    assert ready.held_out >= 1 and ready.trained >= 1
    assert f"fewer than {ENOUGH_PAGES} fixed pages" in ready.summary, "three fixed pages: the page warns beforehand"

    monkeypatch.setenv("CURATION_DB", db)
    monkeypatch.setenv(paths.ROOTS_ENV, str(archive[0].parent / "archive"))
    at = ran(page("pages/threshold.py"))
    assert not button(at, "Learn from my boxes").disabled
    shown = " ".join(c.value for c in at.caption)
    assert f"Learns from your boxes on {ready.trained} page" in shown and "fix a few more first" in shown

    # The job, with the same three pages, says why it kept the finder and what would change that.
    result = learn(db)
    assert result.exit_code == 0, result.output
    if "kept the finder as it was" in result.output:
        assert f"fix the boxes of {ENOUGH_PAGES} or more and learn again" in result.output


def test_the_held_out_pages_hold_a_picture_and_a_head_that_finds_less_is_not_better():
    import numpy as np

    from curation.runs.learn_boxes import better, held_out_split, score

    illustrated = np.array([True, True, True, False, False, False, False, False, False])
    held = held_out_split(illustrated)
    assert held[:3].sum() == 1 and held[3:].sum() == 2 and (held_out_split(illustrated) == held).all()
    assert held_out_split(np.array([True, False])).sum() == 1  # one to learn from, one to check on
    # Finding nothing on a page of text and losing the picture elsewhere scores more, but is not better.
    before, after = {"clean": 1, "found": 1, "wrong": 3}, {"clean": 0, "found": 0, "wrong": 0}
    assert score(after) > score(before) and not better(after, before)
    assert better({"clean": 2, "found": 1, "wrong": 0}, before)
