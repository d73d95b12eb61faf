"""The caption job: the model's caption for each kept (or every) picture, resumable after a stop,
never replacing the curator's caption; --overwrite redoes the model's captions only."""

import gc
import shutil
import warnings

import psutil
import pytest
from click.testing import CliRunner
from streamlit.testing.v1 import AppTest
from transformers import PreTrainedModel

from curation import Manifest, ingest
from curation.captions.edit import Pictures
from curation.captions.job import CaptionJob, caption_pictures
from curation.cli import cli
from curation.runs import jobs
from curation.sources.synthetic import PageSpec, write_pdf
from inference.loader import queue_status

from apptest_support import ran, signed_in_as, texts, wait_for
from captioner_support import CAPTION, write_tiny_captioner

MODEL = "tiny-florence"  # the folder's name names a model that was not downloaded
# Boxes in reference pixels (144 dpi) on 3 x 4 inch pages (432 x 576): two pictures a page.
BOXES = [(40, 40, 220, 260), (230, 300, 400, 540)]


@pytest.fixture(scope="module")
def tiny_captioner(tmp_path_factory):
    return write_tiny_captioner(tmp_path_factory.mktemp("models") / MODEL)


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    """A manifest of one scored 3-page PDF, each page holding two pictures a curator drew (so the
    pictures do not depend on what the scorer finds)."""
    folder = tmp_path_factory.mktemp("template")
    pdf = write_pdf(folder / "archive" / "issue.pdf",
                    [PageSpec(kind="engraving", seed=n, dpi=100, inches=(3.0, 4.0)) for n in range(3)])
    with Manifest(folder / "manifest.sqlite") as manifest:
        ingest(manifest, [pdf], workers=1, page_timeout=0)
        manifest.conn.execute("DELETE FROM pictures")  # the scorer's, whatever it found
        for page in range(3):
            manifest.set_override(1, page, True)
            for box in BOXES:
                manifest.add_picture(1, page, box)
    return folder


@pytest.fixture
def manifest(template, tmp_path):
    shutil.copytree(template / "archive", tmp_path / "archive")
    (tmp_path / "db").mkdir()  # beside the archive, not above it: its folder is an allowed one
    shutil.copy(template / "manifest.sqlite", tmp_path / "db" / "manifest.sqlite")
    with Manifest(tmp_path / "db" / "manifest.sqlite") as m:
        m.conn.execute("UPDATE documents SET path = ?", (str(tmp_path / "archive" / "issue.pdf"),))
        yield m


def captions(manifest):
    """{picture id: (auto_caption, auto_caption_model, caption)}"""
    return {row["id"]: (row["auto_caption"], row["auto_caption_model"], row["caption"])
            for row in manifest.picture_rows()}


def models_alive():
    gc.collect()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return sum(isinstance(thing, PreTrainedModel) for thing in gc.get_objects())


def test_each_kept_picture_gets_the_models_caption_and_the_model_is_unloaded(manifest, tiny_captioner):
    excluded = next(iter(captions(manifest)))
    manifest.set_picture_override(excluded, False)
    report = caption_pictures(manifest, tiny_captioner)
    found = captions(manifest)
    assert found.pop(excluded) == (None, None, None)
    assert set(found.values()) == {(CAPTION, MODEL, None)} and len(found) == 5
    assert (report.captioned, report.pictures, report.already, report.failed) == (5, 5, 0, [])
    assert report.seconds_per_image > 0 and report.load_seconds > 0
    job = manifest.latest_job("caption")
    assert (job["status"], job["done"], job["total"]) == ("done", 5, 5) and job["rate"] > 0
    assert "s per picture" in job["message"]
    assert models_alive() == 0 and not queue_status()["busy"]


def test_the_job_starts_no_process_so_none_outlives_it(manifest, tiny_captioner):
    """The captioner runs in the job's own process: killed, the job leaves nothing behind (tests/test_process_tree.py
    kills the jobs that have workers)."""
    before = {child.pid for child in psutil.Process().children(recursive=True)}
    started = set()
    on_progress = lambda done, total: started.update(
        child.pid for child in psutil.Process().children(recursive=True) if child.pid not in before)
    report = caption_pictures(manifest, tiny_captioner, batch=1, on_progress=on_progress)
    assert report.captioned == 6 and started == set()


def test_all_takes_the_pictures_that_are_not_kept_too(manifest, tiny_captioner):
    excluded = next(iter(captions(manifest)))
    manifest.set_picture_override(excluded, False)
    report = caption_pictures(manifest, tiny_captioner, pictures=Pictures())
    assert report.captioned == 6 and captions(manifest)[excluded][:2] == (CAPTION, MODEL)


def test_a_stopped_job_resumes_where_it_stopped(manifest, tiny_captioner, monkeypatch):
    monkeypatch.setattr(jobs, "PROGRESS_INTERVAL", 0)  # every batch looks for a stop request
    job = CaptionJob(manifest, tiny_captioner, batch=2,
                     on_progress=lambda done, total: manifest.request_stop(job.job_id))
    first = job.run()
    assert first.stopped and first.captioned == 2
    assert manifest.latest_job("caption")["status"] == "stopped"
    done_first = {pid for pid, (text, _, _) in captions(manifest).items() if text}
    assert len(done_first) == 2

    progress = []
    second = caption_pictures(manifest, tiny_captioner, on_progress=lambda done, total: progress.append(done))
    assert (second.captioned, second.already, second.stopped) == (4, 2, False)
    assert progress[-1] == 6 and progress[0] > 2  # the first run's pictures count as done
    assert all(text == CAPTION for text, _, _ in captions(manifest).values())


def test_the_curators_caption_is_never_replaced(manifest, tiny_captioner):
    ids = list(captions(manifest))
    manifest.set_picture_captions([(ids[0], "A wet day."), (ids[1], "September morn.")])
    caption_pictures(manifest, tiny_captioner)
    caption_pictures(manifest, tiny_captioner, overwrite=True, pictures=Pictures())
    found = captions(manifest)
    assert found[ids[0]] == (CAPTION, MODEL, "A wet day.")
    assert found[ids[1]] == (CAPTION, MODEL, "September morn.")


def test_overwrite_redoes_the_models_captions_and_another_model_is_redone_anyway(manifest, tiny_captioner):
    ids = list(captions(manifest))
    manifest.set_auto_captions([(ids[0], "an earlier caption", MODEL), (ids[1], "another model's", "other/model")])
    report = caption_pictures(manifest, tiny_captioner)
    assert report.already == 1 and captions(manifest)[ids[0]][0] == "an earlier caption"
    assert captions(manifest)[ids[1]][:2] == (CAPTION, MODEL)
    report = caption_pictures(manifest, tiny_captioner, overwrite=True)
    assert report.captioned == 6 and captions(manifest)[ids[0]][0] == CAPTION


def test_a_picture_that_cannot_be_read_is_reported_and_the_others_captioned(manifest, tiny_captioner, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    shutil.move(tmp_path / "archive" / "issue.pdf", outside / "issue.pdf")
    # A link out of the folders the job may read (the manifest's and the documents' own).
    (tmp_path / "archive" / "issue.pdf").symlink_to(outside / "issue.pdf")
    report = caption_pictures(manifest, tiny_captioner)
    assert report.captioned == 0 and len(report.failed) == 6
    assert "outside the allowed folders" in report.failed[0]["reason"]
    assert all(text is None for text, _, _ in captions(manifest).values())


def test_the_cli_captions_with_a_progress_bar_and_says_how_fast(manifest, tiny_captioner):
    result = CliRunner().invoke(cli, ["caption", "--db", str(manifest.path), "--model", str(tiny_captioner), "--all"])
    assert result.exit_code == 0, result.output
    assert f"6 pictures captioned by {MODEL}" in result.output and "s per picture" in result.output
    assert "captioning" in result.output  # the bar


def test_the_cli_without_the_model_offline_says_what_to_run(manifest, tmp_path, monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "ENDPOINT", "http://127.0.0.1:9")
    monkeypatch.setenv("VET_MODELS_DIR", str(tmp_path / "models"))
    monkeypatch.delenv("CAPTIONER_MODEL_DIR", raising=False)
    result = CliRunner().invoke(cli, ["caption", "--db", str(manifest.path)])
    assert result.exit_code == 1
    assert "python -m inference install-captioner" in result.output and result.output.count("\n") == 1
    job = manifest.latest_job("caption")
    assert job["status"] == "failed" and "install-captioner" in job["message"]  # what the app shows


# -- the panel on the Review page -------------------------------------------------------------------

def panel_script():
    from pages.components import common
    from pages.components.caption_job import caption_panel

    with common.open_manifest() as manifest:
        caption_panel(manifest)


@pytest.fixture
def panel(manifest, tmp_path, monkeypatch):
    """The panel over `manifest`, with an empty models folder and no captioner configured."""
    monkeypatch.setenv("CURATION_DB", str(manifest.path))
    monkeypatch.setenv("VET_MODELS_DIR", str(tmp_path / "models"))
    monkeypatch.delenv("CAPTIONER_MODEL_DIR", raising=False)
    return AppTest.from_function(panel_script, default_timeout=60)


def test_the_panel_says_how_to_install_a_missing_model(panel, tmp_path):
    ran(panel)
    said = texts(panel)
    assert "not installed" in said and str(tmp_path / "models" / "captioners" / "florence-2-base") in said
    assert "python -m inference install-captioner" in said
    assert [b.label for b in panel.button] == ["Start"]  # the first run downloads it


def test_a_curator_starts_the_job_and_sees_its_progress_then_its_outcome(panel, manifest, tiny_captioner,
                                                                       monkeypatch):
    monkeypatch.setenv("CAPTIONER_MODEL_DIR", str(tiny_captioner))  # the server's configuration
    ran(panel)
    assert f"Model: {MODEL}" in texts(panel)
    panel.radio(key="caption_scope").set_value("All pictures")
    panel.button(key="caption_start").click()
    ran(panel)
    wait_for(lambda: (manifest.latest_job("caption") or {"status": "running"})["status"] != "running", 120)
    job = manifest.latest_job("caption")
    assert job["status"] == "done", job["message"]
    ran(panel)
    assert "Captioning finished" in texts(panel) and "s per picture" in texts(panel)
    assert set(captions(manifest).values()) == {(CAPTION, MODEL, None)} and len(captions(manifest)) == 6


def test_a_viewer_cannot_start_the_job(panel, manifest, tiny_captioner, monkeypatch):
    from test_auth import SECRETS, VIEWER, forced

    monkeypatch.setenv("CAPTIONER_MODEL_DIR", str(tiny_captioner))
    panel.secrets.update(SECRETS)
    panel.user = signed_in_as(VIEWER)
    ran(panel)
    forced(panel.button(key="caption_start")).click()
    ran(panel)
    assert manifest.latest_job("caption") is None


def test_the_panel_names_a_configured_folder_that_is_no_captioner_and_offers_no_start(panel, demo_model,
                                                                                      monkeypatch):
    monkeypatch.setenv("CAPTIONER_MODEL_DIR", str(demo_model))  # an image classifier
    ran(panel)
    assert "cannot be used" in texts(panel) and "not a captioning model" in texts(panel)
    assert not panel.button
