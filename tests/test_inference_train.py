"""python -m inference train: a linear head on a base model's features, from labelled photos."""

import json

import pytest
from click.testing import CliRunner

import inference
from inference.cli import cli

from conftest import make_tinted_photo, write_training_photos
from test_inference_memory import models_alive


@pytest.fixture(scope="module")
def photos(tmp_path_factory):
    return write_training_photos(tmp_path_factory.mktemp("photos"), per_class=5)


@pytest.fixture(scope="module")
def head(photos, demo_model, tmp_path_factory):
    """A head on the demo ViT: fast, and the same code path as on a real base."""
    out = tmp_path_factory.mktemp("heads") / "triage"
    record = inference.train_head(photos, demo_model, out)
    return out, record


def test_training_records_classes_counts_and_held_out_accuracy(head):
    out, record = head
    assert record["classes"] == ["healthy", "lumpy skin"]
    assert record["photos_per_class"] == {"healthy": 5, "lumpy skin": 5}
    validation = record["cross_validation"]
    assert validation["folds"] == 5 and validation["photos"] == 10
    assert sum(map(sum, validation["confusion_matrix"])) == 10
    assert validation["accuracy"] == validation["correct"] / 10
    assert inference.read_training(out) == record


def test_the_head_is_a_normal_model_folder(head):
    out, _ = head
    assert not (out / "cattle_gate.safetensors").exists()  # The demo base has no gate to keep.
    assert inference.classify(make_tinted_photo((0, 0, 0)), out)["cattle"] is None
    info = inference.read_model_info(out)
    assert info.labels == ("healthy", "lumpy skin") and not info.is_demo
    config = json.loads((out / "config.json").read_text())
    assert config["architectures"] == ["ViTForImageClassification"]


def test_the_head_loads_on_demand_and_is_unloaded_after_each_request(head):
    out, _ = head
    assert models_alive() == 0
    for tint, label in (((150, 40, 20), "healthy"), ((20, 60, 150), "lumpy skin")):
        result = inference.classify(make_tinted_photo(tint, seed=999), out)
        assert result["top"][0]["label"] == label
        assert models_alive() == 0
    assert inference.queue_status() == {"busy": False, "waiting": 0}


def test_head_on_the_real_model_separates_generated_classes(photos, lite0_model, tmp_path):
    record = inference.train_head(photos, lite0_model, tmp_path / "triage")
    assert record["cross_validation"]["accuracy"] == 1.0
    assert record["feature_size"] == 1280
    assert inference.classify(make_tinted_photo((20, 60, 150), seed=7), tmp_path / "triage")[
        "top"][0]["label"] == "lumpy skin"
    rows = inference.classify_folder(photos / "healthy", tmp_path / "triage")
    assert {row["label_1"] for row in rows} == {"healthy"} and {row["cattle"] for row in rows} == {"no"}
    assert models_alive() == 0


def test_head_trained_on_the_shared_real_photos(lite0_model, cattle_photos, tmp_path):
    folder = tmp_path / "photos"
    for name, pattern in (("cattle", "[bc]*.jpg"), ("not cattle", "*_not_cattle.jpg")):
        (folder / name).mkdir(parents=True)
        for photo in cattle_photos.glob(pattern):
            (folder / name / photo.name).symlink_to(photo)
    record = inference.train_head(folder, lite0_model, tmp_path / "cattle-or-not")
    assert record["photos_per_class"] == {"cattle": 5, "not cattle": 4}
    assert record["cross_validation"]["folds"] == 4
    result = inference.classify(cattle_photos / "dog_not_cattle.jpg", tmp_path / "cattle-or-not")
    assert {p["label"] for p in result["top"]} == {"cattle", "not cattle"}
    assert models_alive() == 0
    # The head keeps its base's cattle gate: the same verdict from the same features.
    cow = cattle_photos / "cow_holstein_pasture.jpg"
    gate = inference.classify(cow, tmp_path / "cattle-or-not")["cattle"]
    assert gate["is_cattle"]
    assert gate["score"] == pytest.approx(inference.classify(cow, lite0_model)["cattle"]["score"], abs=1e-4)


def test_too_few_photos_are_refused_with_what_to_add(tmp_path, demo_model):
    folder = write_training_photos(tmp_path / "photos", per_class=3)
    with pytest.raises(inference.TrainingError, match=r"at least 4 readable photos, and these have fewer: healthy \(3\)"):
        inference.train_head(folder, demo_model, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_one_class_is_refused(tmp_path, demo_model):
    folder = write_training_photos(tmp_path / "photos", classes={"healthy": (150, 40, 20)})
    with pytest.raises(inference.TrainingError, match="at least two classes"):
        inference.train_head(folder, demo_model, tmp_path / "out")


def test_unreadable_photos_are_skipped_and_counted_out(tmp_path, demo_model):
    folder = write_training_photos(tmp_path / "photos", per_class=4)
    (folder / "healthy" / "broken.jpg").write_bytes(b"not a jpeg")
    record = inference.train_head(folder, demo_model, tmp_path / "out")
    assert record["photos_per_class"]["healthy"] == 4
    assert "broken.jpg" in record["skipped"][0]["file"]
    (folder / "healthy" / "0.jpg").write_bytes(b"broken too")
    with pytest.raises(inference.TrainingError, match=r"healthy \(3\)"):
        inference.train_head(folder, demo_model, tmp_path / "out2")
    for photo in folder.rglob("*.jpg"):
        photo.write_bytes(b"")
    with pytest.raises(inference.TrainingError, match=r"healthy \(0\), lumpy skin \(0\)"):
        inference.train_head(folder, demo_model, tmp_path / "out3")


def test_cli_train_prints_accuracy_and_refuses_to_overwrite(photos, demo_model, tmp_path):
    out = tmp_path / "my-triage"
    args = ["train", str(photos), "--base", str(demo_model), "--out", str(out), "--device", "cpu"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert "5-fold cross-validation" in result.output and "Confusion matrix" in result.output
    again = CliRunner().invoke(cli, args)
    assert again.exit_code == 1 and "already holds a model" in again.output
    assert CliRunner().invoke(cli, [*args, "--force"]).exit_code == 0


def test_cli_train_with_too_few_photos_is_a_message(tmp_path, demo_model):
    folder = write_training_photos(tmp_path / "photos", per_class=2)
    result = CliRunner().invoke(
        cli, ["train", str(folder), "--base", str(demo_model), "--out", str(tmp_path / "o")]
    )
    assert result.exit_code == 1 and "Too few photos" in result.output
    assert "Traceback" not in result.output
