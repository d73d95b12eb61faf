"""`override`: the curator's decisions from the command line, one page or a labels file, round-tripping
with `pages`; re-scoring keeps them."""

import csv
import io

from click.testing import CliRunner

from curation.cli import cli


def run(*args, ok=True, stdin=None):
    result = CliRunner().invoke(cli, [str(a) for a in args], input=stdin)
    assert (result.exit_code == 0) == ok, result.output
    return result.output


def pages(db, *extra):
    rows = csv.DictReader(io.StringIO(run("pages", "--db", db, "--format", "csv", *extra)))
    return {(row["doc"], int(row["page"])): row for row in rows}


def test_one_page_by_path_file_name_or_id(tmp_path, archive):
    db = tmp_path / "m.sqlite"
    run("ingest", archive, "--db", db, "--workers", 1, "-q")
    (doc, page), row = next(iter(pages(db).items()))
    flipped = "exclude" if row["keep"] == "True" else "include"
    assert "1 override(s)" in run("override", doc, page, flipped, "--db", db)
    after = pages(db)[(doc, page)]
    assert after["decided_by"] == "override" and after["keep"] == str(flipped == "include")
    run("override", doc.rsplit("/", 1)[-1], page, "auto", "--db", db)  # by file name
    assert pages(db)[(doc, page)]["decided_by"] == "threshold"
    run("override", "1", 1, "include", "--db", db)  # by id
    assert "no document" in run("override", "nothing.pdf", 1, "include", "--db", db, ok=False)
    assert "has no page 99" in run("override", doc, 99, "include", "--db", db, ok=False)


def test_pages_count_from_one_as_a_pdf_viewer_counts(tmp_path, archive):
    """`pages` lists page 1 for the first page of a PDF, and `override DOC 1` overrules that page: the
    first page as the manifest stores it (index 0), as the app and the export's file names call it."""
    from curation.manifest.store import Manifest

    db = tmp_path / "m.sqlite"
    run("ingest", archive, "--db", db, "--workers", 1, "-q")
    listed = pages(db)
    doc = sorted(listed)[0][0]
    numbers = sorted(page for name, page in listed if name == doc)
    assert numbers[0] == 1 and numbers == list(range(1, len(numbers) + 1))
    run("override", doc, 1, "exclude", "--db", db)
    with Manifest(db) as manifest:
        stored = manifest.conn.execute("SELECT page, keep FROM overrides").fetchall()
    assert [tuple(row) for row in stored] == [(0, 0)]
    assert pages(db)[(doc, 1)]["decided_by"] == "override"
    last = len(numbers)
    assert "has no page 0" in run("override", doc, 0, "include", "--db", db, ok=False)
    assert f"has no page {last + 1}" in run("override", "--from", "-", "--db", db, ok=False,
                                             stdin=f"doc,page,decision\n{doc},{last + 1},include\n")
    run("override", "--from", "-", "--db", db, stdin=f"doc,page,decision\n{doc},{last},include\n")
    with Manifest(db) as manifest:
        assert manifest.conn.execute("SELECT MAX(page) FROM overrides").fetchone()[0] == last - 1


def test_a_labels_file_round_trips_with_pages_and_survives_a_rescore(tmp_path, archive):
    db = tmp_path / "m.sqlite"
    run("ingest", archive, "--db", db, "--workers", 1, "-q")
    before = pages(db)
    wanted = {key: ("exclude" if row["keep"] == "True" else "include") for key, row in list(before.items())[::2]}
    labels = tmp_path / "labels.csv"
    with labels.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["doc", "page", "decision"])
        writer.writerows([doc, page, decision] for (doc, page), decision in wanted.items())
    assert f"{len(wanted)} override(s)" in run("override", "--from", labels, "--db", db)
    run("rescore", "--all", "--db", db, "--workers", 1, "-q")
    after = pages(db)
    for key, decision in wanted.items():
        assert after[key]["decided_by"] == "override" and after[key]["keep"] == str(decision == "include")
    untouched = set(before) - set(wanted)
    assert all(after[key]["decided_by"] == "threshold" for key in untouched)

    # `pages` output itself is a labels file: its keep column says what to pin.
    exported = run("pages", "--db", db, "--format", "csv")
    run("override", "--from", "-", "--db", db, stdin=exported)
    assert all(row["decided_by"] == "override" for row in pages(db).values())
    assert {k: r["keep"] for k, r in pages(db).items()} == {k: r["keep"] for k, r in after.items()}


def test_a_bad_labels_file_changes_nothing(tmp_path, archive):
    db = tmp_path / "m.sqlite"
    run("ingest", archive, "--db", db, "--workers", 1, "-q")
    (doc, page) = next(iter(pages(db)))
    out = run("override", "--from", "-", "--db", db, ok=False,
              stdin=f"doc,page,decision\n{doc},{page},include\n{doc},{page},perhaps\n")
    assert "line 3" in out and "perhaps" in out
    assert all(row["decided_by"] == "threshold" for row in pages(db).values())
    assert "missing decision" in run("override", "--from", "-", "--db", db, ok=False, stdin="doc,page\nx,1\n")
