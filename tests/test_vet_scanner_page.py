"""pages/vet_scanner.py, run by Streamlit's AppTest."""

import io
import json
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from streamlit.testing.v1 import AppTest

import inference
from apptest_support import shown
from inference.loader import model_slot

PAGE = str(Path(__file__).resolve().parent.parent / "pages" / "vet_scanner.py")
TIMEOUT = 120  # The first request in a process imports torch.


@pytest.fixture
def with_demo(models, monkeypatch):
    inference.write_demo_model(models / "demo-vit")
    allow_test_folder(models.parent, monkeypatch)
    return models


def allow_test_folder(folder, monkeypatch):
    """The test's folder is the server's allowed folder (and holds its manifest's place)."""
    monkeypatch.setenv("CURATION_DB", str(folder / "data" / "manifest.sqlite"))
    monkeypatch.setenv("CURATION_ROOTS", str(folder))


def jpeg(seed=0):
    pixels = np.random.default_rng(seed).integers(0, 256, (120, 160, 3), dtype=np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, "JPEG")
    return buffer.getvalue()


def open_page():
    app = AppTest.from_file(PAGE, default_timeout=TIMEOUT)
    app.run()
    assert not app.exception
    return app


def charts(app):
    return [node for node in walk(app._tree) if getattr(node, "type", None) == "vega_lite_chart"]


def walk(node):
    for child in getattr(node, "children", {}).values():
        yield child
        yield from walk(child)


def texts(elements):
    """What a person reads in these elements (Markdown escapes resolved)."""
    return " ".join(shown(element.value) for element in elements)


def test_without_models_the_page_says_how_to_add_one(models):
    app = open_page()
    guide = texts(app.info)
    assert "No model yet" in guide
    assert "python -m inference demo-model" in guide and "models/README.md" in guide
    assert "install-model imagenet-lite0" in guide
    assert not app.file_uploader

    [demo] = [b for b in app.button if b.label == "Create the demo model"]
    demo.click().run()
    assert not app.exception
    assert (models / "demo-vit" / "config.json").is_file()
    assert app.selectbox[0].value == "demo-vit"


def test_a_demo_model_gets_a_banner(with_demo):
    app = open_page()
    assert "predictions mean nothing" in texts(app.warning)
    assert app.selectbox[0].options == ["demo-vit (untrained demo)"]


def test_a_real_model_gets_no_banner(with_demo):
    config_path = with_demo / "demo-vit" / "config.json"
    config = json.loads(config_path.read_text())
    del config["vet_scanner_demo"]
    config_path.write_text(json.dumps(config))
    app = open_page()
    assert "predictions mean nothing" not in texts(app.warning)


def test_a_broken_model_folder_is_explained(with_demo):
    (with_demo / "bert").mkdir()
    (with_demo / "bert" / "config.json").write_text('{"architectures": ["BertModel"]}')
    app = open_page()
    assert "bert" in texts(app.warning) and "not an image classifier" in texts(app.warning)
    assert app.selectbox[0].options == ["demo-vit (untrained demo)"]


def test_uploaded_photos_get_a_chart_timings_and_errors(with_demo, monkeypatch):
    calls = []
    real_classify = inference.classify

    def counting_classify(*args, **kwargs):
        calls.append(args[0].name)
        return real_classify(*args, **kwargs)

    monkeypatch.setattr(inference, "classify", counting_classify)
    app = open_page()
    app.slider[0].set_value(3).run()
    app.file_uploader[0].set_value(
        [("cow.jpg", jpeg(), "image/jpeg"), ("notes.png", b"not a photo", "image/png")]
    ).run()

    assert not app.exception
    assert "notes.png: not an image" in texts(app.error)
    [chart] = charts(app)
    spec = json.loads(chart.proto.spec)
    labels = [row["label"] for row in next(iter(json_datasets(chart, spec)))]
    assert len(labels) == 3 and set(labels) <= set(inference.TRIAGE_LABELS)
    assert any(
        "cpu · load" in caption.value and "unload" in caption.value for caption in app.caption
    )
    assert sorted(calls) == ["cow.jpg", "notes.png"]

    app.run()  # A rerun shows the results again without new requests.
    assert sorted(calls) == ["cow.jpg", "notes.png"]
    assert len(charts(app)) == 1


def json_datasets(chart, spec):
    """The rows behind a chart: inline in the spec or in its Arrow datasets."""
    import pyarrow as pa

    if spec.get("datasets"):
        return list(spec["datasets"].values())
    tables = [pa.ipc.open_stream(d.data.data).read_all() for d in chart.proto.datasets]
    if chart.proto.data.data:
        tables.append(pa.ipc.open_stream(chart.proto.data.data).read_all())
    return [table.to_pylist() for table in tables]


def test_batch_mode_gives_a_table_and_a_csv(with_demo, tmp_path):
    photos = tmp_path / "herd"
    photos.mkdir()
    for seed, name in enumerate(["a.jpg", "b.jpg"]):
        (photos / name).write_bytes(jpeg(seed))
    (photos / "c.png").write_bytes(b"broken")

    app = open_page()
    app.text_input[0].set_value(str(photos)).run()
    [classify_folder] = [b for b in app.button if b.label == "Classify the folder"]
    classify_folder.click().run()

    assert not app.exception
    assert "3 photos" in texts(app.success) and "1 could not be read" in texts(app.success)
    table = app.dataframe[0].value
    assert list(table["file"]) == ["a.jpg", "b.jpg", "c.png"]
    assert set(table["label_1"][:2]) <= set(inference.TRIAGE_LABELS)
    assert "not an image" in table["error"][2]
    [download] = app.get("download_button")
    assert download.label == "Download CSV"


def test_batch_mode_with_a_missing_folder_shows_an_error(with_demo, tmp_path):
    app = open_page()
    app.text_input[0].set_value(str(tmp_path / "nowhere")).run()
    [classify_folder] = [b for b in app.button if b.label == "Classify the folder"]
    classify_folder.click().run()
    assert not app.exception
    assert "Nothing at" in texts(app.error)


def test_the_page_shows_when_the_model_is_busy(with_demo):
    with model_slot():
        app = open_page()
    assert "Another request is using the model" in texts(app.info)
    app.run()
    assert "Another request is using the model" not in texts(app.info)


def test_a_queued_upload_waits_then_runs(with_demo):
    app = open_page()
    app.file_uploader[0].set_value(("cow.jpg", jpeg(), "image/jpeg"))
    with model_slot():
        run = threading.Thread(target=app.run)
        run.start()
        deadline = time.monotonic() + 60
        while inference.queue_status()["waiting"] < 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert inference.queue_status()["waiting"] == 1  # The page's request is in line.
        time.sleep(0.3)
    run.join(timeout=TIMEOUT)
    assert not app.exception
    assert len(charts(app)) == 1
    assert any("waited" in caption.value for caption in app.caption)


def test_the_page_names_what_the_model_ranks():
    from pages.vet_scanner import model_kind  # noqa: E402 - the page module is importable without a run

    imagenet = inference.ModelInfo("imagenet-lite0", Path("."), labels=inference.install.imagenet_classes())
    assert model_kind(imagenet, training=None) == "imagenet"  # ImageNet classes, never "conditions"
    assert model_kind(imagenet, training={"classes": ["healthy", "lame"]}) == "triage"  # a head trained here
    assert model_kind(inference.ModelInfo("x", Path("."), labels=("a", "b"), is_demo=True), None) == "demo"


def test_a_photo_chart_wears_the_theme_and_memory_is_folded_away(with_demo):
    app = open_page()
    assert "ranks its made-up conditions" in texts(app.caption)  # the demo is not a triage model
    app.file_uploader[0].set_value([("cow.jpg", jpeg(), "image/jpeg")]).run()
    [chart] = charts(app)
    spec = json.loads(chart.proto.spec)
    marks = [layer["mark"] for layer in spec["layer"]]
    assert marks[0]["color"] == "#8a4b2a"  # primaryColor of .streamlit/config.toml
    [timing] = [c.value for c in app.caption if "cpu · load" in c.value]
    assert "RSS" not in timing and "MiB" not in timing
    [memory] = [e for e in app.expander if e.label == "Server memory"]
    assert "RSS" in " ".join(c.value for c in memory.caption)
