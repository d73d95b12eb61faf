"""A captioning model loaded for a job and unloaded after it, in the vet scanner's model slot.

The model is Florence-2-base (0.23 B parameters, MIT licence) in the layout transformers runs
natively (`Florence2ForConditionalGeneration`, no code from the model's repository), from the Hub
repository `florence-community/Florence-2-base`: Microsoft's own repository ships remote code that
no longer loads under transformers 5. It writes a paragraph on what a picture shows (its
`<MORE_DETAILED_CAPTION>` task), which a LoRA learns more from than a one-line caption.

Where the model comes from, in order: a folder given (`--model DIR`), $CAPTIONER_MODEL_DIR, or
models/captioners/florence-2-base, downloaded there on first use or ahead of it with
`python -m inference install-captioner`. The download is the only time anything in `inference`
reaches the Hub; loading always reads the folder alone.

    with loaded_captioner() as captioner:
        texts = captioner.caption([image1, image2])
"""

import json
import os
import shutil
import time
from contextlib import contextmanager
from pathlib import Path

from .catalog import ModelInfo, _read_config, check_weight_index, models_dir
from .errors import InferenceError, ModelFolderError
from .loader import ModelKind, check_all_weights, loaded_model, read_weights_in

REPO = "florence-community/Florence-2-base"
# The Hub revision the download asks for (install-captioner --revision takes another). "main" until a
# commit is checked against the Hub and pinned here; whichever it is, the commit actually downloaded
# is recorded in the folder (SOURCE_FILE) and names the captions' model, so captions say what made them.
REVISION = "main"
FOLDER_NAME = "florence-2-base"
CAPTIONERS = "captioners"
MODEL_DIR_ENV = "CAPTIONER_MODEL_DIR"
SOURCE_FILE = "captioner.json"  # {"repo": ..., "revision": the commit}: written by the download
# What the download takes: configuration, tokenizer and safetensors weights; never pickled .bin
# weights or Python files.
DOWNLOADED_FILES = ["*.json", "*.txt", "*.safetensors"]
ARCHITECTURES = ("Florence2ForConditionalGeneration",)
TASK = "<MORE_DETAILED_CAPTION>"  # a paragraph; "<DETAILED_CAPTION>" gives a sentence or two
MAX_NEW_TOKENS = 160  # a long paragraph; a caption that runs on past it is cut
NUM_BEAMS = 1  # greedy: a third of beam search's time on a CPU, for slightly plainer wording


class CaptionerUnavailable(InferenceError):
    """The captioning model is not on this machine and cannot be downloaded."""


def default_model_dir():
    """Where the captioner lives unless a folder is given: $CAPTIONER_MODEL_DIR, else
    captioners/florence-2-base in the models folder (a subfolder, so that the vet scanner, which
    takes every model folder at the top as a classifier, does not list it)."""
    return Path(os.environ.get(MODEL_DIR_ENV) or models_dir() / CAPTIONERS / FOLDER_NAME)


def read_captioner_info(folder):
    """Check that `folder` holds a captioning model this module runs; its ModelInfo, named for the
    model and the revision it came from (what the captions record)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ModelFolderError(f"Captioning model folder not found: {folder}")
    config = _read_config(folder)
    if config.get("auto_map"):
        raise ModelFolderError(f"{folder} needs custom Python code (auto_map in config.json); "
                               "no code that comes with a model is run.")
    if not set(config.get("architectures") or []) & set(ARCHITECTURES):
        raise ModelFolderError(f"{folder} is not a captioning model this app runs: config.json names "
                               f"{', '.join(config.get('architectures') or ['no architecture'])}, "
                               f"not {' or '.join(ARCHITECTURES)}.")
    _check_files(folder)
    return ModelInfo(name=model_name(folder), path=folder)


def _check_files(folder):
    if not ((folder / "model.safetensors").is_file() or (folder / "model.safetensors.index.json").is_file()):
        raise ModelFolderError(f"{folder} has no model.safetensors weights (pickled .bin weights are never loaded).")
    check_weight_index(folder)
    if not any((folder / name).is_file() for name in ("processor_config.json", "preprocessor_config.json")):
        raise ModelFolderError(f"{folder} has no processor_config.json: how to prepare pictures is unknown.")
    if not any((folder / name).is_file() for name in ("tokenizer.json", "vocab.json")):
        raise ModelFolderError(f"{folder} has no tokenizer (tokenizer.json or vocab.json).")


def model_name(folder):
    """"repo@commit" for a downloaded model (the commit shortened), else the folder's name."""
    folder = Path(folder)
    try:
        source = json.loads((folder / SOURCE_FILE).read_text(encoding="utf-8"))
        return f"{source['repo']}@{source['revision'][:12]}"
    except (OSError, ValueError, KeyError, TypeError):
        return folder.name


def captioner_status(folder=None):
    """What a page says about the captioner before anything is loaded: {"folder", "installed", "name",
    "problem"}: not installed (the first run downloads it), installed and usable, or unusable and why."""
    folder = Path(folder or default_model_dir())
    status = {"folder": folder, "installed": (folder / "config.json").is_file(), "name": None, "problem": None}
    if status["installed"]:
        try:
            status["name"] = read_captioner_info(folder).name
        except ModelFolderError as error:
            status["problem"] = str(error)
    return status


def _load_captioner(loaded, dtype):
    from transformers import AutoModelForImageTextToText, AutoProcessor

    path = loaded.info.path
    check_weight_index(path)  # again: the request may have waited in line while the folder changed
    failure = None
    try:
        loaded.processor = AutoProcessor.from_pretrained(path, local_files_only=True, trust_remote_code=False)
        # device_map: weights are filled straight on the target device (see loader._load).
        loaded.model, loading = AutoModelForImageTextToText.from_pretrained(
            path, local_files_only=True, trust_remote_code=False, use_safetensors=True,
            dtype=dtype, device_map=loaded.device, output_loading_info=True)
    except Exception as error:  # noqa: BLE001 - turned into a readable error below
        failure = f"{type(error).__name__}: {error}"
    if failure:
        raise ModelFolderError(f"{path} could not be loaded as a captioning model: {failure}")
    loaded.model.eval()
    check_all_weights(path, loading)
    if loaded.device == "cpu":
        read_weights_in(loaded.model)


CAPTIONER = ModelKind("Captioning", read_captioner_info, _load_captioner)


class Captioner:
    """The captioning model for one job: a context manager that holds the model slot while it is used.

    `caption(images)` writes one text per PIL image; `seconds` has the loader's wait, load and unload
    times and "caption", the time spent captioning; `images` counts the pictures captioned.
    """

    def __init__(self, folder, device=None, on_wait=None):
        self._request = loaded_model(folder, device, on_wait, kind=CAPTIONER)
        self.name = self._request.info.name
        self.device = self._request.device
        self.loaded = None
        self.images = 0
        self.captioning_seconds = 0.0

    def __enter__(self):
        self.loaded = self._request.__enter__()
        return self

    def __exit__(self, exc_type, error, traceback):
        if isinstance(error, Exception) and not isinstance(error, InferenceError):
            # The caller's own error (a stop request, a full disk), not the model's: it goes on as it
            # is, and the model is unloaded all the same. The model's errors come out of caption().
            self._request.__exit__(None, None, None)
            return False
        return self._request.__exit__(exc_type, error, traceback)

    @property
    def seconds(self):
        return {**self.loaded.seconds, "caption": self.captioning_seconds}

    def caption(self, images):
        """One caption per image (PIL), in order; an empty text where the model wrote nothing.
        Whatever fails in the model comes out as an InferenceError."""
        started = time.perf_counter()
        try:
            texts = self._generate(images)
        except InferenceError:
            raise
        except Exception as error:  # noqa: BLE001 - torch's and transformers' errors, for a person
            raise InferenceError(f"Captioning with {self.name} failed: {type(error).__name__}: {error}") from error
        self.captioning_seconds += time.perf_counter() - started
        self.images += len(images)
        return texts

    def _generate(self, images):
        import torch

        model, processor = self.loaded.model, self.loaded.processor
        inputs = processor(images=[image.convert("RGB") for image in images], text=[TASK] * len(images),
                           return_tensors="pt").to(self.device, dtype=model.dtype)
        with torch.inference_mode():
            ids = model.generate(**inputs, max_new_tokens=MAX_NEW_TOKENS, num_beams=NUM_BEAMS, do_sample=False)
        return [" ".join(text.split()) for text in processor.batch_decode(ids, skip_special_tokens=True)]


def loaded_captioner(model_dir=None, device=None, on_wait=None):
    """The Captioner of `model_dir`, else of the default folder, downloaded there first if missing.

    A folder that is named but missing is an error, not a download: it is likely mistyped.
    """
    folder = Path(model_dir) if model_dir else ensure_default_captioner()
    return Captioner(folder, device, on_wait)


def ensure_default_captioner():
    """The default captioner folder, downloaded into place when it is not there yet."""
    folder = default_model_dir()
    if not (folder / "config.json").is_file():
        install_captioner(folder)
    return folder


def install_captioner(folder=None, repo=REPO, revision=REVISION, overwrite=False):
    """Download the captioning model into `folder` (default: default_model_dir()); return the folder.

    The files arrive in FOLDER.partial (a broken download resumes there) and the folder is renamed
    into place when complete, so a half-downloaded model never looks installed. Raises
    CaptionerUnavailable, in one line saying what to do, when the Hub cannot be reached.
    """
    folder = Path(folder or default_model_dir())
    if (folder / "config.json").exists() and not overwrite:
        raise InferenceError(f"{folder} already holds a model; choose another folder.")
    partial = folder.with_name(folder.name + ".partial")
    try:
        commit = _download(repo, revision, partial)
    except Exception as error:  # noqa: BLE001 - any failure to fetch means the same to a person
        raise CaptionerUnavailable(_offline_line(folder, repo, error)) from None
    (partial / SOURCE_FILE).write_text(json.dumps({"repo": repo, "revision": commit}), encoding="utf-8")
    shutil.rmtree(partial / ".cache", ignore_errors=True)  # the Hub client's bookkeeping
    if folder.exists():
        shutil.rmtree(folder)
    partial.rename(folder)
    return folder


def _download(repo, revision, folder):
    """Fetch `repo` at `revision` into `folder`; the commit fetched."""
    from huggingface_hub import HfApi, snapshot_download

    with _hub_reachable():
        commit = HfApi().model_info(repo, revision=revision).sha  # a branch name moves; record what it was
        snapshot_download(repo, revision=commit, local_dir=folder, allow_patterns=DOWNLOADED_FILES)
    return commit


@contextmanager
def _hub_reachable():
    # inference.loader sets HF_HUB_OFFLINE so that no load ever reaches for the Hub; the client reads
    # the setting into a constant at import, so the one deliberate download lifts that constant.
    from huggingface_hub import constants

    offline = constants.HF_HUB_OFFLINE
    constants.HF_HUB_OFFLINE = False
    try:
        yield
    finally:
        constants.HF_HUB_OFFLINE = offline


def _offline_line(folder, repo, error):
    reason = " ".join(str(error).split())[:160] or type(error).__name__
    return (f"The captioning model is not installed in {folder} and {repo} cannot be downloaded here "
            f"({type(error).__name__}: {reason}); on a machine with internet run "
            f"`python -m inference install-captioner --model-dir DIR` and copy DIR to {folder} "
            f"(or set ${MODEL_DIR_ENV} to it).")
