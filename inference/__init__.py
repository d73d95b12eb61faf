"""Vet scanner: on-demand image classification that holds no model between requests.

    >>> import inference
    >>> result = inference.classify("cow.jpg", "models/demo-vit")
    >>> result["top"][0]
    {'label': 'healthy', 'score': 0.31}

Each request acquires the process's single model slot, loads the model from a
local folder, classifies and unloads it. This package never imports streamlit;
pages/vet_scanner.py is a thin screen over it.
"""

from .batch import classify_folder, rows_to_csv
from .catalog import ModelInfo, list_models, models_dir, read_model_info
from .cattle import CATTLE_CLASSES, CATTLE_THRESHOLD, cattle_gate, has_cattle_gate
from .classify import classify
from .demo_model import TRIAGE_LABELS, write_demo_model
from .errors import BadImageError, InferenceError, ModelBusyError, ModelFolderError
from .images import PHOTO_SUFFIXES
from .install import INSTALLABLE, install_model
from .loader import queue_status
from .train import MIN_PHOTOS_PER_CLASS, TrainingError, read_training, train_head

__all__ = [
    "BadImageError",
    "CATTLE_CLASSES",
    "CATTLE_THRESHOLD",
    "INSTALLABLE",
    "MIN_PHOTOS_PER_CLASS",
    "TrainingError",
    "cattle_gate",
    "has_cattle_gate",
    "install_model",
    "read_training",
    "train_head",
    "InferenceError",
    "ModelBusyError",
    "ModelFolderError",
    "ModelInfo",
    "PHOTO_SUFFIXES",
    "TRIAGE_LABELS",
    "classify",
    "classify_folder",
    "list_models",
    "models_dir",
    "queue_status",
    "read_model_info",
    "rows_to_csv",
    "write_demo_model",
]
