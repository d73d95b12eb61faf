"""Finding models on disk and checking a folder before anything is loaded.

A model is a folder in Hugging Face format: config.json, safetensors weights
and preprocessor_config.json. The checks here read only those small files, so
a wrong folder is refused with a clear message before torch allocates anything.
"""

import json
import os
from dataclasses import dataclass
from pathlib import Path

from .errors import ModelFolderError

# Where the page looks for models: one subfolder per model.
MODELS_DIR_ENV = "VET_MODELS_DIR"
REPO_ROOT = Path(__file__).resolve().parent.parent

# The list of weight files of a model saved in several shards.
WEIGHT_INDEX = "model.safetensors.index.json"

# A custom key in config.json that marks a model as an untrained demo.
DEMO_CONFIG_KEY = "vet_scanner_demo"


@dataclass(frozen=True)
class ModelInfo:
    name: str
    path: Path
    labels: tuple = ()
    is_demo: bool = False
    problem: str | None = None  # Why the folder cannot be used, or None.


def models_dir():
    """The folder of models: $VET_MODELS_DIR, else models/ at the repo root."""
    return Path(os.environ.get(MODELS_DIR_ENV) or REPO_ROOT / "models")


def list_models(folder=None):
    """ModelInfo for every subfolder of `folder` that looks like a model.

    Subfolders with a config.json count as models; the ones that fail the
    checks are still listed, with `problem` saying why, so a person who put a
    checkpoint there learns what is wrong with it instead of not seeing it.
    """
    folder = Path(folder) if folder else models_dir()
    if not folder.is_dir():
        return []
    models = []
    for path in sorted(p for p in folder.iterdir() if (p / "config.json").is_file()):
        try:
            models.append(read_model_info(path))
        except ModelFolderError as error:
            models.append(ModelInfo(name=path.name, path=path, problem=str(error)))
    return models


def read_model_info(folder):
    """Check that `folder` holds a loadable image classifier; return its ModelInfo.

    Raises ModelFolderError with a message that says what is missing.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise ModelFolderError(f"Model folder not found: {folder}")
    config = _read_config(folder)
    _check_is_image_classifier(folder, config)
    _check_files(folder)
    labels = _labels(folder, config)
    return ModelInfo(
        name=folder.name,
        path=folder,
        labels=labels,
        is_demo=bool(config.get(DEMO_CONFIG_KEY)),
    )


def _read_config(folder):
    config_path = folder / "config.json"
    if not config_path.is_file():
        raise ModelFolderError(
            f"{folder} has no config.json: it is not a Hugging Face model folder."
        )
    try:
        config = json.loads(config_path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ModelFolderError(f"{config_path} cannot be read: {error}") from None
    if not isinstance(config, dict):
        raise ModelFolderError(f"{config_path} is not a JSON object.")
    return config


def _check_is_image_classifier(folder, config):
    if config.get("auto_map"):
        raise ModelFolderError(
            f"{folder} needs custom Python code (auto_map in config.json); "
            "the scanner never runs code that comes with a model."
        )
    architectures = config.get("architectures") or []
    # Every image-classification class in transformers is named *ForImageClassification*
    # (ViT, ConvNeXT, Swin, DeiT...). Checking the name keeps this free of a
    # seconds-long transformers import; a base model (ViTModel) is refused here
    # because loading it as a classifier would bolt on an untrained head.
    if not any("ForImageClassification" in name for name in architectures):
        found = ", ".join(architectures) or "none"
        raise ModelFolderError(
            f"{folder} is not an image classifier: config.json names the "
            f"architecture(s) {found}, none of them an image-classification model "
            "(e.g. ViTForImageClassification)."
        )


def _check_files(folder):
    has_safetensors = (folder / "model.safetensors").is_file() or (
        folder / WEIGHT_INDEX
    ).is_file()
    if not has_safetensors:
        other = [p.name for p in folder.glob("*.bin")]
        hint = (
            f" It has {', '.join(other)}: the scanner loads safetensors only, "
            "because pickled .bin weights can run code. Re-save the model with "
            "save_pretrained()."
            if other
            else ""
        )
        raise ModelFolderError(f"{folder} has no model.safetensors weights.{hint}")
    check_weight_index(folder)
    if not (folder / "preprocessor_config.json").is_file():
        raise ModelFolderError(
            f"{folder} has no preprocessor_config.json: the scanner cannot know how "
            "to resize and normalise photos for this model."
        )


def check_weight_index(folder):
    """Refuse a sharded-weights index unless every shard is a .safetensors file inside `folder`.

    transformers follows `model.safetensors.index.json` wherever its weight_map points: at a pickled
    pytorch_model.bin (which can run code when unpickled) or, through `..` or a link, at files outside
    the model folder. Checked before anything is loaded, and again right before loading.
    """
    index_path = folder / WEIGHT_INDEX
    if not index_path.exists():
        return
    try:
        weight_map = json.loads(index_path.read_text(encoding="utf-8")).get("weight_map")
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, AttributeError) as error:
        raise ModelFolderError(f"{index_path} cannot be read: {error}") from None
    if not isinstance(weight_map, dict) or not weight_map:
        raise ModelFolderError(f"{index_path} has no weight_map naming the weight files.")
    inside = folder.resolve()
    for shard in sorted(set(map(str, weight_map.values()))):
        path = (folder / shard).resolve()
        if not shard.endswith(".safetensors"):
            raise ModelFolderError(
                f"{index_path} points at {shard!r}: the scanner loads safetensors only, because "
                "pickled weights can run code. Re-save the model with save_pretrained()."
            )
        if not path.is_relative_to(inside):
            raise ModelFolderError(
                f"{index_path} points at {shard!r}, which lies outside the model folder "
                "(after following links); every weight file must be inside it."
            )
        if not path.is_file():
            raise ModelFolderError(f"{index_path} points at {shard!r}, which is not in the model folder.")


def _labels(folder, config):
    id2label = config.get("id2label") or {}
    try:
        labels = tuple(label for _, label in sorted((int(k), v) for k, v in id2label.items()))
    except (TypeError, ValueError):
        labels = ()
    if len(labels) < 2:
        raise ModelFolderError(
            f"{folder}: config.json has no id2label with at least two class names."
        )
    return labels
