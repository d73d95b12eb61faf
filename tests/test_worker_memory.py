"""Each worker has a memory limit: a page that needs more fails with a message, the run goes on, and the
coordinator is never at risk. Decompression bombs give a message in the export and the vet scanner."""

import io
import re
import resource
import subprocess
import sys

import numpy as np
import pymupdf
import pytest
from PIL import Image

import crashing
from conftest import ROOT, small_pdf
from curation import ingest
from curation.cli import Size
from curation.export import ExportSettings, export_page
from curation.runs.worker_pool import process_pool
from curation.sources import hostile

GIB = 1 << 30


def giant_page_pdf(path):
    """A 97 x 97 inch page: drawn at 144 dpi without the scorer's cap it needs 590 MB at once."""
    doc = pymupdf.open()
    page = doc.new_page(width=7000, height=7000)
    page.draw_rect(page.rect, fill=(0.5, 0.5, 0.5))
    doc.save(path)
    return path


def test_a_page_past_the_worker_limit_fails_with_a_message_and_the_rest_is_scored(manifest, tmp_path):
    folder = tmp_path / "archive"
    small_pdf(folder / "good.pdf", pages=3)
    giant_page_pdf(folder / "giant.pdf")
    report = ingest(manifest, [folder], workers=2, worker_memory=GIB, page_timeout=60,
                    task_fn=crashing.run_task_without_render_cap)
    rows = {r["doc"].rsplit("/", 1)[1]: r for r in manifest.pages() if r["status"] == "failed"}
    assert list(rows) == ["giant.pdf"]
    # 1 GB, or a little more where the worker's libraries already take most of that (see MIN_WORKER_ROOM)
    assert re.fullmatch(r"needed more memory than a worker may take \(1\.\d GB; --worker-memory\); skipped",
                        rows["giant.pdf"]["error"])
    assert report.pages_scored == 3 and report.crashes == 0


def limit_of_this_worker(_):
    return resource.getrlimit(resource.RLIMIT_AS)[0]


def test_workers_get_the_limit_and_the_coordinator_does_not():
    with process_pool(1, memory_limit=3 * GIB) as pool:
        assert pool.submit(limit_of_this_worker, None).result() == 3 * GIB
    assert resource.getrlimit(resource.RLIMIT_AS)[0] == resource.RLIM_INFINITY


@pytest.mark.parametrize("text, size", [("2G", 2 * GIB), ("1500M", 1500 << 20), ("800mb", 800 << 20), ("1024", GIB)])
def test_worker_memory_sizes(text, size):
    assert Size().convert(text, None, None) == size


def test_the_cli_refuses_a_size_it_cannot_read(tmp_path):
    run = subprocess.run([sys.executable, "-m", "curation", "ingest", str(tmp_path), "--worker-memory", "lots",
                          "--db", str(tmp_path / "m.sqlite")], cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 2 and "'lots' is not a size" in run.stderr


def test_hostile_pages_are_measured_within_bounds(manifest, tmp_path):
    """A 500 MB content stream in 500 KB and a 24000 x 24000 image: read reduced, never whole."""
    folder = tmp_path / "bombs"
    folder.mkdir()
    (folder / "content-bomb.pdf").write_bytes(hostile.content_bomb(500))
    (folder / "giant-image.pdf").write_bytes(hostile.giant_image(24000))
    report = ingest(manifest, [folder], workers=1, worker_memory=2 * GIB, page_timeout=60)
    assert report.pages_scored == 2 and report.pages_failed == 0


def big_jpeg_scan_pdf(path, side=13500):
    """A page whose scan is a JPEG past Pillow's decompression-bomb error (182 megapixels)."""
    pixels = np.full((side, side), 200, np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, "JPEG", quality=50)
    doc = pymupdf.open()
    page = doc.new_page(width=216, height=216)
    page.insert_image(page.rect, stream=buffer.getvalue())
    doc.save(path)
    return pymupdf.open(path)


def test_export_reads_a_scan_over_pillows_bomb_limit_reduced_by_mupdf(tmp_path):
    doc = big_jpeg_scan_pdf(tmp_path / "big.pdf")
    image = export_page(doc, 0, ExportSettings(size=256))
    assert (image.width, image.height, image.method) == (256, 256, "render")


def test_vet_scanner_refuses_a_bomb_with_a_message():
    from inference.errors import BadImageError
    from inference.images import open_image

    buffer = io.BytesIO()
    Image.fromarray(np.zeros((64, 64, 3), np.uint8)).save(buffer, "JPEG")
    jpeg = bytearray(buffer.getvalue())
    frame = re.search(rb"\xff[\xc0-\xc2]", bytes(jpeg)).start() + 5
    jpeg[frame:frame + 4] = (24000).to_bytes(2, "big") * 2  # declares 24000 x 24000
    with pytest.raises(BadImageError, match="too large.*decompression bombs"):
        open_image(bytes(jpeg), name="cow.jpg")


def test_a_worker_lets_a_page_go_before_it_reads_the_next(tmp_path):
    """A page's analysis (and the page's pixels it holds) is not kept once the page is scored: the next page of a
    newspaper archive is not decoded beside it. Its pictures, boxes and scores are those of a page read alone."""
    from curation.runs.ingest_task import Task, run_task
    from curation.scoring import features

    pdf = small_pdf(tmp_path / "two.pdf", pages=2)
    both = run_task(Task(doc_id=1, path=str(pdf), pages=(0, 1), picture_finder="network"))
    assert features._last is None
    alone = run_task(Task(doc_id=1, path=str(pdf), pages=(1,), picture_finder="network"))
    assert both[1].features == alone[0].features and both[1].sigma == alone[0].sigma


def test_a_worker_reading_no_legend_loads_no_reader_and_no_library_it_does_not_use(tmp_path):
    """A worker (a fresh process, as a pool starts one) that scores pages with the picture finder and reads no
    legend has loaded neither Tesseract nor the recogniser's network, and none of the libraries the dashboard and the
    training use (each tens of MB a worker: torch, onnx, pandas, scipy, Streamlit, Altair)."""
    from curation.pictures import finder

    finder.check_installed()  # the finder's ONNX export, made before the workers start as ingest makes it
    pdf = small_pdf(tmp_path / "two.pdf", pages=2)
    script = f"""
import sys
from curation.captions import recognizer
from curation.runs.ingest_task import Task, run_task
from curation.runs.worker_pool import _init_worker
_init_worker()
results = run_task(Task(doc_id=1, path={str(pdf)!r}, pages=(0, 1), picture_finder="network", embedding_inputs=True))
assert [r.status for r in results] == ["ok", "ok"], results
unused = ("torch", "onnx", "pandas", "pyarrow", "scipy", "sklearn", "streamlit", "altair", "tesserocr")
print([name for name in unused if name in sys.modules], recognizer._network.cache_info().currsize)
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["[]", "0"], done.stdout
