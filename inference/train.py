"""A triage head from a vet's own labelled photos, on a CPU, in seconds.

    photos/healthy/*.jpg, photos/lumpy-skin/*.jpg, ...  (one subfolder per class)

The base model (e.g. the ImageNet EfficientNet-Lite0) turns each photo into
the features its classifier reads (its pooled features). A logistic
regression on those features is the new head; cross-validation on the same
photos says how often it is right on photos it did not see. The result is a
normal transformers folder, the base weights with the new classifier and
labels, that the scanner loads like any other model, plus training.json,
which records how it was trained.
"""

import json
import shutil
import time
from datetime import datetime, timezone
from pathlib import Path

from .catalog import DEMO_CONFIG_KEY
from .cattle import has_cattle_gate, write_gate_file
from .errors import BadImageError, InferenceError
from guards.folders import REFUSAL, OutsideAllowedFolders, folder_entries

from .images import PHOTO_SUFFIXES, find_photos, open_image
from .loader import loaded_model

MIN_PHOTOS_PER_CLASS = 4
MAX_FOLDS = 5
TRAINING_FILE = "training.json"


class TrainingError(InferenceError):
    """The photos cannot train a head: too few, one class only, unreadable."""


def find_training_photos(folder, roots=None, skipped=None):
    """{class name: [photo paths]}, one class per subfolder of `folder` (searched recursively).

    With `roots` (the allowed folders), only folders that really lie under them
    are listed: a subfolder that does not is no class, and is added to
    `skipped` ({"file", "error"}) with the reason.
    """
    folder = Path(folder).expanduser()
    try:
        entries = folder_entries(folder, roots)
    except OutsideAllowedFolders:
        raise TrainingError(f"{folder}: {REFUSAL}; this server reads photos only there.") from None
    except (FileNotFoundError, NotADirectoryError):
        raise TrainingError(f"{folder}: no such folder.") from None
    classes = {}
    for name, is_folder in entries:
        if not is_folder or name.startswith("."):
            continue
        try:
            classes[name] = find_photos(folder / name, recursive=True, roots=roots)
        except BadImageError as error:
            if skipped is not None:
                skipped.append({"file": str(folder / name), "error": str(error)})
    return {name: paths for name, paths in classes.items() if paths}


def check_enough_photos(photos_by_class, folder="the folder"):
    """Refuse, saying what to add, unless there are 2+ classes of MIN_PHOTOS_PER_CLASS+ photos."""
    if len(photos_by_class) < 2:
        found = ", ".join(photos_by_class) or "none"
        raise TrainingError(
            f"{folder}: training needs at least two classes, one subfolder of photos each "
            f"(e.g. healthy/ and lumpy-skin/, with {', '.join(PHOTO_SUFFIXES)} files); "
            f"found {found}."
        )
    short = {name: len(paths) for name, paths in photos_by_class.items()
             if len(paths) < MIN_PHOTOS_PER_CLASS}
    if short:
        listed = ", ".join(f"{name} ({count})" for name, count in short.items())
        raise TrainingError(
            f"Too few photos to train and test a head: every class needs at least "
            f"{MIN_PHOTOS_PER_CLASS} readable photos, and these have fewer: {listed}. "
            "Add photos and train again."
        )


def train_head(
    photos_folder, base_dir, out_dir, device="cpu", overwrite=False, on_progress=None, on_wait=None,
    roots=None,
):
    """Train a linear head on `base_dir`'s features of the photos; write the model to `out_dir`.

    `on_progress(done, total)` is called after each photo's features;
    `on_wait(waiting)` if another request holds the model slot first. Returns
    the training record, also written to `out_dir`/training.json: classes,
    photos per class, cross-validated accuracy and confusion matrix, seconds.
    With `roots` (the allowed folders), photos are read only from under them,
    checked as each is opened. Raises TrainingError (too few photos, bad
    folders) with a message for a person.
    """
    photos_folder, out_dir = Path(photos_folder).expanduser(), Path(out_dir).expanduser()
    refused = []
    photos = find_training_photos(photos_folder, roots, refused)
    check_enough_photos(photos, photos_folder)
    if (out_dir / "config.json").exists() and not overwrite:
        raise TrainingError(f"{out_dir} already holds a model; choose another folder.")
    if out_dir.resolve() == Path(base_dir).resolve():
        raise TrainingError("The output folder is the base model's own folder; choose another.")
    with loaded_model(base_dir, device, on_wait) as loaded:
        classifier = _linear_classifier(loaded.model)
        started = time.perf_counter()
        features, targets, skipped = _features(loaded, classifier, photos, on_progress, roots)
        skipped = refused + skipped
        feature_seconds = time.perf_counter() - started
        kept = {name: targets.count(index) for index, name in enumerate(photos)}
        check_enough_photos({name: [None] * count for name, count in kept.items()}, photos_folder)
        started = time.perf_counter()
        validation = _cross_validate(features, targets, len(photos))
        weight, bias = _fit(features, targets, len(photos))
        fit_seconds = time.perf_counter() - started
        record = {
            "base": loaded.info.name,
            "base_path": str(Path(base_dir).resolve()),
            "photos_folder": str(photos_folder.resolve()),
            "classes": list(photos),
            "photos_per_class": kept,
            "skipped": skipped,
            "feature_size": features.shape[1],
            "cross_validation": validation,
            "seconds": {"features": round(feature_seconds, 3), "fit": round(fit_seconds, 3)},
            "trained_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        }
        _write_model(loaded, classifier, weight, bias, list(photos), record, out_dir, overwrite)
    return record


def read_training(model_dir):
    """The training record of a model trained here, or None (any other model)."""
    path = Path(model_dir) / TRAINING_FILE
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    return record if isinstance(record, dict) else None


def _linear_classifier(model):
    import torch

    classifier = getattr(model, "classifier", None)
    if not isinstance(classifier, torch.nn.Linear):
        raise TrainingError(
            f"{type(model).__name__} has no single linear classifier to replace; "
            "use a base such as the ImageNet EfficientNet-Lite0 (install-model imagenet-lite0)."
        )
    return classifier


def _features(loaded, classifier, photos, on_progress, roots=None):
    """(features array, class index per row, [{"file", "error"}] skipped)."""
    import numpy as np
    import torch

    captured = []
    # What the classifier reads is the feature a new linear head should read too.
    hook = classifier.register_forward_pre_hook(lambda _, inputs: captured.append(inputs[0]))
    rows, targets, skipped = [], [], []
    total, done = sum(len(paths) for paths in photos.values()), 0
    if on_progress:
        on_progress(0, total)  # The total, before the first (slowest) photo.
    try:
        for index, paths in enumerate(photos.values()):
            for path in paths:
                try:
                    photo = open_image(path, roots=roots)
                except BadImageError as error:
                    skipped.append({"file": str(path), "error": str(error)})
                else:
                    with torch.inference_mode():
                        inputs = loaded.processor(images=photo, return_tensors="pt")
                        pixels = inputs["pixel_values"].to(loaded.device, getattr(torch, loaded.dtype))
                        loaded.model(pixel_values=pixels)
                    rows.append(captured.pop()[0].float().cpu().numpy())
                    targets.append(index)
                done += 1
                if on_progress:
                    on_progress(done, total)
    finally:
        hook.remove()
    empty = np.zeros((0, classifier.in_features), np.float32)  # Every photo unreadable.
    return (np.stack(rows) if rows else empty), targets, skipped


def _head():
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return make_pipeline(StandardScaler(), LogisticRegression(C=1.0, max_iter=5000))


def _cross_validate(features, targets, classes):
    from sklearn.metrics import confusion_matrix
    from sklearn.model_selection import StratifiedKFold, cross_val_predict

    folds = min(MAX_FOLDS, min(targets.count(index) for index in range(classes)))
    split = StratifiedKFold(n_splits=folds, shuffle=True, random_state=0)
    predicted = cross_val_predict(_head(), features, targets, cv=split)
    correct = sum(int(p == t) for p, t in zip(predicted, targets, strict=True))
    return {
        "folds": folds,
        "accuracy": round(correct / len(targets), 4),
        "correct": correct,
        "photos": len(targets),
        # Rows: the true class; columns: the class predicted, in "classes" order.
        "confusion_matrix": confusion_matrix(targets, predicted, labels=range(classes)).tolist(),
    }


def _fit(features, targets, classes):
    """The head fitted on every photo, as (weight [classes, features], bias [classes])."""
    import numpy as np

    pipeline = _head().fit(features, targets)
    scaler, regression = pipeline.named_steps["standardscaler"], pipeline.named_steps["logisticregression"]
    weight, bias = regression.coef_, regression.intercept_
    if classes == 2:
        # scikit-learn keeps one logit z for class 1; softmax([-z/2, z/2]) = sigmoid(z).
        weight, bias = np.vstack([-weight / 2, weight / 2]), np.hstack([-bias / 2, bias / 2])
    # Fold the standardisation in, so the head is one plain linear layer.
    weight = weight / scaler.scale_
    bias = bias - weight @ scaler.mean_
    return weight, bias


def _write_model(loaded, classifier, weight, bias, labels, record, out_dir, overwrite):
    import torch

    model = loaded.model
    keeps_gate = has_cattle_gate(loaded.info.labels)
    head = torch.nn.Linear(classifier.in_features, len(labels))
    with torch.no_grad():
        head.weight.copy_(torch.from_numpy(weight))
        head.bias.copy_(torch.from_numpy(bias))
    model.classifier = head
    model.float()  # Saved in full precision even when the features came from a GPU in float16.
    config = model.config
    config.id2label = dict(enumerate(labels))
    config.label2id = {label: index for index, label in enumerate(labels)}
    config.num_labels = len(labels)
    config.problem_type = "single_label_classification"
    config.vet_scanner_note = f"Triage head trained on {record['base']}; see training.json"
    if hasattr(config, DEMO_CONFIG_KEY):  # The head is trained, even on a demo base.
        delattr(config, DEMO_CONFIG_KEY)
    # Written beside the target and moved in at the end: a failed run leaves no half model.
    partial = out_dir.with_name(out_dir.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    model.save_pretrained(partial)
    loaded.processor.save_pretrained(partial)
    if keeps_gate:
        write_gate_file(partial, classifier, loaded.info.labels)
    (partial / TRAINING_FILE).write_text(json.dumps(record, indent=2), encoding="utf-8")
    if overwrite and out_dir.exists():
        shutil.rmtree(out_dir)
    partial.rename(out_dir)
