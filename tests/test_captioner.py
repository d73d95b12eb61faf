"""The captioning model: loaded for a job in the scanner's single model slot, unloaded after it, and
downloaded only when asked for (an offline machine is told in one line what to do)."""

import gc
import json
import threading
import warnings

import numpy as np
import pytest
from click.testing import CliRunner
from PIL import Image
from transformers import PreTrainedModel

import inference.captioner as captioner
from inference import InferenceError, ModelFolderError
from inference.captioner import CaptionerUnavailable, loaded_captioner
from inference.cli import cli
from inference.loader import queue_status

from captioner_support import CAPTION, write_tiny_captioner

UNREACHABLE = "http://127.0.0.1:9"  # the discard port: nothing listens, the connection is refused at once


@pytest.fixture(scope="module")
def tiny_captioner(tmp_path_factory):
    return write_tiny_captioner(tmp_path_factory.mktemp("models") / "tiny-florence")


def pictures(count, seed=0):
    rng = np.random.default_rng(seed)
    return [Image.fromarray(rng.integers(0, 255, (90 + 10 * n, 70, 3), dtype=np.uint8)) for n in range(count)]


def models_alive():
    gc.collect()
    with warnings.catch_warnings():  # isinstance() pokes deprecated torch aliases.
        warnings.simplefilter("ignore", FutureWarning)
        return sum(isinstance(thing, PreTrainedModel) for thing in gc.get_objects())


def test_a_batch_is_captioned_and_the_model_unloaded_after(tiny_captioner):
    with loaded_captioner(tiny_captioner) as model:
        alive_while_loaded = models_alive()
        texts = model.caption(pictures(3))
    assert texts == [CAPTION] * 3
    assert alive_while_loaded >= 1
    assert model.loaded.model is None and model.loaded.processor is None
    assert models_alive() == 0
    assert model.images == 3 and model.seconds["caption"] > 0 and model.seconds["load"] > 0
    assert not queue_status()["busy"]


def test_a_second_load_waits_for_the_slot(tiny_captioner):
    first_loaded, release, waits, order = threading.Event(), threading.Event(), [], []

    def first():
        with loaded_captioner(tiny_captioner) as model:
            order.append("first loaded")
            first_loaded.set()
            release.wait(10)
            model.caption(pictures(1))
        order.append("first unloaded")

    def second():
        first_loaded.wait(10)
        with loaded_captioner(tiny_captioner, on_wait=waits.append):
            order.append("second loaded")

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    first_loaded.wait(10)
    for _ in range(200):  # until the second request is in line
        if queue_status()["waiting"]:
            break
        threading.Event().wait(0.01)
    assert queue_status() == {"busy": True, "waiting": 1}
    release.set()
    for thread in threads:
        thread.join(20)
    assert waits == [1]
    assert order == ["first loaded", "first unloaded", "second loaded"]


def test_a_failed_caption_still_unloads_and_says_so(tiny_captioner):
    with pytest.raises(InferenceError, match="Captioning with tiny-florence failed"):
        with loaded_captioner(tiny_captioner) as model:
            model.caption(["not a picture"])
    assert models_alive() == 0 and not queue_status()["busy"]


def test_a_named_folder_that_is_missing_is_refused_not_downloaded(tmp_path, monkeypatch):
    monkeypatch.setattr(captioner, "install_captioner", lambda *a, **k: pytest.fail("downloaded"))
    with pytest.raises(ModelFolderError, match="not found"):
        loaded_captioner(tmp_path / "typo")


def test_a_model_that_needs_its_own_code_or_is_no_captioner_is_refused(tiny_captioner, tmp_path, demo_model):
    with pytest.raises(ModelFolderError, match="not a captioning model"):
        loaded_captioner(demo_model)
    folder = tmp_path / "remote-code"
    folder.mkdir()
    config = json.loads((tiny_captioner / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "auto_map": {"AutoModel": "x.Model"}}))
    with pytest.raises(ModelFolderError, match="custom Python code"):
        loaded_captioner(folder)


def test_captions_name_the_model_and_the_revision_it_came_from(tiny_captioner, tmp_path):
    assert loaded_captioner(tiny_captioner).name == "tiny-florence"
    (tmp_path / captioner.SOURCE_FILE).write_text(json.dumps({"repo": "org/model", "revision": "0123456789abcdef0123"}))
    assert captioner.model_name(tmp_path) == "org/model@0123456789ab"


@pytest.fixture
def offline(tmp_path, monkeypatch):
    """No Hub to reach, and an empty models folder."""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "ENDPOINT", UNREACHABLE)
    monkeypatch.setenv("VET_MODELS_DIR", str(tmp_path / "models"))
    monkeypatch.delenv(captioner.MODEL_DIR_ENV, raising=False)
    return tmp_path / "models" / "captioners" / captioner.FOLDER_NAME


def test_first_use_offline_says_in_one_line_what_to_run(offline):
    with pytest.raises(CaptionerUnavailable) as error:
        loaded_captioner()
    message = str(error.value)
    assert "\n" not in message
    assert str(offline) in message and "python -m inference install-captioner" in message
    assert not offline.exists()  # nothing half-downloaded looks installed


def test_install_captioner_offline_fails_with_that_line(offline):
    result = CliRunner().invoke(cli, ["install-captioner"])
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "cannot be downloaded here" in lines[0] and str(offline) in lines[0]


def test_the_download_reaches_the_hub_only_while_it_runs_and_lands_whole(offline, monkeypatch):
    import huggingface_hub
    from huggingface_hub import constants

    offline_during, asked = [], {}

    class FakeApi:
        def model_info(self, repo, revision):
            offline_during.append(constants.HF_HUB_OFFLINE)
            return type("Info", (), {"sha": "f" * 40})

    def fake_snapshot(repo, revision, local_dir, allow_patterns):
        offline_during.append(constants.HF_HUB_OFFLINE)
        asked.update(repo=repo, revision=revision, patterns=allow_patterns)
        (local_dir / "config.json").parent.mkdir(parents=True)
        (local_dir / "config.json").write_text("{}")

    monkeypatch.setattr(huggingface_hub, "HfApi", FakeApi)
    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake_snapshot)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)  # as inference.loader leaves it
    captioner.install_captioner(offline)
    assert offline_during == [False, False] and constants.HF_HUB_OFFLINE is True
    assert asked["repo"] == captioner.REPO and asked["revision"] == "f" * 40  # the commit, not a branch
    assert "*.safetensors" in asked["patterns"] and not any("bin" in p or "py" in p for p in asked["patterns"])
    assert json.loads((offline / captioner.SOURCE_FILE).read_text())["revision"] == "f" * 40
    assert not offline.with_name(offline.name + ".partial").exists()


@pytest.mark.skipif(not __import__("torch").cuda.is_available(), reason="needs a CUDA GPU")
def test_on_a_gpu_the_captioner_runs_in_half_precision_and_gives_the_memory_back(tiny_captioner):
    import torch

    with loaded_captioner(tiny_captioner) as model:
        parameter = next(model.loaded.model.parameters())
        assert parameter.is_cuda and parameter.dtype == torch.float16
        assert model.caption(pictures(2)) == [CAPTION] * 2
    assert model.loaded.memory["cuda_after_bytes"] <= model.loaded.memory["cuda_before_bytes"]
