"""Broken and unusual files end with a status and a reason; the run goes on and exits 0."""

import io
import subprocess
import sys

import numpy as np
import pymupdf
import pytest
from PIL import Image

from curation import Manifest, ingest
from curation.sources.synthetic import jpeg_bytes, page_image, PageSpec

from conftest import ROOT, SMALL, small_pdf


def scan(seed=0):
    return page_image(PageSpec(kind="engraving", seed=seed, dpi=150, inches=SMALL))


def odd_pages_pdf(path):
    """Pages with giant boxes, rotation, PNG, CMYK, several images and no image at all."""
    doc = pymupdf.open()
    giant = doc.new_page(width=14400, height=14400)
    giant.insert_image(giant.rect, stream=jpeg_bytes(scan(1)))
    rotated = doc.new_page(width=216, height=288)
    rotated.insert_image(rotated.rect, stream=jpeg_bytes(scan(2)))
    rotated.set_rotation(270)
    png = io.BytesIO()
    Image.fromarray(scan(3)).save(png, "PNG")
    doc.new_page(width=216, height=288).insert_image(pymupdf.Rect(0, 0, 216, 288), stream=png.getvalue())
    cmyk = io.BytesIO()
    Image.fromarray(scan(4)).convert("CMYK").save(cmyk, "JPEG")
    doc.new_page(width=216, height=288).insert_image(pymupdf.Rect(0, 0, 216, 288), stream=cmyk.getvalue())
    several = doc.new_page(width=216, height=288)
    several.insert_image(pymupdf.Rect(0, 0, 216, 140), stream=jpeg_bytes(scan(5)))
    several.insert_image(pymupdf.Rect(0, 148, 216, 288), stream=jpeg_bytes(scan(6)))
    text = doc.new_page(width=216, height=288)
    text.insert_text((20, 40), "A page with no image", fontsize=12)
    doc.save(path)
    return path


@pytest.fixture
def bad_archive(tmp_path):
    folder = tmp_path / "archive"
    folder.mkdir()
    good = small_pdf(folder / "good.pdf", pages=3)
    (folder / "empty.pdf").write_bytes(b"")
    (folder / "random.pdf").write_bytes(np.random.default_rng(0).bytes(5000))
    (folder / "truncated.pdf").write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    (folder / "photo.pdf").write_bytes(jpeg_bytes(scan(7)))
    locked = pymupdf.open(good)
    locked.save(folder / "locked.pdf", encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw="secret", owner_pw="owner")
    odd_pages_pdf(folder / "odd.pdf")
    zero_pages = folder / "nopages.pdf"
    zero_pages.write_bytes(b"%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n"
                           b"2 0 obj<</Type/Pages/Kids[]/Count 0>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n")
    return folder


def by_name(manifest):
    return {d["path"].rsplit("/", 1)[1]: d for d in manifest.documents()}


def test_each_bad_file_gets_a_status_and_a_reason(manifest, bad_archive):
    report = ingest(manifest, [bad_archive], workers=2)
    docs = by_name(manifest)
    assert docs["good.pdf"]["status"] == "ok"
    assert (docs["empty.pdf"]["status"], docs["empty.pdf"]["error"]) == ("empty", "the file is empty (0 bytes)")
    assert docs["random.pdf"]["status"] == "not-pdf" and "no %PDF header" in docs["random.pdf"]["error"]
    assert docs["photo.pdf"]["status"] == "not-pdf" and "JPEG image" in docs["photo.pdf"]["error"]
    assert docs["locked.pdf"]["status"] == "encrypted" and "password" in docs["locked.pdf"]["error"]
    assert docs["nopages.pdf"]["status"] == "empty"
    assert docs["truncated.pdf"]["status"] == "partial"
    assert "damaged page" in docs["truncated.pdf"]["error"]
    assert docs["odd.pdf"]["status"] == "ok"
    assert len(report.problems) == 5


def test_every_readable_page_of_odd_documents_is_scored(manifest, bad_archive):
    ingest(manifest, [bad_archive / "odd.pdf"], workers=1)
    rows = list(manifest.pages())
    assert [r["status"] for r in rows] == ["ok"] * 6
    assert rows[0]["method"] == "render-reduced" and (rows[0]["width"], rows[0]["height"]) == (28800, 28800)
    assert {r["method"] for r in rows[1:]} == {"render"}


def test_cli_goes_on_past_bad_files_and_exits_zero(bad_archive, tmp_path):
    db = tmp_path / "m.sqlite"
    result = subprocess.run([sys.executable, "-m", "curation", "ingest", str(bad_archive), "--db", str(db), "-q"],
                            cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "warning:" in result.stderr and "password-protected" in result.stderr
    listing = subprocess.run([sys.executable, "-m", "curation", "docs", "--db", str(db)],
                             cwd=ROOT, capture_output=True, text=True)
    assert "encrypted" in listing.stdout and "not-pdf" in listing.stdout


def test_a_missing_path_is_an_error_before_any_work(tmp_path, archive):
    db = tmp_path / "m.sqlite"
    result = subprocess.run(
        [sys.executable, "-m", "curation", "ingest", str(archive), str(tmp_path / "nope"), "--db", str(db)],
        cwd=ROOT, capture_output=True, text=True)
    assert result.returncode != 0
    assert "does not exist" in result.stderr
    assert not db.exists()


def test_library_refuses_missing_paths_before_opening_a_job(manifest, tmp_path):
    with pytest.raises(FileNotFoundError, match="nope"):
        ingest(manifest, [tmp_path / "nope"])
    assert manifest.latest_job() is None
