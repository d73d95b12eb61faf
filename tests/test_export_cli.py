"""`python -m curation export`: exit 0 with a ZIP, clear refusals, and nothing under the final name when
the process is killed midway."""

import csv
import io
import json
import os
import pathlib
import signal
import subprocess
import sys
import time
import zipfile

import pymupdf
import pytest
from PIL import Image

from curation import Manifest
from curation.export import ExportSettings
from curation.scoring.result import PageResult
from curation.sources.reader import file_sha256
from curation.sources.page_numbers import page_index
from curation.sources.synthetic import PageSpec, jpeg_bytes, page_image

from conftest import ROOT, SMALL


def repeated_scan_pdf(path: pathlib.Path, pages: int, dpi: int = 150) -> pathlib.Path:
    """A PDF of `pages` pages, each one the same JPEG scan (one stream, so it is quick to make)."""
    data = jpeg_bytes(page_image(PageSpec(kind="engraving", seed=2, dpi=dpi, inches=SMALL)))
    doc = pymupdf.open()
    xref = 0
    for _ in range(pages):
        page = doc.new_page(width=216, height=288)
        xref = page.insert_image(page.rect, stream=data) if not xref else page.insert_image(page.rect, xref=xref)
    doc.save(path)
    return path


def record_scores(manifest: Manifest, pdf: pathlib.Path, sigmas: list[float]) -> int:
    """Record `pdf` as ingest would after scoring it, with the given sigmas, without scoring it."""
    doc = manifest.register_document(file_sha256(pdf), str(pdf.resolve()), pdf.stat().st_size)
    manifest.set_document(doc["id"], status="ok", pages=len(sigmas))
    manifest.save_pages(doc["id"], [PageResult(page=n, status="ok", sigma=s, width=432, height=576, method="jpeg")
                                    for n, s in enumerate(sigmas)])
    return doc["id"]


@pytest.fixture
def db(tmp_path):
    pdf = repeated_scan_pdf(tmp_path / "issue.pdf", 6)
    with Manifest(tmp_path / "manifest.sqlite") as m:
        record_scores(m, pdf, [60, 20, 70, 80, 10, 90])  # four kept at 45
    return tmp_path / "manifest.sqlite"


def run_cli(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "curation", "export", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def test_exports_with_the_defaults_and_exits_zero(db, tmp_path):
    result = run_cli("--db", db, "--out", tmp_path / "out" / "lora.zip", "--workers", "1")
    assert result.returncode == 0, result.stderr
    assert "4 images (kohya layout, square pad 1024, 0 pictures cut apart) written to" in result.stdout  # none found
    assert "exporting" in result.stderr  # the progress bar
    with zipfile.ZipFile(tmp_path / "out" / "lora.zip") as z:
        assert json.loads(z.read("export.json"))["settings"] == ExportSettings().as_dict()
        assert sum(name.endswith(".jpg") for name in z.namelist()) == 4


def test_quiet_prints_no_progress_and_options_are_used(db, tmp_path):
    result = run_cli("--db", db, "--out", tmp_path / "set.zip", "--workers", "2", "--quiet", "--layout", "folder",
                     "--mode", "bucket", "--size", "512", "--trigger", "bzr", "--threshold", "65")
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    with zipfile.ZipFile(tmp_path / "set.zip") as z:
        names = [n for n in z.namelist() if n.endswith(".txt")]
        assert len(names) == 3 and all(n.startswith("images/") for n in names)
        assert z.read(names[0]) == b"bzr, engraving"


@pytest.mark.parametrize("args, code, message", [
    (["--template", "{trigger} {nope}"], 2, "unknown placeholder {nope}"),
    (["--threshold", "100"], 1, "nothing to export"),
    (["--layout", "zip"], 2, "Invalid value for '--layout'"),
])
def test_refusals_say_why_and_write_nothing(db, tmp_path, args, code, message):
    result = run_cli("--db", db, "--out", tmp_path / "lora.zip", *args)
    assert result.returncode == code and message in result.stderr
    assert not (tmp_path / "lora.zip").exists()


def test_missing_manifest_is_an_error(tmp_path):
    result = run_cli("--db", tmp_path / "none.sqlite", "--out", tmp_path / "lora.zip")
    assert result.returncode == 1 and "no manifest" in result.stderr


def test_an_export_killed_midway_leaves_no_final_file(tmp_path):
    pdf = repeated_scan_pdf(tmp_path / "long.pdf", 80)
    db = tmp_path / "manifest.sqlite"
    with Manifest(db) as m:
        record_scores(m, pdf, [90.0] * 80)
    out = tmp_path / "lora.zip"
    command = [sys.executable, "-m", "curation", "export", "--db", str(db), "--out", str(out), "--size", "2048",
               "--workers", "1", "--quiet"]
    proc = subprocess.Popen(command, cwd=ROOT, start_new_session=True)
    part = tmp_path / f".lora.zip.{proc.pid}.part"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (part.exists() and part.stat().st_size > 2_000_000):
        time.sleep(0.05)
    assert proc.poll() is None, "the export finished before it could be killed"
    os.killpg(proc.pid, signal.SIGKILL)  # like a power cut: no clean-up runs
    proc.wait()
    assert not out.exists() and part.exists()
    with Manifest(db) as m:
        assert m.latest_job("export")["status"] == "interrupted"  # its process is gone
    result = run_cli("--db", db, "--out", out, "--size", "64", "--workers", "1")
    assert result.returncode == 0, result.stderr
    assert not part.exists()  # the next export to the same place removed the leftover
    with zipfile.ZipFile(out) as z:
        assert sum(name.endswith(".jpg") for name in z.namelist()) == 80


def features(manifest: Manifest, doc_id: int, page: int, share: float, box=None) -> None:
    """Give a recorded page the picture ingest would have found (reference pixels)."""
    x0, y0, x1, y1 = box or (None,) * 4
    # A page of about 100 square inches: its share in percent is its picture's square inches.
    manifest.conn.execute("UPDATE pages SET picture_share = ?, picture_area = ?, ink_tone = 0.8, picture_x0 = ?, "
                          "picture_y0 = ?, picture_x1 = ?, picture_y1 = ? WHERE doc_id = ? AND page = ?",
                          (share, share * 100, x0, y0, x1, y1, doc_id, page))


def grouped_manifest(folder: pathlib.Path, db: pathlib.Path) -> pathlib.Path:
    """Six copies of one plate, four kept; three of the kept ones in one near-duplicate group, two of
    them with a picture box in the top half of the page."""
    pdf = repeated_scan_pdf(folder / "issue.pdf", 6)
    with Manifest(db) as m:
        doc = record_scores(m, pdf, [60, 20, 70, 80, 10, 90])
        m.rule = "sigma"
        features(m, doc, 0, 0.2, (40, 30, 392, 260))
        features(m, doc, 2, 0.3, (40, 30, 392, 260))
        features(m, doc, 3, 0.1)
        m.replace_duplicates([[(doc, 0), (doc, 2), (doc, 3)]])
    return db


@pytest.fixture
def grouped_db(tmp_path):
    return grouped_manifest(tmp_path, tmp_path / "manifest.sqlite")


def test_near_duplicates_are_left_out_unless_asked_for(grouped_db, tmp_path):
    result = run_cli("--db", grouped_db, "--out", tmp_path / "one.zip", "--workers", "1", "--quiet", "--size", "64")
    assert result.returncode == 0, result.stderr
    assert "2 images" in result.stdout and "2 near-duplicates left out" in result.stdout
    with zipfile.ZipFile(tmp_path / "one.zip") as z:
        rows = list(csv.DictReader(io.StringIO(z.read("manifest.csv").decode())))
        assert [(r["page"], r["duplicate_group"]) for r in rows] == [("3", "1"), ("6", "")]  # the largest picture; pages from 1
        assert [e["page"] for e in json.loads(z.read("export.json"))["duplicates"]["left_out"]] == [1, 4]
    result = run_cli("--db", grouped_db, "--out", tmp_path / "all.zip", "--workers", "1", "--quiet", "--size", "64",
                     "--duplicates", "all")
    assert result.returncode == 0, result.stderr
    assert "4 images" in result.stdout and "left out" not in result.stdout
    with zipfile.ZipFile(tmp_path / "all.zip") as z:
        assert sum(name.endswith(".jpg") for name in z.namelist()) == 4


def test_crop_picture_cuts_the_pages_that_have_one(grouped_db, tmp_path):
    result = run_cli("--db", grouped_db, "--out", tmp_path / "cut.zip", "--workers", "1", "--quiet",
                     "--mode", "bucket", "--size", "512", "--crop", "picture", "--duplicates", "all")
    assert result.returncode == 0, result.stderr
    assert "2 cut to their picture" in result.stdout
    with zipfile.ZipFile(tmp_path / "cut.zip") as z:
        rows = {page_index(int(r["page"])): r for r in csv.DictReader(io.StringIO(z.read("manifest.csv").decode()))}
        assert [rows[p]["crop"] for p in (0, 2, 3, 5)] == ["picture", "picture", "page", "page"]
        assert [int(rows[0][f"crop_{c}"]) for c in ("x0", "y0", "x1", "y1")] == [35, 25, 397, 265]  # 1 % margin
        assert [int(rows[5][f"crop_{c}"]) for c in ("x0", "y0", "x1", "y1")] == [0, 0, 432, 576]
        sizes = {p: Image.open(io.BytesIO(z.read(rows[p]["file"]))).size for p in (0, 5)}
        assert sizes[0][0] > sizes[0][1] and sizes[5][0] < sizes[5][1]  # the landscape plate, the portrait page
        assert json.loads(z.read("export.json"))["crop"]["cropped_images"] == 2
