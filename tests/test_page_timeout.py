"""A page that never finishes is skipped after the time limit; its worker is killed, the run goes on."""

import json
import os
import struct
import subprocess
import sys
import threading
import zipfile

import pymupdf
import pytest

import crashing
from conftest import ROOT, small_pdf
from curation import Manifest, ingest
from curation.export import Export, ExportSettings
from curation.export.job import in_order
from curation.export.worker import NotExported
from curation.runs.ingest import Rescore
from curation.runs.worker_pool import kill_executor, process_pool
from curation.sources import hostile

LIMIT = 2.0
pytestmark = pytest.mark.timeout(180)


def names(manifest):
    return {d["path"].rsplit("/", 1)[1]: d for d in manifest.documents()}


@pytest.fixture
def hanging_archive(tmp_path):
    """good.pdf, hang.pdf (one page with a 0.001 pt tiling pattern) and mixed.pdf (the same page as page 3 of 5)."""
    folder = tmp_path / "archive"
    good = small_pdf(folder / "good.pdf", pages=4)
    (folder / "hang.pdf").write_bytes(hostile.tiling_hang())
    mixed = pymupdf.open(good)
    mixed.insert_pdf(pymupdf.open(folder / "hang.pdf"), start_at=2)
    mixed.save(folder / "mixed.pdf")
    return folder


def test_a_hanging_page_is_skipped_and_the_rest_scored(manifest, hanging_archive):
    report = ingest(manifest, [hanging_archive], workers=2, page_timeout=LIMIT)
    docs = names(manifest)
    message = f"took longer than {LIMIT:g} s to draw; skipped"
    assert docs["good.pdf"]["status"] == "ok"
    assert docs["hang.pdf"]["status"] == "failed" and message in docs["hang.pdf"]["error"]
    assert docs["mixed.pdf"]["status"] == "partial" and "page 3:" in docs["mixed.pdf"]["error"]  # from 1
    failed = [(r["doc"].rsplit("/", 1)[1], r["page"], r["error"]) for r in manifest.pages() if r["status"] == "failed"]
    assert sorted(failed) == [("hang.pdf", 0, message), ("mixed.pdf", 2, message)]
    assert report.pages_scored == 8 and report.pages_failed == 2 and report.timeouts >= 1
    assert manifest.latest_job("ingest")["status"] == "done"


def test_the_scheduler_kills_a_hung_worker_inside_a_task_and_keeps_its_other_pages(manifest, tmp_path):
    folder = tmp_path / "archive"
    small_pdf(folder / "a.pdf", pages=3, seed=1)
    small_pdf(folder / "b.pdf", pages=6, seed=2)
    report = ingest(manifest, [folder], workers=2, pages_per_task=6, page_timeout=LIMIT,
                    task_fn=crashing.run_task_hanging_on_page_3)
    rows = {(r["doc"].rsplit("/", 1)[1], r["page"]): r for r in manifest.pages()}
    assert [key for key, row in rows.items() if row["status"] == "failed"] == [("b.pdf", 3)]
    assert len(rows) == 9 and report.pages_scored == 8


def test_cli_option_and_manifest_setting(hanging_archive, tmp_path):
    db = tmp_path / "m.sqlite"
    run = subprocess.run([sys.executable, "-m", "curation", "ingest", str(hanging_archive / "hang.pdf"), "--db", str(db),
                          "-q", "--page-timeout", "1.5"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    # Its only page hung, so the document gave no page either: "1 document and 1 page failed (...)".
    assert "1 page failed (1 over the 1.5 s time limit)" in run.stdout and "Traceback" not in run.stderr
    listing = subprocess.run([sys.executable, "-m", "curation", "docs", "--db", str(db), "--format", "csv"],
                             cwd=ROOT, capture_output=True, text=True)
    assert "took longer than 1.5 s to draw; skipped" in listing.stdout
    with Manifest(db) as manifest:
        assert manifest.page_timeout == 60  # the option is for that run only
    run = subprocess.run([sys.executable, "-m", "curation", "settings", "--db", str(db), "--page-timeout", "30"],
                         cwd=ROOT, capture_output=True, text=True)
    assert "page_timeout: 30 s" in run.stdout
    with Manifest(db) as manifest:
        assert manifest.page_timeout == 30


def test_rescore_skips_a_hanging_page_too(manifest, hanging_archive):
    ingest(manifest, [hanging_archive / "mixed.pdf"], workers=1, page_timeout=LIMIT)
    report = Rescore(manifest, all_pages=True, workers=2, page_timeout=LIMIT).run()
    assert report.pages_scored == 4 and report.pages_failed == 1


def test_export_leaves_out_a_page_it_cannot_draw_in_time_and_lists_it(manifest, hanging_archive, tmp_path):
    ingest(manifest, [hanging_archive / "mixed.pdf"], workers=1, page_timeout=LIMIT)
    doc_id = manifest.documents()[0]["id"]
    # As if the page had drawn at ingest (a faster machine): kept, so the export has to draw it.
    manifest.conn.execute("UPDATE pages SET status = 'ok', sigma = 80, error = NULL WHERE page = 2")
    for page in range(5):
        manifest.set_override(doc_id, page, True)
    report = Export(manifest, tmp_path / "lora.zip", ExportSettings(size=128), workers=2, page_timeout=LIMIT).run()
    assert report.images == 4
    assert report.skipped == [{"document": str(hanging_archive / "mixed.pdf"), "page": 3,  # page 3 as a person counts (index 2)
                               "reason": f"took longer than {LIMIT:g} s to draw; skipped"}]
    with zipfile.ZipFile(tmp_path / "lora.zip") as zipped:
        listed = json.loads(zipped.read("export.json"))
    assert "took longer than" in json.dumps(listed)


def test_in_order_gives_up_a_late_task_and_keeps_the_order():
    results = list(in_order(crashing.sleep_on_3, range(7), workers=2, page_timeout=1.0))
    assert [task for task, _ in results] == list(range(7))
    assert [r for task, r in results if task != 3] == [0, 10, 20, 40, 50, 60]
    assert results[3][1] == NotExported("took longer than 1 s to draw; skipped")


def test_a_pool_whose_worker_died_mid_result_is_still_torn_down():
    """A worker killed while sending its result leaves half a message in the pool's result pipe; stopping the run
    must not wait for the rest (a stopped export then hung with its job still "running")."""
    pool = process_pool(1)
    assert pool.submit(abs, -1).result() == 1
    writer = pool._result_queue._writer
    os.write(writer.fileno(), struct.pack("!i", 1 << 20) + b"half")  # a header promising 1 MB, then 4 bytes
    torn_down = threading.Event()
    threading.Thread(target=lambda: (kill_executor(pool), torn_down.set()), daemon=True).start()
    if not torn_down.wait(30):
        os.write(writer.fileno(), bytes(1 << 20))  # let the pool's thread finish before this process exits
        pytest.fail("stopping the pool waited for the rest of a dead worker's result")
