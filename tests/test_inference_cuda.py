"""The CUDA path: half precision on the GPU, and the GPU memory handed back.

Skipped where there is no GPU. Run with -s to print the figures:
    python -m pytest tests/test_inference_cuda.py -s
"""

import gc

import pytest
import torch
from transformers import PreTrainedModel

import inference
from inference.loader import loaded_model

from conftest import make_photo

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")

MiB = 2**20


def test_auto_picks_the_gpu_in_half_precision(demo_model):
    result = inference.classify(make_photo(), demo_model)
    assert result["device"].startswith("cuda")
    assert result["dtype"] == "float16"


def test_gpu_memory_is_handed_back(demo_model):
    inference.classify(make_photo(), demo_model, device="cuda")  # Warm up CUDA.
    allocated_before = torch.cuda.memory_allocated()
    for seed in range(3):
        result = inference.classify(make_photo(seed), demo_model, device="cuda")
        memory, seconds = result["memory"], result["seconds"]
        print(
            f"\ncuda request {seed}: load {seconds['load']:.3f} s, "
            f"infer {seconds['infer']:.3f} s, unload {seconds['unload']:.3f} s; GPU memory "
            f"before {memory['cuda_before_bytes'] / MiB:.1f} MiB, "
            f"peak {memory['cuda_peak_bytes'] / MiB:.1f} MiB, "
            f"after {memory['cuda_after_bytes'] / MiB:.1f} MiB; "
            f"reserved now {torch.cuda.memory_reserved() / MiB:.1f} MiB"
        )
        # The weights (about 5.5 MiB in float16) were on the GPU during the request...
        assert memory["cuda_peak_bytes"] - memory["cuda_before_bytes"] > 4 * MiB
        # ...and are gone after it.
        assert memory["cuda_after_bytes"] <= memory["cuda_before_bytes"]
    assert torch.cuda.memory_allocated() <= allocated_before
    gc.collect()
    assert not any(isinstance(thing, PreTrainedModel) for thing in gc.get_objects())


def test_model_sits_on_the_gpu_while_loaded(demo_model):
    with loaded_model(demo_model, device="cuda") as loaded:
        parameter = next(loaded.model.parameters())
        assert parameter.is_cuda and parameter.dtype == torch.float16
    assert loaded.model is None


def test_gpu_and_cpu_agree(demo_model):
    photo = make_photo(5)
    on_gpu = inference.classify(photo, demo_model, top_k=6, device="cuda")["top"]
    on_cpu = inference.classify(photo, demo_model, top_k=6, device="cpu")["top"]
    gpu_scores = {p["label"]: p["score"] for p in on_gpu}
    for prediction in on_cpu:  # Half precision: close, not equal.
        assert gpu_scores[prediction["label"]] == pytest.approx(prediction["score"], abs=1e-2)


def test_real_model_on_the_gpu_agrees_with_the_cpu_and_hands_memory_back(lite0_model):
    # float16 through the SE identity (bias 100: sigmoid is exactly 1.0 in half too) and the gate.
    photo = make_photo(6)
    on_gpu = inference.classify(photo, lite0_model, top_k=5, device="cuda")
    on_cpu = inference.classify(photo, lite0_model, top_k=5, device="cpu")
    assert on_gpu["dtype"] == "float16"
    gpu_scores = {p["label"]: p["score"] for p in on_gpu["top"]}
    best = on_cpu["top"][0]
    assert gpu_scores[best["label"]] == pytest.approx(best["score"], abs=1e-2)
    assert on_gpu["cattle"]["score"] == pytest.approx(on_cpu["cattle"]["score"], abs=1e-2)
    memory = on_gpu["memory"]
    assert memory["cuda_after_bytes"] <= memory["cuda_before_bytes"]


def test_head_trains_on_the_gpu_and_keeps_the_gate(lite0_model, tmp_path):
    from conftest import make_tinted_photo, write_training_photos

    photos = write_training_photos(tmp_path / "photos", per_class=4)
    record = inference.train_head(photos, lite0_model, tmp_path / "head", device="cuda")
    assert record["cross_validation"]["accuracy"] == 1.0
    result = inference.classify(make_tinted_photo((20, 60, 150), seed=9), tmp_path / "head", device="cuda")
    assert result["top"][0]["label"] == "lumpy skin" and result["cattle"] is not None
