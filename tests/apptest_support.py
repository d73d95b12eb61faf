"""Helpers for the dashboard's AppTest suites: manifests built with the library, pages run in-process."""

import pathlib
import time

import cv2
import numpy as np
from streamlit.testing.v1 import AppTest

from curation import Manifest, sample

ROOT = pathlib.Path(__file__).resolve().parent.parent


def thumbnail(shade: int = 200) -> bytes:
    """A real (tiny) JPEG: st.image has to decode what the manifest holds."""
    gray = np.full((32, 24), shade, np.uint8)
    gray[8:24, 6:18] = 40
    return cv2.imencode(".jpg", gray)[1].tobytes()


def filled_db(db: pathlib.Path, documents: int = 2, pages: int = 30, seed: int = 0, **options) -> pathlib.Path:
    with Manifest(db) as manifest:
        sample.fill_manifest(manifest, documents, pages, seed=seed, thumbnails=[thumbnail(180), thumbnail(90)],
                             **options)
    return db


def page(script: str) -> AppTest:
    return AppTest.from_file(str(ROOT / script), default_timeout=60)


def ran(at: AppTest) -> AppTest:
    """Run (or rerun) the page and fail on any exception element: errors must be messages."""
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def texts(at: AppTest) -> str:
    """Everything a person reads on the page, for assertions that do not care where it is."""
    parts = [e.value for kind in ("markdown", "caption", "info", "success", "warning", "error", "title", "subheader")
             for e in getattr(at, kind)]
    parts += [f"{m.label} {m.value}" for m in at.metric]
    return "\n".join(str(p) for p in parts)


def wait_for(condition, timeout: float = 60.0, interval: float = 0.2):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError("timed out waiting")


def job_finished(db: pathlib.Path, kind: str):
    def finished():
        if not db.exists():
            return None
        with Manifest(db) as manifest:
            job = manifest.latest_job(kind)
            return job if job is not None and job["status"] != "running" else None
    return finished
