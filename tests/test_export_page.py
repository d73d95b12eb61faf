"""The Export page: options, a preview as exported, the count and size, the export in its own process,
then the download; problems as messages, never tracebacks."""

import time
import zipfile

import pytest
from streamlit.testing.v1 import AppTest

from curation import Manifest

from apptest_support import shown
from conftest import ROOT
from test_export_cli import grouped_manifest, record_scores, repeated_scan_pdf

PAGE = str(ROOT / "pages" / "export.py")


@pytest.fixture
def db(tmp_path, monkeypatch):
    pdf = repeated_scan_pdf(tmp_path / "issue.pdf", 6)
    db = tmp_path / "data" / "manifest.sqlite"
    with Manifest(db) as m:
        record_scores(m, pdf, [60, 20, 70, 80, 10, 90])  # four kept at 45
    monkeypatch.setenv("CURATION_DB", str(db))
    return db


def page() -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.run()
    assert not at.exception, at.exception
    return at


def texts(elements) -> list[str]:
    return [str(e.value) for e in elements]


def test_shows_the_count_the_size_and_a_preview_as_exported(db):
    at = page()
    metrics = {m.label: m.value for m in at.metric}
    # The size is estimated a moment after the page is drawn (encoding images besides the preview's): it says so.
    assert metrics["Images"] == "4" and metrics["Estimated size"] == "estimating…"
    at.run()  # the run the page asks for once drawn
    assert not at.exception, at.exception
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Images"] == "4" and metrics["Estimated size"].endswith("MB")
    captions = [image.proto.imgs[0].caption for image in at.get("image")]
    assert len(captions) == 4 and all(c.startswith("1024×1024") for c in captions)
    assert texts(at.code)[:4] == ["ohwx, engraving"] * 4
    assert at.button[0].label == "Export 4 images"

    at.radio(key="export_shape").set_value("SDXL buckets").run()
    assert all(image.proto.imgs[0].caption.startswith("896×1152") for image in at.get("image"))
    at.text_input(key="export_trigger").set_value("bzr1890").run()
    assert texts(at.code)[0] == "bzr1890, engraving"


def test_the_first_open_draws_the_options_and_figures_before_the_previews_images(db):
    """The preview's images, each cut and shaped as exported, are made once the page is drawn (a first open
    waits for none of them), which says so meanwhile; later screens and settings are made in their own run."""
    at = page()
    assert {m.label: m.value for m in at.metric}["Images"] == "4"
    assert not at.get("image") and any("Preparing the preview" in i.value for i in at.info)
    at.run()  # the run the page asks for once drawn
    assert len(at.get("image")) == 4 and not [i for i in at.info if "Preparing the preview" in i.value]
    at.radio(key="export_shape").set_value("SDXL buckets").run()
    captions = [image.proto.imgs[0].caption for image in at.get("image")]
    assert len(captions) == 4 and all(c.startswith("896×1152") for c in captions)


def test_settings_that_cannot_work_are_an_error_message(db):
    at = page()
    at.text_input(key="export_template").set_value("{caption} {oops}").run()
    assert not at.exception
    assert any("unknown placeholder {oops}" in shown(e) for e in texts(at.error))
    assert not [b for b in at.button if b.label.startswith("Export")]


def test_export_runs_in_its_own_process_then_offers_the_download(db):
    at = page()
    at.button[0].click().run()
    assert not at.exception and not at.error
    deadline = time.monotonic() + 90
    with Manifest(db) as m:
        while m.latest_job("export")["status"] == "running" and time.monotonic() < deadline:
            time.sleep(0.2)
        job = m.latest_job("export")
    assert job["status"] == "done", job["message"]
    at.run()
    assert not at.exception
    assert any("Export finished" in s for s in texts(at.success))
    download = at.get("download_button")[0]
    assert shown(download.proto.label).startswith("Download lora.zip")
    out = db.parent / "exports" / "lora.zip"
    with zipfile.ZipFile(out) as z:
        assert sum(n.endswith(".jpg") for n in z.namelist()) == 4


def test_nothing_kept_says_what_to_do(db):
    with Manifest(db) as m:
        m.threshold = 95
    at = page()
    assert any("nothing to export" in i for i in texts(at.info))


def test_no_manifest_yet_is_a_message(tmp_path, monkeypatch):
    monkeypatch.setenv("CURATION_DB", str(tmp_path / "none.sqlite"))
    at = page()
    assert any("no manifest" in i for i in texts(at.info))
    assert not (tmp_path / "none.sqlite").exists()


def test_a_running_export_shows_live_progress_and_can_be_stopped(tmp_path, monkeypatch):
    pdf = repeated_scan_pdf(tmp_path / "long.pdf", 80)
    db = tmp_path / "data" / "manifest.sqlite"
    with Manifest(db) as m:
        record_scores(m, pdf, [90.0] * 80)
    monkeypatch.setenv("CURATION_DB", str(db))
    at = page()
    at.number_input(key="export_size").set_value(2048).run()  # slow enough to catch it running
    at.button[0].click().run()
    assert not at.exception and not at.error
    progress = at.get("progress")
    assert progress and "Exporting lora.zip" in shown(progress[0].proto.text)
    stop = next(b for b in at.button if b.label == "Stop")
    stop.click().run()
    with Manifest(db) as m:
        deadline = time.monotonic() + 180  # a loaded machine starts the workers slowly
        while m.latest_job("export")["status"] == "running" and time.monotonic() < deadline:
            time.sleep(0.2)
        assert m.latest_job("export")["status"] == "stopped"
    at.run()
    assert any("Export stopped" in i for i in texts(at.info))
    assert not list((db.parent / "exports").glob("*lora*"))  # neither the ZIP nor a temporary file


@pytest.fixture
def grouped(tmp_path, monkeypatch):
    """Four kept pages, three of them near-duplicates of one another, two with a picture box."""
    db = grouped_manifest(tmp_path, tmp_path / "data" / "manifest.sqlite")
    monkeypatch.setenv("CURATION_DB", str(db))
    return db


def test_shows_the_near_duplicates_left_out_and_can_keep_them(grouped):
    at = page()
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Images"] == "2" and metrics["Near-duplicates left out"] == "2"
    assert at.button[0].label == "Export 2 images"
    assert any("--duplicates one" in text for text in texts(at.code))
    at.checkbox(key="export_one_per_group").uncheck().run()
    assert not at.exception
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Images"] == "4" and metrics["Near-duplicates kept"] == "2"
    assert at.button[0].label == "Export 4 images"
    assert any("--duplicates all" in text for text in texts(at.code))


def test_the_crop_to_the_picture_is_previewed(grouped):
    at = page()
    at.radio(key="export_shape").set_value("SDXL buckets").run()
    assert all(image.proto.imgs[0].caption.startswith("896×1152") for image in at.get("image"))
    at.radio(key="export_crop").set_value("The picture only").run()
    assert not at.exception
    captions = [image.proto.imgs[0].caption for image in at.get("image")]
    cut = [c for c in captions if "cut to the picture" in c]
    assert len(cut) == 1 and cut[0].startswith("1216×832")  # the landscape plate (362 x 240), its own bucket
    assert any("--crop picture" in text for text in texts(at.code))


def test_a_control_character_in_the_trigger_is_refused_with_the_reason(db):
    at = page()
    at.text_input(key="export_trigger").set_value("ohwx\x7f").run()
    assert not at.exception
    assert any("trigger word must not hold control characters" in shown(e) and "U+007F" in shown(e)
               for e in texts(at.error))
    assert not [b for b in at.button if b.label.startswith("Export")]


def test_the_selection_kept_between_runs_follows_every_change_to_the_manifest(db):
    """Export keeps its selection between script runs (listing 100,000 pictures takes a second), never past a
    change: a curator's decision, the cutoff, a rescored page."""
    at = page()
    assert {m.label: m.value for m in at.metric}["Images"] == "4"
    with Manifest(db) as m:
        doc_id = m.conn.execute("SELECT id FROM documents").fetchone()[0]
        m.set_override(doc_id, 1, True)  # scored 20: kept by the curator
    at.run()
    assert {m.label: m.value for m in at.metric}["Images"] == "5"
    with Manifest(db) as m:
        m.threshold = 75.0  # keeps 80 and 90, and the page included
    at.run()
    assert {m.label: m.value for m in at.metric}["Images"] == "3"
    with Manifest(db) as m:  # a scoring moves a page over the cutoff, as a rescore's job writes it
        m.conn.execute("UPDATE pages SET sigma = 95 WHERE doc_id = ? AND page = 0", (doc_id,))
    at.run()
    assert {m.label: m.value for m in at.metric}["Images"] == "4"


def test_an_estimate_that_fails_is_a_message(db, monkeypatch):
    import curation.export

    at = page()
    assert {m.label: m.value for m in at.metric}["Estimated size"] == "estimating…"

    def broken(*args, **kwargs):
        raise RuntimeError("the sample could not be encoded")

    monkeypatch.setattr(curation.export, "estimate_export", broken)
    at.run()
    assert not at.exception
    assert any("the sample could not be encoded" in shown(e) for e in texts(at.error))


def test_a_large_manifest_is_listed_after_the_page_is_drawn_which_says_so(db, monkeypatch):
    """Past QUICK_ROWS pages and pictures, listing what the export takes is a second or more: the first open
    draws the options and says what it waits for, and the figures follow in the run it asks for. A selection
    listed before is drawn at once in any session, until the manifest changes."""
    import curation.export
    from curation.export import selection

    listed = curation.export.select

    def slowly(*args, **kwargs):  # as at 100,000 pictures: the first run is over before the listing
        time.sleep(0.5)
        return listed(*args, **kwargs)

    monkeypatch.setattr(selection, "QUICK_ROWS", 0)
    monkeypatch.setattr(curation.export, "select", slowly)
    at = page()
    assert not at.metric and at.radio(key="export_layout").value == "kohya"
    assert any("Listing the pictures the export takes" in shown(e) for e in texts(at.info))
    assert not [b for b in at.button if b.label.startswith("Export")]
    at.run()  # the run the page asks for once drawn
    assert not at.exception, at.exception
    assert {m.label: m.value for m in at.metric}["Images"] == "4"
    assert not any("Listing the pictures" in shown(e) for e in texts(at.info))

    assert {m.label: m.value for m in page().metric}["Images"] == "4"  # a new session: listed already
    with Manifest(db) as m:
        doc_id = m.conn.execute("SELECT id FROM documents").fetchone()[0]
        m.set_override(doc_id, 1, True)
    at = page()
    assert not at.metric and any("Listing the pictures" in shown(e) for e in texts(at.info))
    at.run()
    assert {m.label: m.value for m in at.metric}["Images"] == "5"
