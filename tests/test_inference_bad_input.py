"""Bad photos and bad model folders: a clear error, nothing left loaded."""

import gc
import io
import json
import shutil
import struct
import warnings
import zlib

import numpy as np
import pytest
from PIL import Image
from transformers import PreTrainedModel, ViTConfig, ViTModel

import inference
import inference.loader


@pytest.fixture
def loads(monkeypatch):
    """Records every model load, to prove a bad photo never causes one."""
    calls = []
    real_load = inference.loader._load

    def recording_load(loaded, dtype):
        calls.append(loaded.info.path)
        return real_load(loaded, dtype)

    monkeypatch.setattr(inference.loader, "_load", recording_load)
    return calls


def jpeg_bytes(size=(200, 200)):
    pixels = np.random.default_rng(0).integers(0, 256, (*size, 3), dtype=np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, "JPEG")
    return buffer.getvalue()


def png_bomb(width, height):
    """A real decompression bomb: a 1-bit PNG of zeros, tiny on disk, huge in RAM."""

    def chunk(kind, data):
        checksum = struct.pack(">I", zlib.crc32(kind + data))
        return struct.pack(">I", len(data)) + kind + data + checksum

    row = b"\0" * (1 + (width + 7) // 8)  # Filter byte + packed pixels.
    compressor = zlib.compressobj(9)
    pixels = b"".join(compressor.compress(row) for _ in range(height)) + compressor.flush()
    header = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")
    )


def assert_nothing_loaded():
    gc.collect()
    with warnings.catch_warnings():  # isinstance() pokes deprecated torch aliases.
        warnings.simplefilter("ignore", FutureWarning)
        assert not any(isinstance(thing, PreTrainedModel) for thing in gc.get_objects())
    assert inference.queue_status() == {"busy": False, "waiting": 0}


# Photos ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "data, message",
    [
        (b"just some text, not a photo", "not an image"),
        (jpeg_bytes()[:2000], "damaged or incomplete"),
        (b"\x89PNG\r\n\x1a\n" + b"\0" * 40, "not an image"),
        (b"", "not an image"),
    ],
    ids=["text", "truncated-jpeg", "broken-png-header", "empty"],
)
def test_unreadable_photo_is_a_clear_error(demo_model, loads, tmp_path, data, message):
    path = tmp_path / "cow.jpg"
    path.write_bytes(data)
    for source in (path, data, io.BytesIO(data)):
        with pytest.raises(inference.BadImageError, match=message):
            inference.classify(source, demo_model)
    assert loads == []
    assert_nothing_loaded()


def test_error_names_the_file(demo_model, tmp_path):
    path = tmp_path / "daisy.jpg"
    path.write_text("moo")
    with pytest.raises(inference.BadImageError, match="daisy.jpg: not an image"):
        inference.classify(path, demo_model)


def test_missing_photo(demo_model, loads, tmp_path):
    with pytest.raises(inference.BadImageError, match="no such file"):
        inference.classify(tmp_path / "nowhere.jpg", demo_model)
    assert loads == []


def test_decompression_bomb_is_refused(demo_model, loads):
    bomb = png_bomb(20_000, 20_000)  # 400 megapixels in about 50 kB.
    assert len(bomb) < 100_000
    with pytest.raises(inference.BadImageError, match="too large.*decompression bomb"):
        inference.classify(bomb, demo_model)
    assert loads == []
    assert_nothing_loaded()


def test_over_the_limit_is_refused_even_where_pillow_only_warns(
    demo_model, loads, monkeypatch
):
    # Pillow raises above twice MAX_IMAGE_PIXELS and only warns between 1x
    # and 2x; the scanner refuses both.
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 30_000)
    photo = jpeg_bytes(size=(150, 300))  # 45,000 pixels: 1.5x the limit.
    with pytest.warns(Image.DecompressionBombWarning):
        with pytest.raises(inference.BadImageError, match=r"150 pixels.*30,000 pixels"):
            inference.classify(photo, demo_model)
    assert loads == []


# Model folders --------------------------------------------------------------


def text_model(folder, demo):
    folder.mkdir()
    (folder / "config.json").write_text(
        json.dumps({"model_type": "bert", "architectures": ["BertForSequenceClassification"]})
    )


def no_config(folder, demo):
    folder.mkdir()
    (folder / "weights.txt").write_text("nothing useful")


def broken_config(folder, demo):
    shutil.copytree(demo, folder)
    (folder / "config.json").write_text("{not json")


def pickled_weights_only(folder, demo):
    shutil.copytree(demo, folder)
    (folder / "model.safetensors").rename(folder / "pytorch_model.bin")


def custom_code(folder, demo):
    shutil.copytree(demo, folder)
    config = json.loads((folder / "config.json").read_text())
    config["auto_map"] = {"AutoModelForImageClassification": "evil.Model"}
    (folder / "config.json").write_text(json.dumps(config))


def no_preprocessor(folder, demo):
    shutil.copytree(demo, folder)
    (folder / "preprocessor_config.json").unlink()


def corrupt_weights(folder, demo):
    shutil.copytree(demo, folder)
    (folder / "model.safetensors").write_bytes(b"\xff" * 64)


def backbone_without_head(folder, demo):
    # Weights of a bare ViT under a classifier's config: loading would bolt
    # on a randomly initialised head.
    shutil.copytree(demo, folder)
    config = ViTConfig.from_pretrained(demo)
    ViTModel(config, add_pooling_layer=False).save_pretrained(folder)
    patched = json.loads((folder / "config.json").read_text())
    patched["architectures"] = ["ViTForImageClassification"]
    (folder / "config.json").write_text(json.dumps(patched))


def sharded(folder, demo, shard_name):
    """The demo model with its weights listed in model.safetensors.index.json as the file `shard_name`."""
    from safetensors import safe_open

    shutil.copytree(demo, folder)
    with safe_open(folder / "model.safetensors", "pt") as weights:
        keys = list(weights.keys())
    (folder / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {}, "weight_map": {key: shard_name for key in keys}})
    )
    weights = folder / "model.safetensors"
    return weights


def index_to_pickle(folder, demo):
    # A pickle under the index: only torch's weights_only default kept it from running code.
    import torch
    from safetensors.torch import load_file

    weights = sharded(folder, demo, "pytorch_model.bin")
    torch.save(load_file(weights), folder / "pytorch_model.bin")
    weights.unlink()


def index_to_outside(folder, demo):
    weights = sharded(folder, demo, "../outside.safetensors")
    weights.rename(folder.parent / "outside.safetensors")


def index_to_link_outside(folder, demo):
    weights = sharded(folder, demo, "shard-1.safetensors")
    weights.rename(folder.parent / "elsewhere.safetensors")
    (folder / "shard-1.safetensors").symlink_to(folder.parent / "elsewhere.safetensors")


def index_to_absolute_path(folder, demo):
    weights = sharded(folder, demo, str(folder.parent / "elsewhere.safetensors"))
    weights.rename(folder.parent / "elsewhere.safetensors")


@pytest.mark.parametrize(
    "make_folder, message",
    [
        pytest.param(None, "Model folder not found", id="missing"),
        pytest.param(no_config, "no config.json", id="no-config"),
        pytest.param(broken_config, "cannot be read", id="broken-config"),
        pytest.param(text_model, "not an image classifier", id="text-model"),
        pytest.param(pickled_weights_only, "safetensors only", id="pickled-weights"),
        pytest.param(custom_code, "custom Python code", id="custom-code"),
        pytest.param(no_preprocessor, "no preprocessor_config.json", id="no-preprocessor"),
        pytest.param(corrupt_weights, "could not be loaded as an image classifier", id="corrupt"),
        pytest.param(backbone_without_head, "weights do not match", id="no-head"),
        pytest.param(index_to_pickle, "points at 'pytorch_model.bin': the scanner loads safetensors only",
                     id="index-to-pickle"),
        pytest.param(index_to_outside, "points at '../outside.safetensors', which lies outside the model folder",
                     id="index-to-outside"),
        pytest.param(index_to_link_outside, "'shard-1.safetensors', which lies outside the model folder",
                     id="index-to-link-outside"),
        pytest.param(index_to_absolute_path, "which lies outside the model folder", id="index-to-absolute-path"),
    ],
)
def test_bad_model_folder_is_a_clear_error(demo_model, tmp_path, make_folder, message):
    folder = tmp_path / "model"
    if make_folder:
        make_folder(folder, demo_model)
    with pytest.raises(inference.ModelFolderError, match=message) as failure:
        inference.classify(jpeg_bytes(), folder)
    assert "Traceback" not in str(failure.value)
    assert_nothing_loaded()
    # The slot is free again: the next request goes through.
    assert inference.classify(jpeg_bytes(), demo_model)["top"]


def test_an_index_of_safetensors_shards_inside_the_folder_loads(demo_model, tmp_path):
    from safetensors.torch import load_file, save_file

    folder = tmp_path / "model"
    weights = sharded(folder, demo_model, "model-00001-of-00001.safetensors")
    save_file(load_file(weights), folder / "model-00001-of-00001.safetensors", metadata={"format": "pt"})
    weights.unlink()
    assert inference.classify(jpeg_bytes(), folder)["top"]


@pytest.mark.parametrize("make_folder", [index_to_pickle, index_to_outside])
def test_a_bad_index_is_refused_before_anything_is_loaded(demo_model, loads, tmp_path, make_folder):
    make_folder(tmp_path / "model", demo_model)
    (listed,) = inference.list_models(tmp_path)
    assert "model.safetensors.index.json points at" in listed.problem
    with pytest.raises(inference.ModelFolderError, match="model.safetensors.index.json points at"):
        inference.classify(jpeg_bytes(), tmp_path / "model")
    assert loads == []


def test_an_index_changed_while_waiting_in_line_is_refused_at_load(demo_model, tmp_path):
    folder = tmp_path / "model"
    shutil.copytree(demo_model, folder)
    request = inference.loader.loaded_model(folder)  # the folder is checked here, before queueing
    (folder / "model.safetensors.index.json").write_text(
        json.dumps({"weight_map": {"a": "pytorch_model.bin"}})
    )
    with pytest.raises(inference.ModelFolderError, match="points at 'pytorch_model.bin'"):
        with request:
            pass
    assert_nothing_loaded()


def test_unknown_device_is_a_clear_error(demo_model):
    with pytest.raises(inference.InferenceError, match="Unknown device"):
        inference.classify(jpeg_bytes(), demo_model, device="tpu")
