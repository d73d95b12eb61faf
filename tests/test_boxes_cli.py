"""`boxes --from`: a file of boxes sets pages' pictures as a curator would (matched pictures keep their number and
decision, the rest added or deleted), as one undoable action; a bad line says its number and changes nothing;
the manifest remembers which finder found each picture."""

import json

import pytest
from click.testing import CliRunner

from curation import Manifest
from curation.cli import cli

from conftest import manifest_copy
from test_picture_verdict import drawing_archive


@pytest.fixture(scope="module")
def ingested(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("boxes")
    folder, page, drawing = drawing_archive(tmp_path, seed=43)
    db = tmp_path / "m.sqlite"
    result = CliRunner().invoke(cli, ["ingest", str(folder), "--db", str(db), "-q", "--pictures", "network"])
    assert result.exit_code == 0, result.output
    return db, page, drawing


@pytest.fixture
def db(ingested, tmp_path):
    with manifest_copy(ingested[0], tmp_path) as manifest:
        return str(manifest.path)


def pictures(db) -> list[dict]:
    output = CliRunner().invoke(cli, ["pictures", "--db", db, "--format", "jsonl"], catch_exceptions=False).output
    return [json.loads(line) for line in output.splitlines()]


def boxes(db, tmp_path, lines: list) -> object:
    file = tmp_path / "boxes.jsonl"
    file.write_text("\n".join(line if isinstance(line, str) else json.dumps(line) for line in lines) + "\n")
    return CliRunner().invoke(cli, ["boxes", "--from", str(file), "--db", db])


def fractions(ingested) -> list[float]:
    _, page, drawing = ingested
    h, w = page.shape
    return [drawing[0] / w, drawing[1] / h, drawing[2] / w, drawing[3] / h]


def test_a_page_s_pictures_become_exactly_the_boxes_given_and_undo_takes_them_back(ingested, db, tmp_path):
    before = pictures(db)
    assert before, "the finder found nothing to match"
    drawing = fractions(ingested)
    found = max(before, key=lambda p: (min(p["x1"], drawing[2]) - max(p["x0"], drawing[0]))
                * (min(p["y1"], drawing[3]) - max(p["y0"], drawing[1])))
    with Manifest(db) as manifest:
        assert {row[0] for row in manifest.conn.execute("SELECT finder FROM pictures")} == {"network"}
        manifest.set_picture_override(manifest.conn.execute(
            "SELECT id FROM pictures WHERE number = ?", (found["picture"],)).fetchone()[0], True)
    added = [0.05, 0.05, 0.2, 0.12]
    result = boxes(db, tmp_path, [{"doc": "issue.pdf", "page": 1, "pictures": [
        {"box": drawing, "counts": True}, {"box": added, "counts": False}]}])
    assert result.exit_code == 0, result.output
    after = {p["picture"]: p for p in pictures(db)}
    kept = after[found["picture"]]
    assert kept["override"] == "include", "the matched picture keeps its decision"
    assert [round(v, 2) for v in (kept["x0"], kept["y0"], kept["x1"], kept["y1"])] == [round(v, 2) for v in drawing]
    new = [p for number, p in after.items() if number not in {q["picture"] for q in before}]
    assert len(new) == 1 and new[0]["override"] == "exclude" and new[0]["x0"] == pytest.approx(0.05, abs=0.01)
    live = [p for p in after.values() if p["decided_by"] != "deleted"]
    assert len(live) == 2, "every other picture of the page is deleted"
    assert f"1 page(s) set: 1 picture(s) kept, 1 added, {len(before) - 1} deleted" in result.output
    with Manifest(db) as manifest:
        action = manifest.conn.execute("SELECT * FROM history ORDER BY id DESC LIMIT 1").fetchone()
        assert action["kind"] == "picture" and action["changes"] >= 3
        manifest.undo(action["id"])
    restored = pictures(db)
    assert [(p["picture"], p["x0"], p["override"], p["decided_by"] == "deleted") for p in restored
            if p["picture"] in {q["picture"] for q in before}] == \
        [(p["picture"], p["x0"], "include" if p is found else p["override"], False) for p in before]


def test_a_bad_line_says_its_number_and_changes_nothing_while_the_good_lines_are_set(ingested, db, tmp_path):
    before = pictures(db)
    drawing = fractions(ingested)
    result = boxes(db, tmp_path, [
        {"doc": "issue.pdf", "page": 1, "pictures": [{"box": drawing, "counts": True}]},
        "{not json",
        {"doc": "nowhere.pdf", "page": 1, "pictures": []},
        {"doc": "issue.pdf", "page": 9, "pictures": []},
        {"doc": "issue.pdf", "page": 1, "pictures": [{"box": [0.1, 0.1, 1.5, 0.2], "counts": True}]},
        {"doc": "issue.pdf", "page": 1, "pictures": [{"box": drawing, "counts": "yes"}]},
    ])
    assert result.exit_code == 1
    for line, words in ((2, "not JSON"), (3, "no document 'nowhere.pdf'"), (4, "issue.pdf has no page 9"),
                        (5, "box is not"), (6, "counts is not true or false")):
        assert f"line {line}: " in result.output and words in result.output, result.output
    assert "Traceback" not in result.output
    assert "1 page(s) set" in result.output and "5 line(s) refused" in result.output
    after = [p for p in pictures(db) if p["decided_by"] != "deleted"]
    assert len(after) == 1 and len(before) >= 1  # line 1 was set, lines 5 and 6 did not undo it


def test_a_line_that_fails_while_it_is_set_leaves_its_page_as_it_was(ingested, db, tmp_path):
    drawing = fractions(ingested)
    before = pictures(db)
    # The second box is a line, not a box: found only when that picture is added, after the first was matched.
    result = boxes(db, tmp_path, [{"doc": "issue.pdf", "page": 1, "pictures": [
        {"box": drawing, "counts": False}, {"box": [0.5, 0.5, 0.5001, 0.6], "counts": True}]}])
    assert result.exit_code == 1 and "line 1: a picture's box needs two corners apart" in result.output
    assert pictures(db) == before
    with Manifest(db) as manifest:
        assert manifest.conn.execute("SELECT COUNT(*) FROM history WHERE kind = 'picture'").fetchone()[0] == 0


def test_every_bad_line_is_refused_alone_even_those_that_used_to_end_the_command(ingested, db, tmp_path):
    """A page number of 10**23, JSON nested 100,000 deep and bytes that are not UTF-8 each ended the command
    with a traceback and rolled back the good lines before them; now each is refused with its line number."""
    drawing = fractions(ingested)
    good = json.dumps({"doc": "issue.pdf", "page": 1, "pictures": [{"box": drawing, "counts": True}]}).encode()
    last = json.dumps({"doc": "issue.pdf", "page": 1, "pictures": [
        {"box": drawing, "counts": True}, {"box": [0.05, 0.05, 0.2, 0.12], "counts": False}]}).encode()
    lines = [
        good,
        json.dumps({"doc": "issue.pdf", "page": 10**23, "pictures": []}).encode(),
        b"[" * 100_000 + b"]" * 100_000,
        b'{"doc": "caf\xe9.pdf", "page": 1, "pictures": []}',
        b'{"doc": "issue.pdf", "page": 1' + b"0" * 5000 + b', "pictures": []}',
        json.dumps({"doc": 10**23, "page": 1, "pictures": []}).encode(),
        json.dumps({"doc": "issue.pdf", "page": 1, "pictures": [{"box": drawing}] * 1001}).encode(),
        last,
    ]
    file = tmp_path / "boxes.jsonl"
    file.write_bytes(b"\n".join(lines) + b"\n")
    result = CliRunner().invoke(cli, ["boxes", "--from", str(file), "--db", db])
    assert result.exit_code == 1
    for line, words in ((2, "page 100000000000000000000000 is not a page number"), (3, "its JSON is nested too deeply"), (4, "not UTF-8 text (byte 13"),
                        (5, "not JSON that can be read (a number too long)"), (6, "no document '100000000000000000000000'"),
                        (7, "1,001 pictures on one page, over the limit of 1,000")):
        assert f"line {line}: {words}" in result.output, result.output[-3000:]
    assert "Traceback" not in result.output
    assert "2 page(s) set" in result.output and "6 line(s) refused" in result.output
    live = [p for p in pictures(db) if p["decided_by"] != "deleted"]
    assert len(live) == 2  # the last good line is set, after every bad one
