"""inference.classify and classify_folder: labels, scores, inputs, the queue."""

import csv
import io
import json
import math
import threading
import time

import psutil
import pytest

import inference
from inference.loader import model_slot

from conftest import make_photo

LABELS = ("calf scours", "bovine papillomatosis", "healthy coat", "mange")


@pytest.fixture(scope="module")
def four_label_model(tmp_path_factory):
    return inference.write_demo_model(
        tmp_path_factory.mktemp("models") / "four", labels=LABELS, seed=3
    )


def png_bytes(image):
    buffer = io.BytesIO()
    image.save(buffer, "PNG")
    return buffer.getvalue()


def reference_logits(model_dir, photo):
    """What transformers itself says, without the scanner in between."""
    import torch
    from transformers import AutoImageProcessor, AutoModelForImageClassification

    processor = AutoImageProcessor.from_pretrained(model_dir, backend="pil")
    model = AutoModelForImageClassification.from_pretrained(model_dir).eval()
    with torch.no_grad():
        logits = model(**processor(images=photo, return_tensors="pt")).logits[0]
    return {model.config.id2label[i]: logit for i, logit in enumerate(logits.tolist())}


def test_labels_come_from_the_model_config(four_label_model):
    result = inference.classify(make_photo(), four_label_model, top_k=10)
    assert sorted(p["label"] for p in result["top"]) == sorted(LABELS)


def test_renaming_labels_in_config_renames_predictions(tmp_path):
    model_dir = inference.write_demo_model(tmp_path / "renamed", labels=LABELS, seed=3)
    config_path = model_dir / "config.json"
    config = json.loads(config_path.read_text())
    config["id2label"] = {k: v.upper() for k, v in config["id2label"].items()}
    config_path.write_text(json.dumps(config))
    result = inference.classify(make_photo(), model_dir, top_k=10)
    assert sorted(p["label"] for p in result["top"]) == sorted(label.upper() for label in LABELS)


def test_scores_are_probabilities_best_first(demo_model):
    top = inference.classify(make_photo(), demo_model, top_k=6)["top"]
    scores = [p["score"] for p in top]
    assert scores == sorted(scores, reverse=True)
    assert all(0 <= s <= 1 for s in scores)
    assert math.isclose(sum(scores), 1.0, abs_tol=1e-5)


def test_scores_match_transformers_directly(demo_model):
    photo = make_photo(seed=7)
    logits = reference_logits(demo_model, photo)
    total = sum(math.exp(logit) for logit in logits.values())
    expected = {label: math.exp(logit) / total for label, logit in logits.items()}
    top = inference.classify(photo, demo_model, top_k=6)["top"]
    assert {p["label"]: pytest.approx(p["score"], abs=1e-5) for p in top} == expected
    assert top[0]["label"] == max(expected, key=expected.get)


def test_top_k_limits_the_list(demo_model):
    assert len(inference.classify(make_photo(), demo_model, top_k=2)["top"]) == 2
    assert len(inference.classify(make_photo(), demo_model, top_k=50)["top"]) == 6
    with pytest.raises(ValueError):
        inference.classify(make_photo(), demo_model, top_k=0)


def test_multi_label_models_score_each_label_on_its_own(tmp_path):
    model_dir = inference.write_demo_model(tmp_path / "multi")
    config = json.loads((model_dir / "config.json").read_text())
    config["problem_type"] = "multi_label_classification"
    (model_dir / "config.json").write_text(json.dumps(config))
    photo = make_photo(seed=4)
    top = inference.classify(photo, model_dir, top_k=6)["top"]
    logits = reference_logits(model_dir, photo)
    expected = {label: 1 / (1 + math.exp(-logit)) for label, logit in logits.items()}
    assert {p["label"]: pytest.approx(p["score"], abs=1e-5) for p in top} == expected
    assert sum(expected.values()) > 1.5  # Not a softmax.


def test_accepts_pil_path_bytes_and_file(demo_model, tmp_path):
    photo = make_photo(seed=2)
    path = tmp_path / "cow.png"
    photo.save(path)
    sources = [photo, path, str(path), png_bytes(photo), io.BytesIO(png_bytes(photo))]
    results = [inference.classify(source, demo_model, top_k=3)["top"] for source in sources]
    for top in results[1:]:
        assert [p["label"] for p in top] == [p["label"] for p in results[0]]
        assert [p["score"] for p in top] == pytest.approx([p["score"] for p in results[0]])


def test_greyscale_and_alpha_photos_are_converted(demo_model):
    grey = make_photo().convert("L")
    rgba = make_photo().convert("RGBA")
    assert len(inference.classify(grey, demo_model)["top"]) == 5
    assert len(inference.classify(rgba, demo_model)["top"]) == 5


def test_result_reports_device_timings_and_memory(demo_model):
    result = inference.classify(make_photo(), demo_model)
    assert result["device"] == "cpu"
    assert result["dtype"] == "float32"
    assert result["model"] == "demo-vit"
    assert result["is_demo"] is True
    assert set(result["seconds"]) == {"wait", "load", "infer", "unload"}
    assert all(seconds >= 0 for seconds in result["seconds"].values())
    assert result["seconds"]["load"] > 0 and result["seconds"]["infer"] > 0
    assert result["memory"]["rss_before_bytes"] > 10 * 2**20
    assert result["memory"]["rss_after_bytes"] > 10 * 2**20
    json.dumps(result)  # JSON-ready, for --json and logs


def test_demo_model_is_small_marked_and_safetensors(demo_model):
    config = json.loads((demo_model / "config.json").read_text())
    assert config["vet_scanner_demo"] is True
    assert list(config["id2label"].values()) == list(inference.TRIAGE_LABELS)
    assert (demo_model / "model.safetensors").is_file()
    assert not list(demo_model.glob("*.bin"))
    # float32 weights: bytes / 4 = parameters, "a few million".
    parameters = (demo_model / "model.safetensors").stat().st_size / 4
    assert 1e6 < parameters < 10e6
    info = inference.read_model_info(demo_model)
    assert info.is_demo and info.labels == inference.TRIAGE_LABELS


def test_list_models_reports_unusable_folders(tmp_path):
    inference.write_demo_model(tmp_path / "demo-vit")
    (tmp_path / "text-model").mkdir()
    (tmp_path / "text-model" / "config.json").write_text(
        json.dumps({"model_type": "bert", "architectures": ["BertForMaskedLM"]})
    )
    (tmp_path / "notes").mkdir()  # No config.json: not a model, not listed.
    models = {model.name: model for model in inference.list_models(tmp_path)}
    assert set(models) == {"demo-vit", "text-model"}
    assert models["demo-vit"].problem is None
    assert "not an image classifier" in models["text-model"].problem


def test_models_dir_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("VET_MODELS_DIR", str(tmp_path))
    assert inference.models_dir() == tmp_path
    monkeypatch.delenv("VET_MODELS_DIR")
    assert inference.models_dir().name == "models"
    assert (inference.models_dir().parent / "inference").is_dir()


def test_a_request_waits_while_another_holds_the_model(demo_model):
    waits, results = [], []

    def request():
        results.append(inference.classify(make_photo(), demo_model, on_wait=waits.append))

    with model_slot():
        worker = threading.Thread(target=request)
        worker.start()
        deadline = time.monotonic() + 30
        while inference.queue_status()["waiting"] < 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert inference.queue_status() == {"busy": True, "waiting": 1}
        time.sleep(0.2)
        assert not results  # Still queued behind us.
    worker.join(timeout=60)
    assert waits == [1]
    assert results and results[0]["seconds"]["wait"] >= 0.2
    assert inference.queue_status() == {"busy": False, "waiting": 0}


def test_waiting_too_long_is_a_clear_error(demo_model):
    with model_slot():
        with pytest.raises(inference.ModelBusyError, match="busy"):
            inference.classify(make_photo(), demo_model, wait_timeout=0.1)
    assert inference.queue_status() == {"busy": False, "waiting": 0}


def test_classify_folder_gives_one_row_per_photo(demo_model, tmp_path):
    photos = tmp_path / "herd"
    (photos / "barn").mkdir(parents=True)
    for index, name in enumerate(["a.jpg", "b.png", "c.webp"]):
        make_photo(seed=index).save(photos / name)
    make_photo(seed=9).save(photos / "barn" / "d.png")
    (photos / "notes.txt").write_text("not a photo")
    (photos / "broken.jpg").write_bytes(b"not a jpeg")
    progress = []

    rows = inference.classify_folder(
        photos, demo_model, top_k=2, on_progress=lambda done, total: progress.append((done, total))
    )

    assert [row["file"] for row in rows] == ["a.jpg", "b.png", "broken.jpg", "c.webp"]
    assert progress[-1] == (4, 4)
    broken = rows[2]
    assert "not an image" in broken["error"] and broken["label_1"] == ""
    single = inference.classify(photos / "b.png", demo_model, top_k=2)["top"]
    assert rows[1]["label_1"] == single[0]["label"]
    assert rows[1]["score_1"] == pytest.approx(single[0]["score"])
    assert rows[1]["score_1"] >= rows[1]["score_2"]

    recursive = inference.classify_folder(photos, demo_model, top_k=2, recursive=True)
    assert "barn/d.png" in [row["file"] for row in recursive]

    table = list(csv.DictReader(io.StringIO(inference.rows_to_csv(rows))))
    assert list(table[0]) == [
        "file", "model", "label_1", "score_1", "label_2", "score_2", "infer_seconds", "error",
    ]
    assert len(table) == 4 and table[0]["model"] == "demo-vit"


def test_classify_folder_without_photos_is_a_clear_error(demo_model, tmp_path):
    with pytest.raises(inference.BadImageError, match="no photos"):
        inference.classify_folder(tmp_path, demo_model)
    with pytest.raises(inference.BadImageError, match="no such folder"):
        inference.classify_folder(tmp_path / "missing", demo_model)


def test_the_scanner_starts_no_process_so_none_outlives_the_server(demo_model, tmp_path):
    """The model loads, predicts and unloads in the server's own process: no helper process to leave behind."""
    for n in range(3):
        make_photo(seed=n).save(tmp_path / f"{n}.png")
    before = {child.pid for child in psutil.Process().children(recursive=True)}
    started = set()
    on_progress = lambda done, total: started.update(
        child.pid for child in psutil.Process().children(recursive=True) if child.pid not in before)
    inference.classify_folder(tmp_path, demo_model, on_progress=on_progress)
    inference.classify(make_photo(), demo_model, top_k=3)
    assert started == set() and {child.pid for child in psutil.Process().children(recursive=True)} <= before
