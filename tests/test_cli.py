"""The CLI: the names scripts depend on, in every format."""

import csv
import io
import json

from click.testing import CliRunner

from curation.cli import cli


def run(*args):
    result = CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def test_ingest_then_list_documents_and_pages(tmp_path, archive):
    db = tmp_path / "m.sqlite"
    out = run("ingest", archive, "--db", db, "--workers", 1, "-q")
    assert "3 documents (3 new): 15 pages scored, 0 failed" in out

    docs = [json.loads(line) for line in run("docs", "--db", db, "--format", "jsonl").splitlines()]
    assert [d["status"] for d in docs] == ["ok"] * 3
    assert {"path", "pages", "status", "error"} <= set(docs[0])
    assert [d["pages"] for d in docs] == [4, 5, 6]

    pages = list(csv.DictReader(io.StringIO(run("pages", "--db", db, "--format", "csv", "--rule", "sigma"))))
    assert len(pages) == 15
    assert {"doc", "page", "sigma", "width", "height", "keep", "decided_by"} <= set(pages[0])
    assert {p["decided_by"] for p in pages} == {"threshold"}
    assert all((float(p["sigma"]) > 45) == (p["keep"] == "True") for p in pages)
    assert [int(p["page"]) for p in pages[:4]] == [1, 2, 3, 4]  # as a PDF viewer counts

    everything = [json.loads(l) for l in run("pages", "--db", db, "--format", "jsonl", "--threshold", 0, "--rule", "sigma").splitlines()]
    assert all(p["keep"] for p in everything)

    table = run("pages", "--db", db)
    assert table.splitlines()[0].split()[:4] == ["doc", "page", "sigma", "width"]


def test_status_summarises_documents_pages_scores_and_the_last_job(tmp_path, archive):
    db = tmp_path / "m.sqlite"
    run("ingest", archive, "--db", db, "-w", 1, "-q")
    out = run("status", "--db", db)
    assert "documents: 3 ok" in out
    assert "pages: 15 (15 scored, 0 failed)" in out
    assert "rule picture (a picture >= 2 sq in):" in out and "removed" in out
    assert "ingest job 1: done, 15/15 pages" in out


def test_status_counts_each_job_in_what_it_counts(tmp_path):
    from curation import Manifest

    db = tmp_path / "m.sqlite"
    with Manifest(db) as m:  # as the picture job leaves them: it counts pictures, not pages
        embed = m.start_job("embed", {})
        m.update_job(embed, done=149, total=149)
        m.finish_job(embed, "done", "149 pictures embedded from 37 pages")
    line = run("status", "--db", db).splitlines()[-1]
    assert line == "embed job 1: done, 149/149 pictures (149 pictures embedded from 37 pages)"
    with Manifest(db) as m:  # the model's learning counts a share of its work: no unit to name
        learn = m.start_job("learn", {})
        m.update_job(learn, done=40, total=100, rate=2.0, eta=30.0)
    assert run("status", "--db", db).splitlines()[-1] == f"learn job {learn}: running, 40/100, 2.0 steps/s, 30 s left"


def test_reading_commands_on_a_missing_manifest_fail_clearly(tmp_path):
    result = CliRunner().invoke(cli, ["status", "--db", str(tmp_path / "nothing.sqlite")])
    assert result.exit_code == 1
    assert "no manifest at" in result.output


def test_a_document_that_cannot_be_read_is_counted_as_failed(tmp_path):
    from conftest import small_pdf

    folder = tmp_path / "archive"
    folder.mkdir()
    (folder / "fake.pdf").write_bytes(b"not a PDF at all\n" * 20)
    small_pdf(folder / "real.pdf", pages=2)
    result = CliRunner().invoke(cli, ["ingest", str(folder), "--db", str(tmp_path / "m.sqlite"), "--workers", "1", "-q"])
    assert result.exit_code == 0, result.output
    assert "2 documents (2 new): 2 pages scored, 1 document failed" in result.output
