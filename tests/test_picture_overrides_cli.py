"""`override DOC PAGE:PICTURE` and `override --from` with a `picture` column: a curator decides pictures from
the command line; `pictures --format csv` output, edited, is a labels file, and as written it changes nothing."""

import csv
import io

import pytest
from click.testing import CliRunner

from curation import Manifest
from curation.cli import cli
from curation.manifest import history

from test_picture_rows import ENGRAVING, STOCK_CUT, scored

PLATE = (100, 700, 600, 1200, 12.0)


def run(*args, ok=True, stdin=None):
    result = CliRunner().invoke(cli, [str(a) for a in args], input=stdin)
    assert (result.exit_code == 0) == ok, result.output
    return result.output


@pytest.fixture
def db(tmp_path, monkeypatch):
    """a.pdf: page 1 an engraving and a stock cut, page 2 a plate, page 3 text; b.pdf: page 1 a plate."""
    monkeypatch.setenv(history.USER_VARIABLE, "ana")
    path = tmp_path / "m.sqlite"
    with Manifest(path) as m:
        a = m.register_document(sha256="a" * 64, path="/archive/a.pdf", size=1)["id"]
        scored(m, a, 0, [ENGRAVING, STOCK_CUT])
        scored(m, a, 1, [PLATE])
        scored(m, a, 2, [], sigma=20.0)
        m.set_document(a, status="ok", pages=3)
        b = m.register_document(sha256="b" * 64, path="/archive/b.pdf", size=1)["id"]
        scored(m, b, 0, [PLATE])
        m.set_document(b, status="ok", pages=1)
    return path


def pictures_csv(db) -> str:
    return run("pictures", "--db", db, "--format", "csv")


def pictures(db) -> dict:
    return {(r["doc"], int(r["page"]), int(r["picture"])): r for r in csv.DictReader(io.StringIO(pictures_csv(db)))}


def pages(db) -> dict:
    rows = csv.DictReader(io.StringIO(run("pages", "--db", db, "--format", "csv")))
    return {(r["doc"], int(r["page"])): r for r in rows}


def test_one_picture_by_page_and_number_and_its_page_follows(db):
    assert pictures(db)[("/archive/a.pdf", 1, 1)]["keep"] == "True"
    assert "1 override(s)" in run("override", "a.pdf", "1:1", "exclude", "--db", db)
    row = pictures(db)[("/archive/a.pdf", 1, 1)]
    assert (row["keep"], row["decided_by"], row["override"]) == ("False", "override", "exclude")
    page = pages(db)[("/archive/a.pdf", 1)]  # its only picture of a real size is excluded: the page goes
    assert (page["keep"], page["decided_by"]) == ("False", "pictures")
    run("override", "/archive/a.pdf", "1:2", "include", "--db", db)  # the stock cut, under the size cutoff
    assert pictures(db)[("/archive/a.pdf", 1, 2)]["keep"] == "True" and pages(db)[("/archive/a.pdf", 1)]["keep"] == "True"
    run("override", "a.pdf", "1:2", "auto", "--db", db)
    assert pictures(db)[("/archive/a.pdf", 1, 2)]["override"] == "auto"
    assert pages(db)[("/archive/b.pdf", 1)]["decided_by"] == "threshold"  # nothing else moved


def test_an_unknown_picture_or_a_malformed_one_is_a_clear_error_and_changes_nothing(db):
    before = pictures_csv(db)
    out = run("override", "a.pdf", "1:9", "include", "--db", db, ok=False)
    assert "page 1 of a.pdf has no picture 9 (its pictures are 1, 2" in out
    assert "it has no picture" in run("override", "a.pdf", "3:1", "include", "--db", db, ok=False)
    assert "has no page 4" in run("override", "a.pdf", "4:1", "include", "--db", db, ok=False)
    assert "is not PAGE or PAGE:PICTURE" in run("override", "a.pdf", "1:x", "include", "--db", db, ok=False)
    out = run("override", "--from", "-", "--db", db, ok=False,
              stdin="doc,page,picture,decision\na.pdf,1,,exclude\na.pdf,2,1,exclude\na.pdf,2,7,exclude\n")
    assert "line 4: page 2 of a.pdf has no picture 7 (its pictures are 1" in out
    assert pictures_csv(db) == before  # the good rows before it were not applied
    assert pages(db)[("/archive/a.pdf", 1)]["decided_by"] == "threshold"


def test_pictures_output_as_written_changes_nothing_and_edited_decides_pictures_in_one_action(db):
    written = pictures_csv(db)
    run("override", "--from", "-", "--db", db, stdin=written)
    assert pictures_csv(db) == written
    with Manifest(db) as m:
        assert not history.actions(m.conn)  # nothing changed, nothing recorded

    rows = list(csv.DictReader(io.StringIO(written)))
    edited = {("/archive/a.pdf", "1", "1"): "exclude", ("/archive/a.pdf", "1", "2"): "include",
              ("/archive/b.pdf", "1", "1"): "exclude"}
    for row in rows:
        row["override"] = edited.get((row["doc"], row["page"], row["picture"]), row["override"])
    labels = io.StringIO()
    writer = csv.DictWriter(labels, list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    assert "4 override(s) (0 pages, 4 pictures): 1 include, 2 exclude, 1 back" in run(
        "override", "--from", "-", "--db", db, stdin=labels.getvalue())
    after = pictures(db)
    for (doc, page, number), decision in edited.items():
        row = after[(doc, int(page), int(number))]
        assert (row["override"], row["keep"]) == (decision, str(decision == "include"))
    assert after[("/archive/a.pdf", 2, 1)]["override"] == "auto"
    assert pages(db)[("/archive/b.pdf", 1)]["keep"] == "False"
    # Written again, the file round-trips exactly.
    again = pictures_csv(db)
    run("override", "--from", "-", "--db", db, stdin=again)
    assert pictures_csv(db) == again
    with Manifest(db) as m:
        assert len(history.actions(m.conn)) == 1  # the whole file was one action
        m.undo()
    assert pictures_csv(db) == written


def test_a_decision_typed_into_the_keep_column_of_pictures_output_is_refused(db):
    written = pictures_csv(db)
    lines = written.splitlines()
    header = lines[0].split(",")
    cells = lines[1].split(",")
    cells[header.index("keep")] = "exclude"
    lines[1] = ",".join(cells)
    out = run("override", "--from", "-", "--db", db, ok=False, stdin="\n".join(lines) + "\n")
    assert "line 2: keep says 'exclude'" in out and "override column" in out
    assert pictures_csv(db) == written


def test_a_labels_file_of_pages_and_pictures(db):
    out = run("override", "--from", "-", "--db", db,
              stdin="doc,page,picture,decision\nb.pdf,1,,exclude\na.pdf,2,1,exclude\na.pdf,1,2,include\n")
    assert "3 override(s) (1 pages, 2 pictures): 1 include, 2 exclude" in out
    listed = pages(db)
    assert (listed[("/archive/b.pdf", 1)]["keep"], listed[("/archive/b.pdf", 1)]["decided_by"]) == ("False", "override")
    assert (listed[("/archive/a.pdf", 2)]["keep"], listed[("/archive/a.pdf", 2)]["decided_by"]) == ("False", "pictures")
    assert pictures(db)[("/archive/a.pdf", 1, 2)]["override"] == "include"
    assert "picture 'x'" in run("override", "--from", "-", "--db", db, ok=False,
                                stdin="doc,page,picture,decision\na.pdf,1,x,include\n")
