"""The cattle gate: ox + water buffalo + bison, before any triage."""

import csv
import io
import json

import pytest
from click.testing import CliRunner

import inference
from inference.cli import cli

from conftest import make_photo

CATTLE = {"cow_holstein_pasture.jpg", "bison_american.jpg"}
NOT_CATTLE = {"sheep_not_cattle.jpg", "horse_not_cattle.jpg", "pig_not_cattle.jpg", "dog_not_cattle.jpg"}


def test_gate_sums_the_bovine_classes():
    labels = ("dog", "ox", "water buffalo", "bison", "ram")
    gate = inference.cattle_gate([0.1, 0.2, 0.05, 0.05, 0.6], labels)
    assert gate["score"] == pytest.approx(0.3)
    assert gate["is_cattle"] is True
    assert gate["classes"] == ["ox", "water buffalo", "bison"]
    assert inference.cattle_gate([0.7, 0.1, 0.05, 0.05, 0.1], labels)["is_cattle"] is False


def test_a_model_without_bovine_classes_has_no_gate(demo_model):
    assert inference.cattle_gate([0.5, 0.5], ("healthy", "pinkeye")) is None
    assert inference.classify(make_photo(), demo_model)["cattle"] is None
    rows = inference.classify_folder(write_photos(demo_model.parent / "herd"), demo_model)
    assert "cattle" not in rows[0]


def write_photos(folder, count=2):
    folder.mkdir(exist_ok=True)
    for seed in range(count):
        make_photo(seed).save(folder / f"{seed}.jpg")
    return folder


def test_real_model_lets_cattle_in_and_keeps_other_animals_out(lite0_model, cattle_photos):
    for name in sorted(CATTLE | NOT_CATTLE):
        gate = inference.classify(cattle_photos / name, lite0_model)["cattle"]
        assert gate["is_cattle"] is (name in CATTLE), (name, gate["score"])


def test_classify_json_carries_the_gate(lite0_model, cattle_photos):
    photos = [str(cattle_photos / name) for name in ("bison_american.jpg", "dog_not_cattle.jpg")]
    result = CliRunner().invoke(cli, ["classify", *photos, "--model", str(lite0_model), "--json"])
    assert result.exit_code == 0, result.output
    bison, dog = json.loads(result.output)
    assert bison["cattle"]["is_cattle"] and bison["top"][0]["label"] == "bison"
    assert not dog["cattle"]["is_cattle"] and dog["cattle"]["score"] < 0.01


def test_classify_text_says_does_not_look_like_cattle(lite0_model, cattle_photos):
    result = CliRunner().invoke(
        cli, ["classify", str(cattle_photos / "sheep_not_cattle.jpg"), "--model", str(lite0_model)]
    )
    assert result.exit_code == 0, result.output
    assert "this does not look like cattle (ox + water buffalo + bison" in result.output


def test_batch_has_a_cattle_column(lite0_model, cattle_photos, tmp_path):
    output = tmp_path / "herd.csv"
    result = CliRunner().invoke(
        cli, ["batch", str(cattle_photos), "--model", str(lite0_model), "-o", str(output)]
    )
    assert result.exit_code == 0, result.output
    rows = {row["file"]: row for row in csv.DictReader(io.StringIO(output.read_text()))}
    assert list(rows["bison_american.jpg"])[:4] == ["file", "model", "cattle", "cattle_score"]
    assert {name for name, row in rows.items() if row["cattle"] == "yes"} >= CATTLE
    assert all(rows[name]["cattle"] == "no" for name in NOT_CATTLE)
