"""Uploads are bounded on the server: size per file, size of all a session holds, number of files (the
browser's own limit is only advice), and pixels decoded: a photo is refused from its header when it would
decode to too many pixels, decoded reduced to what the model needs, and only while it holds the model slot."""

import io
import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from PIL import Image

import inference
from curation.sources import paths
from guards.uploads import MB, UploadLimits  # MB as Streamlit counts it: 2**20 bytes
from inference import images
from pages.components import common

from apptest_support import ROOT, page, ran
from test_inference_bad_input import png_bomb
from test_vet_scanner_page import jpeg, open_page, texts


class Unread(io.BytesIO):
    """An upload as Streamlit hands it over (its size known), which fails the test if anything reads it."""

    def __init__(self, name, size):
        super().__init__()
        self.name, self.size, self.file_id = name, size, name

    def read(self, *args):
        raise AssertionError(f"{self.name} was read")

    readinto = read


def test_limits_refuse_by_size_count_and_total_without_reading():
    limits = UploadLimits(file_bytes=50 * MB, session_bytes=100 * MB, files=3, noun="photo")
    uploads = [Unread("huge.jpg", 120 * MB), Unread("a.jpg", 40 * MB), Unread("b.jpg", 40 * MB),
               Unread("c.jpg", 40 * MB), Unread("d.jpg", 1 * MB), Unread("e.jpg", 1 * MB)]
    kept, refused = limits.sort(uploads)
    assert [u.name for u in kept] == ["a.jpg", "b.jpg", "d.jpg"]
    reasons = dict((u.name, why) for u, why in refused)
    assert "120 MB is over the limit of 50 MB per photo" in reasons["huge.jpg"]
    assert "would pass the limit of 100 MB" in reasons["c.jpg"]
    assert "at most 3 photos at a time" in reasons["e.jpg"]
    assert all("was not read" in why for why in reasons.values())


def test_limits_are_server_settings_shown_in_words(monkeypatch):
    monkeypatch.setenv("VET_UPLOAD_MAX_FILE_MB", "5")
    monkeypatch.setenv("VET_UPLOAD_MAX_FILES", "2")
    limits = UploadLimits.from_env("VET_UPLOAD", file_mb=50, session_mb=200, files=20, noun="photo")
    assert (limits.file_bytes, limits.session_bytes, limits.files) == (5 * MB, 200 * MB, 2)
    assert limits.help() == "Server limits: up to 2 photos at a time, 5.0 MB each, 200 MB in all."


def held_uploads_script():
    import streamlit as st
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    from guards.uploads import UploadLimits
    from pages.components import common

    uploads = st.file_uploader("Files", accept_multiple_files=True)
    common.within_upload_limits(uploads, UploadLimits(file_bytes=10, session_bytes=100, files=5))
    context = get_script_run_ctx()
    held = context.uploaded_file_mgr.get_files(context.session_id, [u.file_id for u in uploads or []])
    st.text("held: " + ", ".join(sorted(f.name for f in held)))


def test_a_refused_upload_is_dropped_from_the_servers_memory():
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_function(held_uploads_script)
    at.run()
    at.file_uploader[0].set_value([("small", b"12345", "application/octet-stream"),
                                   ("big", b"0" * 50, "application/octet-stream")]).run()
    assert "big: " in texts(at.error) and "per file; it was not read" in texts(at.error)
    assert at.text[0].value == "held: small"  # Streamlit no longer holds the refused file's bytes


# The Vet scanner's uploader --------------------------------------------------------------------------


@pytest.fixture
def vet_page(models, monkeypatch):
    inference.write_demo_model(models / "demo-vit")
    calls = []
    real_classify = inference.classify
    monkeypatch.setattr(inference, "classify",
                        lambda photo, *a, **k: calls.append(photo.name) or real_classify(photo, *a, **k))
    return open_page(), calls


def test_an_oversized_photo_is_refused_by_the_server(vet_page):
    app, calls = vet_page
    too_big = images.UPLOAD_LIMITS.file_bytes + 1
    app.file_uploader[0].set_value([("cow.jpg", jpeg(), "image/jpeg"),
                                    ("huge.jpg", b"\xff\xd8\xff" + bytes(too_big - 3), "image/jpeg")]).run()
    assert not app.exception
    assert "huge.jpg" in texts(app.error) and "over the limit of 50 MB per photo" in texts(app.error)
    assert calls == ["cow.jpg"]  # the refused one never reached the scanner


def test_the_uploader_states_the_limits(vet_page):
    app, _ = vet_page
    assert "up to 20 photos at a time, 50 MB each, 200 MB in all" in app.file_uploader[0].help
    assert "40,000,000 pixels" in app.file_uploader[0].help


def test_a_photo_of_too_many_pixels_is_refused_from_its_header(vet_page):
    app, _ = vet_page
    bomb = png_bomb(9_400, 9_400)
    assert len(bomb) < 50_000
    app.file_uploader[0].set_value([("huge.png", bomb, "image/png")]).run()
    assert not app.exception
    assert "9400×9400 pixels are more than this server decodes" in texts(app.error)


# The Ingest page's PDF uploader --------------------------------------------------------------------


def test_the_ingest_page_refuses_uploads_past_its_limits(tmp_path, monkeypatch):
    monkeypatch.setenv("CURATION_DB", str(tmp_path / "data" / "manifest.sqlite"))
    monkeypatch.setattr(paths, "UPLOAD_LIMITS",
                        UploadLimits(file_bytes=2_000, session_bytes=10_000, files=2, noun="PDF"))
    at = ran(page("pages/ingest.py"))
    assert "up to 2 PDFs at a time" in at.file_uploader[0].help
    pdf = b"%PDF-1.4\n" + b"0" * 500
    at.file_uploader[0].set_value([("big.pdf", pdf + b"0" * 2_000, "application/pdf"),
                                   *((name, pdf, "application/pdf") for name in ("a.pdf", "b.pdf", "c.pdf"))])
    ran(at)
    errors = " ".join(e.value for e in at.error)
    assert "big.pdf" in errors and "over the limit" in errors and "c.pdf: at most 2 PDFs" in errors
    assert "2 file(s) chosen" in " ".join(m.value for m in at.markdown)
    assert not [b for b in at.button if b.label.startswith("Save")]  # Start takes the chosen files
    monkeypatch.setattr(common, "launch_and_wait", lambda kind, launch: None)  # no ingest process here
    [start] = [b for b in at.button if b.label == "Start"]
    assert not start.disabled
    start.click()
    ran(at)
    saved = paths.uploads_dir(tmp_path / "data" / "manifest.sqlite").glob("*.pdf")
    assert sorted(p.name for p in saved) == ["a.pdf", "b.pdf"]


# Pixels decoded ---------------------------------------------------------------------------------------

PEAK_SCRIPT = textwrap.dedent("""
    import json, resource, sys
    from inference import images
    from inference.errors import BadImageError
    data = open(sys.argv[1], "rb").read()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    try:
        size, error = images.open_image(data).size, None
    except BadImageError as exc:
        size, error = None, str(exc)
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    print(json.dumps({"size": size, "error": error, "grown_mib": grown / 1024}))
""")


def decode_in_a_fresh_process(tmp_path, data):
    """What open_image makes of `data`, and how much its process's peak memory grew meanwhile."""
    photo = tmp_path / "photo"
    photo.write_bytes(data)
    out = subprocess.run([sys.executable, "-c", PEAK_SCRIPT, str(photo)], cwd=ROOT, capture_output=True,
                         text=True, timeout=120, check=True).stdout
    return json.loads(out)


def test_a_png_declaring_9400_squared_pixels_is_refused_with_memory_flat(tmp_path):
    outcome = decode_in_a_fresh_process(tmp_path, png_bomb(9_400, 9_400))  # 88 M pixels in ~10 kB
    assert "9400×9400 pixels are more than this server decodes" in outcome["error"]
    assert outcome["grown_mib"] < 30  # decoding it would take 88 MiB, and 265 MiB as RGB


def test_a_big_jpeg_is_decoded_reduced(tmp_path):
    pixels = np.random.default_rng(0).integers(0, 256, (6_000 // 8, 6_000 // 8, 3), dtype=np.uint8)
    big = Image.fromarray(pixels).resize((6_000, 6_000), Image.NEAREST)  # 36 M pixels, 108 MB as RGB
    buffer = io.BytesIO()
    big.save(buffer, "JPEG", quality=80)
    del big
    outcome = decode_in_a_fresh_process(tmp_path, buffer.getvalue())
    assert outcome["error"] is None
    assert images.MODEL_SIDE <= min(outcome["size"]) < 2 * images.MODEL_SIDE
    assert outcome["grown_mib"] < 40  # an eighth of each side: about 1.7 MB of pixels, not 108 MB


def test_a_photo_is_decoded_only_while_its_request_holds_the_model_slot(demo_model, monkeypatch):
    held = []
    real_open = images.open_image

    def recording_open(*args, **kwargs):
        held.append(inference.queue_status()["busy"])
        return real_open(*args, **kwargs)

    monkeypatch.setattr(sys.modules["inference.classify"], "open_image", recording_open)  # the module, not the function
    inference.classify(jpeg(), demo_model, top_k=1)
    assert held == [True]


def test_the_uploaders_say_the_limits_the_readme_says(tmp_path, monkeypatch):
    """Streamlit counts a megabyte as 2**20 bytes (server.maxUploadSize); so do the limits, so the uploader's
    "Limit 200MB per file" is the README's 200 MB, not 191."""
    monkeypatch.setenv("CURATION_DB", str(tmp_path / "data" / "manifest.sqlite"))
    at = ran(page("pages/ingest.py"))
    assert at.file_uploader[0].proto.max_upload_size_mb == 200
    assert "200 MB each, 500 MB in all" in at.file_uploader[0].help
    assert paths.UPLOAD_LIMITS.file_bytes == 200 * 2**20
