"""A full disk during ingest, rescore or export ends in one line (which file, how much room) and exit 1;
the manifest stays consistent, the next run resumes, and an export leaves no partial ZIP."""

import errno
import os
import shutil
import sqlite3
import subprocess
import sys

import pytest

from conftest import ROOT, small_pdf
from curation import Manifest, ingest
from curation.export import Export, ExportSettings
from curation.export.zipwriter import ZipTarget
from curation.runs.jobs import DiskFull


def test_ingest_that_cannot_write_the_manifest_raises_disk_full(manifest, tmp_path, monkeypatch):
    small_pdf(tmp_path / "archive" / "a.pdf", pages=6)
    real = Manifest.save_pages
    calls = []

    def save_then_fill_up(self, doc_id, results, finder=None):
        calls.append(1)
        if len(calls) > 1:
            raise sqlite3.OperationalError("database or disk is full")
        return real(self, doc_id, results, finder)

    monkeypatch.setattr(Manifest, "save_pages", save_then_fill_up)
    with pytest.raises(DiskFull, match=r"the disk is full: .*manifest.sqlite could not be written; about .* more"):
        ingest(manifest, [tmp_path / "archive"], workers=1, pages_per_task=2)
    assert manifest.latest_job("ingest")["status"] == "failed"
    assert "the disk is full" in manifest.latest_job("ingest")["message"]  # what the app shows
    monkeypatch.undo()
    saved = len(manifest.done_pages(manifest.documents()[0]["id"]))  # the first task's pages, before the disk filled
    report = ingest(manifest, [tmp_path / "archive"], workers=1)
    assert saved >= 1 and report.pages_scored == 6 - saved and len(manifest.done_pages(manifest.documents()[0]["id"])) == 6


def test_export_on_a_full_disk_leaves_nothing_and_says_how_much_room(manifest, tmp_path, monkeypatch):
    small_pdf(tmp_path / "a.pdf", pages=4)
    ingest(manifest, [tmp_path / "a.pdf"], workers=1)
    for page in range(4):
        manifest.set_override(manifest.documents()[0]["id"], page, True)
    real = ZipTarget.add
    images = []

    def add_until_full(self, name, data, **options):
        images.extend([name] if name.endswith(".jpg") else [])
        if len(images) == 3:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(self, name, data, **options)

    monkeypatch.setattr(ZipTarget, "add", add_until_full)
    with pytest.raises(DiskFull, match=r"lora.zip could not be written; about .* more is needed"):
        Export(manifest, tmp_path / "out" / "lora.zip", ExportSettings(size=128), page_timeout=0).run()
    assert list((tmp_path / "out").iterdir()) == []
    assert "the disk is full" in manifest.latest_job("export")["message"]


@pytest.fixture
def small_volume(tmp_path):
    """A 12 MB tmpfs, as a nearly full disk (room for the manifest of 120 pages, their pictures' cards
    included). Needs mount rights (root); skipped elsewhere."""
    volume = tmp_path / "volume"
    volume.mkdir()
    if shutil.which("mount") is None or os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=12m", "tmpfs", str(volume)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    yield volume
    subprocess.run(["umount", "-l", str(volume)], check=False)


def cli(*args):
    return subprocess.run([sys.executable, "-m", "curation", *map(str, args)], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)


def test_cli_on_a_really_full_disk_says_one_line_and_resumes(small_volume, tmp_path):
    archive = tmp_path / "archive"
    for n in range(3):
        small_pdf(archive / f"issue-{n}.pdf", pages=40, seed=n, dpi=100)
    db = small_volume / "manifest.sqlite"
    filler = small_volume / "filler"
    filler.write_bytes(b"\0" * (shutil.disk_usage(small_volume).free - 900_000))
    run = cli("ingest", archive, "--db", db, "-q", "--workers", "1")
    assert run.returncode == 1, run.stdout + run.stderr
    assert "Traceback" not in run.stderr
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: the disk is full: ") and "manifest.sqlite" in lines[0]
    assert "MB more is needed" in lines[0] or "kB more is needed" in lines[0]
    filler.unlink()
    run = cli("ingest", archive, "--db", db, "-q", "--workers", "1")
    assert run.returncode == 0, run.stderr
    with Manifest(db) as manifest:
        assert manifest.summary()["scored"] == 120
        doc = manifest.documents()[0]["id"]
        for page in range(40):
            manifest.set_override(doc, page, True)
    out = small_volume / "lora.zip"
    free = shutil.disk_usage(small_volume).free
    filler.write_bytes(b"\0" * max(0, free - 150_000))
    run = cli("export", "--db", db, "--out", out, "-q", "--size", "512", "--workers", "1")
    assert run.returncode == 1 and "Traceback" not in run.stderr, run.stderr
    assert run.stderr.strip().splitlines()[-1].startswith("Error: the disk is full: ")
    assert "lora.zip" in run.stderr
    assert not [p for p in small_volume.iterdir() if "lora" in p.name]
