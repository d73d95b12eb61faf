"""python -m inference: classify, batch, demo-model, models."""

import csv
import io
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from PIL import Image

from inference import TRIAGE_LABELS
from inference.cli import cli

REPO_ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def demo_model(tmp_path_factory):
    folder = tmp_path_factory.mktemp("models") / "demo-vit"
    result = CliRunner().invoke(cli, ["demo-model", str(folder)])
    assert result.exit_code == 0, result.output
    return folder


@pytest.fixture
def photos(tmp_path):
    paths = []
    for seed, name in enumerate(["cow1.jpg", "cow2.png"]):
        pixels = np.random.default_rng(seed).integers(0, 256, (120, 160, 3), dtype=np.uint8)
        Image.fromarray(pixels).save(tmp_path / name)
        paths.append(tmp_path / name)
    return paths


def run(*args):
    return CliRunner().invoke(cli, [str(arg) for arg in args])


def test_demo_model_writes_a_marked_model(demo_model):
    config = json.loads((demo_model / "config.json").read_text())
    assert config["vet_scanner_demo"] is True
    assert tuple(config["id2label"].values()) == TRIAGE_LABELS


def test_demo_model_refuses_to_overwrite_without_force(demo_model, tmp_path):
    folder = tmp_path / "demo"
    assert run("demo-model", folder).exit_code == 0
    again = run("demo-model", folder)
    assert again.exit_code == 1
    assert "already holds a model" in again.output and "--force" in again.output
    assert run("demo-model", folder, "--force").exit_code == 0


def test_classify_json_gives_one_result_per_image(demo_model, photos):
    result = run("classify", *photos, "--model", demo_model, "--json", "--top-k", "3")
    assert result.exit_code == 0, result.output
    answers = json.loads(result.stdout)
    assert [answer["image"] for answer in answers] == [str(p) for p in photos]
    for answer in answers:
        assert len(answer["top"]) == 3
        assert {p["label"] for p in answer["top"]} <= set(TRIAGE_LABELS)
        assert answer["device"] == "cpu" and answer["is_demo"] is True
        assert set(answer["seconds"]) == {"wait", "load", "infer", "unload"}


def test_classify_text_output(demo_model, photos):
    result = run("classify", photos[0], "--model", demo_model, "--top-k", "2")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == str(photos[0])
    assert len([line for line in lines if "%" in line]) == 2
    assert "load" in lines[-1] and "unload" in lines[-1]
    assert "predictions mean nothing" in lines[-1]


def test_a_bad_image_is_reported_and_the_others_go_on(demo_model, photos, tmp_path):
    bad = tmp_path / "notes.jpg"
    bad.write_text("not a photo")
    result = run("classify", photos[0], bad, photos[1], "--model", demo_model, "--json")
    assert result.exit_code == 1
    answers = json.loads(result.stdout)
    assert [("error" in answer) for answer in answers] == [False, True, False]
    assert "not an image" in answers[1]["error"]


def test_missing_model_is_a_message_not_a_traceback(photos, tmp_path):
    result = run("classify", photos[0], "--model", tmp_path / "nowhere")
    assert result.exit_code == 1
    assert "Model folder not found" in result.output
    assert "Traceback" not in result.output


def test_batch_writes_a_csv(demo_model, photos, tmp_path):
    output = tmp_path / "out.csv"
    result = run("batch", photos[0].parent, "--model", demo_model, "--top-k", "2", "-o", output)
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader(io.StringIO(output.read_text())))
    assert [row["file"] for row in rows] == ["cow1.jpg", "cow2.png"]
    assert all(row["label_1"] in TRIAGE_LABELS and row["error"] == "" for row in rows)
    assert float(rows[0]["score_1"]) >= float(rows[0]["score_2"])


def test_batch_of_an_empty_folder_fails_clearly(demo_model, tmp_path):
    result = run("batch", tmp_path, "--model", demo_model)
    assert result.exit_code == 1
    assert "no photos" in result.output


def test_models_lists_usable_and_broken_folders(demo_model, tmp_path):
    (tmp_path / "bert").mkdir()
    (tmp_path / "bert" / "config.json").write_text('{"architectures": ["BertModel"]}')
    run("demo-model", tmp_path / "demo")
    result = run("models", "--dir", tmp_path)
    assert result.exit_code == 0
    assert "demo (untrained demo): 6 labels" in result.output
    assert "bert: unusable" in result.output


def test_python_dash_m_entry_point_and_help():
    # A real subprocess: `python -m inference` works, and --help is quick
    # because torch is imported only when a command needs it.
    result = subprocess.run(
        [sys.executable, "-m", "inference", "--help"],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=60,
    )
    assert result.returncode == 0
    for command in ("classify", "batch", "demo-model", "models"):
        assert command in result.stdout
    # The library stays free of Streamlit, and of torch until a request.
    check = subprocess.run(
        [sys.executable, "-c",
         "import sys, inference; print(sorted({'torch', 'streamlit'} & set(sys.modules)))"],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=60,
    )
    assert check.stdout.strip() == "[]"
