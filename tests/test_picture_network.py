"""The picture job's network: EfficientNet-Lite0 in plain torch (curation.pictures.lite0) gives the features the
transformers network built from the same wheel gives (inference.install, the vet scanner's), so embeddings stored
before and after it, and the learned verdict trained on them, agree; and it loads without importing transformers."""

import io
import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import ROOT
from curation.runs.embed import missing_parts

PROBLEM = missing_parts()
pytestmark = pytest.mark.skipif(PROBLEM is not None, reason=f"the picture network cannot load here: {PROBLEM}")


def test_the_plain_network_gives_the_transformers_networks_features():
    import torch

    from curation.pictures.lite0 import lite0_features
    from inference import install

    weights = torch.load(install.wheel_weights_path(), map_location="cpu", weights_only=True)
    theirs = install.lite0_with_wheel_weights().efficientnet.eval()
    # Noise, and a page-like input: white paper with a dark block (what the picture job's inputs look like).
    noise = np.random.default_rng(0).uniform(-1, 1, (2, 3, 224, 224)).astype(np.float32)
    paper = np.ones((1, 3, 224, 224), np.float32)
    paper[:, :, 40:180, 60:150] = -0.8
    images = torch.from_numpy(np.concatenate([noise, paper]))
    with torch.inference_mode():
        expected = theirs(images).pooler_output.reshape(len(images), -1)
        for fold in (False, True):  # as written, and with its batch norms folded into the convolutions
            got = lite0_features(weights, fold=fold)(images)
            assert got.shape == (3, 1280)
            # Features reach about 5; float32 rounding (and the folding's) moves them by about 1e-5. A stored
            # embedding is float16 (steps of 0.002 there): the same, whichever network computed it.
            assert (got - expected).abs().max().item() < 1e-4


def test_loading_the_network_imports_no_transformers():
    code = ("import sys; from curation.pictures import embedding; embedding.device(); "
            "print('transformers' in sys.modules)")
    loaded = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert loaded.returncode == 0, loaded.stderr
    assert loaded.stdout.strip() == "False"


def test_more_crops_than_a_batch_are_embedded_each_as_alone():
    from curation.pictures import embedding

    rng = np.random.default_rng(1)
    crops = [rng.integers(0, 256, (40 + n, 60), np.uint8) for n in range(embedding.BATCH + 1)]
    rows = embedding.embed(crops)
    assert rows.shape == (len(crops), embedding.DIMENSIONS)
    assert np.allclose(rows[-1], embedding.embed(crops[-1:])[0], atol=1e-3)


def test_on_a_cpu_the_job_embeds_with_the_networks_onnx_export_the_same_features_without_torch():
    """Without a GPU the picture job's process runs Lite0's ONNX export in ONNX Runtime on one thread (faster than
    torch beside other work, a third of its memory): the features are torch's, and once the export is made a
    process that embeds never imports torch."""
    import torch

    from curation.pictures import embedding

    rng = np.random.default_rng(2)
    inputs = [rng.integers(0, 256, (embedding.SIDE, embedding.SIDE), np.uint8) for _ in range(3)]
    paper = np.full((embedding.SIDE, embedding.SIDE), 255, np.uint8)
    paper[40:180, 60:150] = 20
    inputs.append(paper)
    embedding.exported()  # made once, kept in the models folder
    code = ("import io, sys, numpy as np; from curation.pictures import embedding; "
            "rows = embedding.embed_inputs(list(np.load(io.BytesIO(sys.stdin.buffer.read())))); "
            "print(embedding.device(), 'torch' in sys.modules); np.save(sys.stdout.buffer, rows)")
    blob = io.BytesIO()
    np.save(blob, np.stack(inputs))
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, input=blob.getvalue(), capture_output=True,
                         timeout=300, env={**os.environ, "CUDA_VISIBLE_DEVICES": ""})
    assert run.returncode == 0, run.stderr.decode()
    first_line, _, saved = run.stdout.partition(b"\n")
    # Where a GPU's device file exists torch is asked whether it sees the GPU (here told it does not).
    gpu_files = any(os.path.exists(path) for path in ("/dev/nvidia0", "/dev/nvidiactl", "/dev/kfd"))
    assert first_line.decode().split() == ["cpu", str(gpu_files)]
    rows = np.load(io.BytesIO(saved))
    with torch.inference_mode():
        expected = embedding._torch_network("cpu")(torch.from_numpy(embedding._scaled(inputs))).numpy()
    assert rows.shape == (4, embedding.DIMENSIONS)
    assert np.abs(rows - expected).max() < 1e-4
