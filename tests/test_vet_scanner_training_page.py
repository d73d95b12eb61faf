"""The Vet scanner page with the real model: install offer, cattle gate, training section."""

import shutil

import pytest

import inference

from apptest_support import shown
from conftest import write_training_photos
from test_vet_scanner_page import allow_test_folder, jpeg, open_page, texts


@pytest.fixture
def with_lite0(models, lite0_model, monkeypatch):
    shutil.copytree(lite0_model, models / "imagenet-lite0")
    allow_test_folder(models.parent, monkeypatch)
    return models


def button(app, label):
    [found] = [b for b in app.button if b.label == label]
    return found


def train_on_page(photos, name="my-triage"):
    app = open_page()
    [folder_input] = [t for t in app.text_input if t.label == "Photos folder"]
    folder_input.set_value(str(photos)).run()
    [name_input] = [t for t in app.text_input if t.label == "Name of the new model"]
    name_input.set_value(name).run()
    button(app, "Train").click().run()
    assert not app.exception, [e.value for e in app.exception]
    return app


def test_empty_models_folder_offers_the_real_model(models):
    app = open_page()
    button(app, "Install the ImageNet model (EfficientNet-Lite0)").click().run()
    assert not app.exception
    assert inference.read_model_info(models / "imagenet-lite0").labels[345] == "ox"
    assert app.selectbox[0].value == "imagenet-lite0"
    assert "predictions mean nothing" not in texts(app.warning)


def test_a_photo_that_is_not_cattle_gets_a_warning_before_triage(with_lite0):
    app = open_page()
    app.file_uploader[0].set_value(("noise.jpg", jpeg(), "image/jpeg")).run()
    assert not app.exception
    warning = texts(app.warning)
    assert "This does not look like cattle" in warning
    assert "ox + water buffalo + bison" in warning


def test_a_cow_passes_the_gate(with_lite0, cattle_photos):
    app = open_page()
    cow = (cattle_photos / "cow_holstein_pasture.jpg").read_bytes()
    app.file_uploader[0].set_value(("cow.jpg", cow, "image/jpeg")).run()
    assert not app.exception
    assert "Cattle: ox + water buffalo + bison sum to 68%" in texts(app.success)
    assert "does not look like cattle" not in texts(app.warning)


def test_training_from_the_page_shows_accuracy_and_confusion_matrix(with_lite0, tmp_path):
    app = train_on_page(write_training_photos(tmp_path / "photos", per_class=4))
    assert "Trained **my-triage**" in texts(app.success)
    [accuracy] = app.metric
    assert "4-fold cross-validation" in accuracy.label and accuracy.value == "100%"
    counts, confusion = app.dataframe
    assert list(counts.value["photos"]) == [4, 4]
    assert confusion.value.loc["healthy", "healthy"] == 4 and confusion.value.loc["healthy", "lumpy skin"] == 0
    assert inference.read_training(with_lite0 / "my-triage")["classes"] == ["healthy", "lumpy skin"]

    # The new model is in the list; choosing it shows how it was trained.
    app.run()
    assert app.selectbox[0].options == ["imagenet-lite0", "my-triage"]
    app.selectbox[0].set_value("my-triage").run()
    assert not app.exception
    assert any("How my-triage was trained" in shown(e.label) for e in app.expander)
    assert app.metric[0].value == "100%"
    # Its triage comes after the base model's cattle gate, kept with the head.
    app.file_uploader[0].set_value(("noise.jpg", jpeg(), "image/jpeg")).run()
    assert not app.exception
    assert "This does not look like cattle" in texts(app.warning)


def test_training_with_too_few_photos_is_a_message(with_lite0, tmp_path):
    app = train_on_page(write_training_photos(tmp_path / "photos", per_class=2))
    assert "Too few photos" in texts(app.error)
    assert not (with_lite0 / "my-triage").exists()


def test_a_model_name_that_is_a_path_is_refused(with_lite0, tmp_path):
    app = train_on_page(write_training_photos(tmp_path / "photos", per_class=4), name="../escape")
    assert "is not a folder name" in texts(app.error)
    assert not (with_lite0.parent / "escape").exists()
