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
from .classify import classify
from .demo_model import TRIAGE_LABELS, write_demo_model
from .errors import BadImageError, InferenceError, ModelBusyError, ModelFolderError
from .images import PHOTO_SUFFIXES
from .loader import queue_status

__all__ = [
    "BadImageError",
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
