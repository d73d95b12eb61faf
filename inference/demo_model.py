"""An untrained demo model, so the scanner can be tried without a checkpoint."""

from pathlib import Path

from .catalog import DEMO_CONFIG_KEY
from .errors import InferenceError

# Conditions a cattle triage model would tell apart from a photo.
TRIAGE_LABELS = (
    "healthy",
    "lumpy skin disease",
    "foot-and-mouth disease",
    "ringworm",
    "pinkeye",
    "dermatophilosis",
)

DEMO_NOTE = (
    "Untrained demo model with random weights, written by "
    "`python -m inference demo-model`. Its predictions mean nothing."
)


def write_demo_model(folder, labels=TRIAGE_LABELS, seed=0, overwrite=False):
    """Write a small ViT image classifier (about 2.9M parameters) to `folder`.

    The weights are random (from `seed`), so predictions mean nothing; its
    config.json says so under "vet_scanner_demo", and the page shows a
    banner. It has the layout of a real checkpoint: config.json,
    model.safetensors and preprocessor_config.json. Returns the folder.
    """
    import torch
    from transformers import ViTConfig, ViTForImageClassification, ViTImageProcessorPil
    from transformers.utils import logging as transformers_logging

    folder = Path(folder)
    if (folder / "config.json").exists() and not overwrite:
        raise InferenceError(f"{folder} already holds a model; choose another folder.")
    transformers_logging.disable_progress_bar()
    config = ViTConfig(
        # ViT-Tiny's width at half its depth: a few million parameters, so
        # loading takes a fraction of a second, yet the code path is the one a
        # real fine-tuned ViT takes.
        image_size=224,
        patch_size=16,
        hidden_size=192,
        num_hidden_layers=6,
        num_attention_heads=3,
        intermediate_size=768,
        id2label=dict(enumerate(labels)),
        label2id={label: index for index, label in enumerate(labels)},
        architectures=["ViTForImageClassification"],
        **{DEMO_CONFIG_KEY: True, "vet_scanner_note": DEMO_NOTE},
    )
    with torch.random.fork_rng(devices=[]):  # Leave the caller's RNG alone.
        torch.manual_seed(seed)
        model = ViTForImageClassification(config)
    model.save_pretrained(folder)
    # The PIL flavour writes the standard "ViTImageProcessor" config without
    # asking for torchvision.
    ViTImageProcessorPil(
        size={"height": 224, "width": 224}, image_mean=[0.5] * 3, image_std=[0.5] * 3
    ).save_pretrained(folder)
    return folder
