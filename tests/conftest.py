"""Fixtures are generated here, small enough to keep the suite fast: 3x4 inch pages at 150-200 dpi."""

import contextlib
import os
import pathlib
import sqlite3
import sys
import time

import cv2
import numpy as np
import psutil
import pytest
from PIL import Image

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from curation import Manifest  # noqa: E402
from guards import lifeline  # noqa: E402
from curation.sources.synthetic import PageSpec, periodical_specs, write_pdf  # noqa: E402

SMALL = (3.0, 4.0)
LEFT_BEHIND_GRACE = 10.0  # seconds the session's processes get to end once its tests and fixtures are done


@pytest.fixture(autouse=True, scope="session")
def _no_process_left_behind():
    """The suite leaves no process behind: set up first, torn down last, this fails the session (each xdist worker
    is one) if a process it started, however deep, still runs after a short grace; each is killed and named.
    Orphans (a killed job's workers) come back to this process as to a subreaper on Linux, so they are seen too."""
    lifeline.become_subreaper()
    yield
    _end_multiprocessing_helpers()
    survivors = _descendants_after(LEFT_BEHIND_GRACE)
    described = [_described(process) for process in survivors]
    for process in survivors:
        with contextlib.suppress(psutil.Error):
            process.kill()
    _descendants_after(5.0)  # reaped
    if survivors:
        pytest.fail("processes left behind by the tests (killed): " + "; ".join(described))


def _end_multiprocessing_helpers() -> None:
    """This process keeps its forkserver and resource tracker for the next pool, until it exits; they end once
    their pipes close, so close them now (private names: there is no public way before Python 3.14)."""
    from multiprocessing import forkserver, resource_tracker

    server, tracker = forkserver._forkserver, resource_tracker._resource_tracker
    if server._forkserver_alive_fd is not None:
        os.close(server._forkserver_alive_fd)
        server._forkserver_alive_fd = server._forkserver_pid = server._forkserver_address = None
    if tracker._fd is not None:
        os.close(tracker._fd)
        tracker._fd = tracker._pid = None


def _descendants_after(grace: float) -> list:
    """The processes under this one still running after up to `grace` seconds; the ended ones reaped."""
    deadline = time.monotonic() + grace
    while True:
        running = []
        for process in psutil.Process().children(recursive=True):
            with contextlib.suppress(psutil.Error):
                if process.status() != psutil.STATUS_ZOMBIE:
                    running.append(process)
                elif process.ppid() == os.getpid():
                    with contextlib.suppress(ChildProcessError):
                        os.waitpid(process.pid, os.WNOHANG)
        if not running or time.monotonic() > deadline:
            return running
        time.sleep(0.1)


def _described(process: psutil.Process) -> str:
    with contextlib.suppress(psutil.Error):
        return f"pid {process.pid}: {' '.join(process.cmdline())[:160]}"
    return f"pid {process.pid}"


@pytest.fixture(autouse=True)
def _main_module_restored():
    """AppTest runs a script as __main__ and can leave it there; a process pool started later (ingest's
    workers) would then run that script in every worker as it starts. Each test gets the real one back."""
    main = sys.modules["__main__"]
    yield
    sys.modules["__main__"] = main


@pytest.fixture(autouse=True)
def _picture_job_off(monkeypatch):
    """Ingest is followed by the picture job, whose network takes seconds to load in each ingest process:
    off unless a test asks for it (tests/test_picture_job.py sets it on)."""
    monkeypatch.setenv("CURATION_PICTURE_JOB", "off")


@pytest.fixture(autouse=True, scope="module")
def _picture_network_released():
    """The picture embedding's network is kept per process once loaded (a test that embeds, a picture job run
    in the test's process); let it go after each test file, as the vet scanner's and the captioner's tests
    count the models alive in the process they share."""
    yield
    embedding = sys.modules.get("curation.pictures.embedding")
    if embedding is not None and embedding._backbone is not None:
        import gc

        embedding.release()
        gc.collect()


def small_specs(pages: int, seed: int = 0, dpi: int = 150):
    return list(periodical_specs(pages, seed=seed, dpi=dpi, inches=SMALL))


def small_pdf(path, pages: int = 4, seed: int = 0, dpi: int = 150) -> pathlib.Path:
    return write_pdf(path, small_specs(pages, seed, dpi))


@pytest.fixture
def archive(tmp_path):
    """A folder with three small periodical PDFs (4, 5 and 6 pages)."""
    folder = tmp_path / "archive"
    for n, pages in enumerate((4, 5, 6)):
        small_pdf(folder / f"issue-{n}.pdf", pages=pages, seed=n)
    return folder


@pytest.fixture
def manifest(tmp_path):
    with Manifest(tmp_path / "manifest.sqlite") as m:
        yield m


@contextlib.contextmanager
def manifest_copy(template: pathlib.Path, folder: pathlib.Path):
    """A copy of `template` (a manifest ingested once per module) in `folder`, open: each test changes its own.
    Copied by SQLite: what a connection left open still holds in the write-ahead log is copied too."""
    with contextlib.closing(sqlite3.connect(template)) as source, contextlib.closing(
            sqlite3.connect(folder / "manifest.sqlite")) as target:
        source.backup(target)
    with Manifest(folder / "manifest.sqlite") as m:
        yield m


@pytest.fixture
def page_spec():
    return PageSpec(kind="engraving", seed=1, dpi=150, inches=SMALL)


@pytest.fixture(scope="module")
def demo_model(tmp_path_factory):
    """The untrained demo classifier, written once per test module."""
    import inference  # torch only for the tests that use it

    return inference.write_demo_model(tmp_path_factory.mktemp("models") / "demo-vit")


def make_photo(seed=0, size=(240, 320)):
    pixels = np.random.default_rng(seed).integers(0, 256, (*size, 3), dtype=np.uint8)
    return Image.fromarray(pixels)


@pytest.fixture
def models(tmp_path, monkeypatch):
    """An empty models folder that the Vet scanner page and `inference models` look in."""
    folder = tmp_path / "models"
    folder.mkdir()
    monkeypatch.setenv("VET_MODELS_DIR", str(folder))
    return folder


REALDATA = ROOT.parent / "shared" / "realdata"
REALDATA_CATTLE = REALDATA / "cattle"


@pytest.fixture(scope="session")
def lite0_model(tmp_path_factory):
    """The real ImageNet EfficientNet-Lite0, built from its wheel once per test session."""
    import inference

    return inference.install_model("imagenet-lite0", tmp_path_factory.mktemp("models") / "imagenet-lite0")


@pytest.fixture
def cattle_photos():
    """The shared real photos (cow, calf, bison, drawings; sheep, horse, pig, dog)."""
    if not REALDATA_CATTLE.is_dir():
        pytest.skip(f"real photos not available: {REALDATA_CATTLE} is absent")
    return REALDATA_CATTLE


@pytest.fixture
def real_scans():
    """The shared real page scans (newspapers, books, plates; JPEG files)."""
    pages = sorted((REALDATA / "pages").glob("*.jpg"))
    if not pages:
        pytest.skip(f"real scans not available: {REALDATA / 'pages'} is absent")
    return pages


def make_tinted_photo(tint, seed=0, size=(96, 128)):
    """Noise over a strong colour cast: two tints make two classes a head can learn."""
    noise = np.random.default_rng(seed).integers(0, 96, (*size, 3))
    return Image.fromarray(np.clip(noise + np.array(tint), 0, 255).astype(np.uint8))


def write_training_photos(folder, per_class=5, classes=None):
    """photos/<class>/<n>.jpg, generated: the layout `inference train` reads."""
    classes = classes or {"healthy": (150, 40, 20), "lumpy skin": (20, 60, 150)}
    for offset, (name, tint) in enumerate(classes.items()):
        (folder / name).mkdir(parents=True, exist_ok=True)
        for n in range(per_class):
            make_tinted_photo(tint, seed=100 * offset + n).save(folder / name / f"{n}.jpg")
    return folder


def line_drawing(side: int, rng) -> np.ndarray:
    """Pen-and-ink line art: curved outlines and open hatching whose strokes never close into solid areas."""
    art = np.full((side, side), 255, np.uint8)
    thick = max(1, side // 300)

    def stroke(x0, y0, x1, y1, bend):  # a pen line is never ruled straight
        t = np.linspace(0, 1, 40)
        x = x0 + (x1 - x0) * t - bend * side * np.sin(np.pi * t) * (y1 - y0) / side
        y = y0 + (y1 - y0) * t + bend * side * np.sin(np.pi * t) * (x1 - x0) / side
        cv2.polylines(art, [np.stack([x, y], 1).astype(np.int32)], False, 0, thick)

    cv2.ellipse(art, (side // 2, side // 4), (side // 7, side // 6), 0, 0, 360, 0, thick)  # a head
    stroke(side // 2, side * 5 // 12, side // 2, side * 3 // 4, 0.05)  # a body, arms and legs
    stroke(side // 5, side // 2, side * 4 // 5, side // 2, 0.08)
    stroke(side // 2, side * 3 // 4, side // 3, side - side // 20, 0.05)
    stroke(side // 2, side * 3 // 4, side * 2 // 3, side - side // 20, -0.05)
    step = side // 25  # hatching spaced wider than the strokes: open, never solid
    for x in range(side // 10, side * 9 // 10, step):
        y = int(rng.integers(side // 2, side * 2 // 3))
        stroke(x, y, x + step, y + side // 4, 0.03)
    return art
