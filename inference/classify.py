"""One request: a photo in, the model's top predictions out."""

import time

from .cattle import cattle_gate, gate_from_features, has_cattle_gate
from .images import check_image, open_image, to_jpeg
from .loader import loaded_model


def classify(image, model_dir, top_k=5, device=None, on_wait=None, wait_timeout=None, roots=None,
             with_jpeg=False):
    """Classify one photo with the model in `model_dir`, holding no model after.

    `image` is a PIL image, a path, bytes or a binary file (a Streamlit upload).
    `device` is "cpu", "cuda" or None for the GPU where there is one.
    `on_wait(waiting)` is called if another request holds the model first.
    `roots`: the allowed folders a path must really lie in (None: any path).
    `with_jpeg`: add "jpeg", the photo as decoded for the model (reduced),
    as JPEG bytes to show it: a page need not decode the upload again.

    Returns a JSON-ready dict:
        top      [{"label", "score"}, ...] best first; labels from the model's
                 id2label, scores probabilities
        cattle   {"is_cattle", "score", "classes", "threshold"}: the summed
                 probability of the bovine classes, for a model that has
                 them (ImageNet); None for other models
        model, is_demo, device, dtype
        seconds  {"wait", "load", "infer", "unload"}
        memory   {"rss_before_bytes", "rss_after_bytes"}, plus
                 cuda_before/peak/after_bytes on a GPU

    Raises InferenceError (BadImageError, ModelFolderError, ModelBusyError)
    with a message for a person; no model is left loaded either way.
    """
    check_top_k(top_k)
    check_image(image, roots=roots)  # Not an image, or too many pixels: refused from its header, before waiting.
    decoded = []  # Decoded with the slot held (one photo's pixels at a time), before the model loads.
    with loaded_model(model_dir, device, on_wait, wait_timeout,
                      before_load=lambda: decoded.append(open_image(image, roots=roots))) as loaded:
        started = time.perf_counter()
        prediction = predict(loaded, decoded[0], top_k)
        infer_seconds = time.perf_counter() - started
    photo = decoded.pop()
    return {
        **({"jpeg": to_jpeg(photo)} if with_jpeg else {}),
        **prediction,
        "model": loaded.info.name,
        "is_demo": loaded.info.is_demo,
        "device": loaded.device,
        "dtype": loaded.dtype,
        "seconds": {**loaded.seconds, "infer": infer_seconds},
        "memory": loaded.memory,
    }


def predict(loaded, photo, top_k):
    """{"top": the top_k {"label", "score"}, "cattle": the gate or None} for an
    RGB photo, with a model already loaded."""
    import torch

    model = loaded.model
    features = []
    # A trained head keeps its base's ImageNet classifier: it reads the same features.
    hook = (
        model.classifier.register_forward_pre_hook(lambda _, inputs: features.append(inputs[0]))
        if loaded.cattle_gate
        else None
    )
    try:
        with torch.inference_mode():
            inputs = loaded.processor(images=photo, return_tensors="pt")
            pixel_values = inputs["pixel_values"].to(loaded.device, getattr(torch, loaded.dtype))
            logits = model(pixel_values=pixel_values).logits[0].float()
            if model.config.problem_type == "multi_label_classification":
                # Independent yes/no per label: each score is its own probability.
                scores = logits.sigmoid()
            else:
                scores = logits.softmax(dim=-1)
            best = scores.topk(min(top_k, scores.numel()))
            if loaded.cattle_gate:
                gate = gate_from_features(loaded.cattle_gate, features[0][0])
            else:
                gate = cattle_gate(scores.tolist(), loaded.info.labels)
    finally:
        if hook:
            hook.remove()
    labels = model.config.id2label
    top = [
        {"label": labels[int(index)], "score": float(score)}
        for score, index in zip(best.values, best.indices, strict=True)
    ]
    return {"top": top, "cattle": gate}


def has_gate(loaded):
    """Whether predict() gives this loaded model's photos a cattle gate."""
    return bool(loaded.cattle_gate) or has_cattle_gate(loaded.info.labels)


def check_top_k(top_k):
    if not isinstance(top_k, int) or top_k < 1:
        raise ValueError(f"top_k must be a positive integer, not {top_k!r}")
