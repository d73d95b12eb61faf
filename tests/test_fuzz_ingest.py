"""Fuzz campaign: hundreds of crafted and mutated PDFs beside a good one; every file ends with a status and
a reason a person can read, the good document is fully scored, and the run ends, exit 0, within its limits."""

import subprocess
import sys

import pytest

from conftest import ROOT
from curation import Manifest
from curation.sources import hostile

FILES = 240
SEED = 11
LIMIT = 5  # seconds per page: the tiling pattern would otherwise take hours
STATUSES = {"ok", "partial", "failed", "not-pdf", "empty", "encrypted"}


@pytest.mark.timeout(240)
def test_every_hostile_file_ends_with_a_status_and_a_reason(tmp_path):
    folder = tmp_path / "hostile"
    kinds = hostile.campaign(folder, FILES, seed=SEED)
    assert len(kinds) == FILES and set(hostile.CRAFTED) <= set(kinds.values())
    db = tmp_path / "m.sqlite"
    run = subprocess.run([sys.executable, "-m", "curation", "ingest", str(folder), "--db", str(db), "-q",
                          "--workers", "2", "--page-timeout", str(LIMIT)],
                         cwd=ROOT, capture_output=True, text=True, timeout=200)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "Traceback" not in run.stderr
    with Manifest(db) as manifest:
        docs = {d["path"].rsplit("/", 1)[1]: d for d in manifest.documents()}
        pages = list(manifest.pages())
        job = manifest.latest_job("ingest")
    assert job["status"] == "done"
    assert set(docs) == set(kinds) | {"good.pdf"}
    assert docs["good.pdf"]["status"] == "ok" and docs["good.pdf"]["pages"] == 4
    assert sum(p["status"] == "ok" for p in pages if p["doc"].endswith("/good.pdf")) == 4
    for name, doc in docs.items():
        assert doc["status"] in STATUSES, (name, doc["status"], doc["error"])
        if doc["status"] != "ok":
            assert readable(doc["error"]), (name, doc["error"])
    for page in pages:
        if page["status"] == "failed":
            assert readable(page["error"]), (page["doc"], page["page"], page["error"])
    assert "took longer than 5 s to draw" in docs["tiling-hang.pdf"]["error"]
    assert docs["lying-page-count.pdf"]["pages"] in (None, 0, 1)  # never ten million rows
    assert docs["lying-page-count.pdf"]["error"].startswith("MuPDF cannot read its page tree")


def readable(text):
    return bool(text) and "Traceback" not in text and len(text) < 400 and text[0].isalnum()
