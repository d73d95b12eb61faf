"""The Vet scanner reads server folders only under the allowed folders: the page refuses others as the
Ingest page does, and the readers check each folder and photo again as they open it."""

import os

import pytest

import inference
from inference.images import find_photos

from conftest import make_photo, write_training_photos
from test_vet_scanner_page import allow_test_folder, open_page, texts


@pytest.fixture
def place(tmp_path):
    """An allowed folder with a herd in it, and a private folder (0700) outside with photos and classes."""
    allowed = tmp_path / "allowed"
    herd = allowed / "herd"
    herd.mkdir(parents=True)
    for seed in range(2):
        make_photo(seed).save(herd / f"cow-{seed}.jpg")
    private = tmp_path / "private"
    write_training_photos(private / "classes", per_class=4, classes={"secret-a": (200, 0, 0), "secret-b": (0, 0, 200)})
    make_photo(9).save(private / "secret.jpg")
    os.chmod(private, 0o700)
    return allowed, herd, private


# The library: every folder and photo checked as it is opened --------------------------------------


def test_a_folder_outside_is_not_listed(place):
    allowed, _, private = place
    with pytest.raises(inference.BadImageError, match="outside the allowed folders"):
        find_photos(private, roots=[allowed])
    with pytest.raises(inference.BadImageError, match="outside the allowed folders"):
        find_photos(allowed / "herd" / ".." / ".." / "private", roots=[allowed])


def test_a_photo_linked_in_from_outside_gets_a_refusal_row(place, demo_model):
    allowed, herd, private = place
    (herd / "planted.jpg").symlink_to(private / "secret.jpg")
    rows = inference.classify_folder(herd, demo_model, top_k=1, roots=[allowed])
    by_file = {row["file"]: row for row in rows}
    assert "outside the allowed folders" in by_file["planted.jpg"]["error"]
    assert by_file["planted.jpg"]["label_1"] == ""
    assert by_file["cow-0.jpg"]["error"] == "" and by_file["cow-0.jpg"]["label_1"]
    assert str(private) not in by_file["planted.jpg"]["error"]


def test_a_subfolder_linked_out_is_not_searched(place):
    allowed, herd, private = place
    (herd / "more").symlink_to(private / "classes")
    assert [p.name for p in find_photos(herd, recursive=True, roots=[allowed])] == ["cow-0.jpg", "cow-1.jpg"]


def test_training_outside_is_refused(place, demo_model, tmp_path):
    allowed, _, private = place
    with pytest.raises(inference.TrainingError, match="outside the allowed folders"):
        inference.train_head(private / "classes", demo_model, tmp_path / "out", roots=[allowed])
    assert not (tmp_path / "out").exists()


def test_a_class_linked_out_is_no_label(place, demo_model, tmp_path):
    allowed, _, private = place
    photos = write_training_photos(allowed / "photos", per_class=4)
    (photos / "secret-a").symlink_to(private / "classes" / "secret-a")
    record = inference.train_head(photos, demo_model, tmp_path / "out", roots=[allowed])
    assert record["classes"] == ["healthy", "lumpy skin"]
    assert any("secret-a" in s["file"] and "outside the allowed folders" in s["error"] for s in record["skipped"])


# The page: the same check and messages as the Ingest page ------------------------------------------


@pytest.fixture
def page(models, place, monkeypatch):
    inference.write_demo_model(models / "demo-vit")
    allowed, _, _ = place
    allow_test_folder(allowed, monkeypatch)
    return open_page()


def test_the_page_refuses_a_folder_outside(page, place):
    _, _, private = place
    page.text_input[0].set_value(str(private)).run()
    [classify] = [b for b in page.button if b.label == "Classify the folder"]
    classify.click().run()
    assert not page.exception
    assert "outside the folders this server may read" in texts(page.error)
    assert not page.dataframe  # nothing listed, nothing classified


def test_the_page_refuses_a_folder_holding_links_out(page, place):
    _, herd, private = place
    (herd / "planted.jpg").symlink_to(private / "secret.jpg")
    page.text_input[0].set_value(str(herd)).run()
    [classify] = [b for b in page.button if b.label == "Classify the folder"]
    classify.click().run()
    assert "holds links to places outside the allowed folders" in texts(page.error)
    assert not page.dataframe


def test_the_page_classifies_a_folder_inside(page, place):
    _, herd, _ = place
    page.text_input[0].set_value(str(herd)).run()
    [classify] = [b for b in page.button if b.label == "Classify the folder"]
    classify.click().run()
    assert "2 photos" in texts(page.success)


def test_the_page_refuses_to_train_on_a_folder_outside(page, place, models):
    _, _, private = place
    [folder] = [t for t in page.text_input if t.label == "Photos folder"]
    folder.set_value(str(private / "classes")).run()
    [train] = [b for b in page.button if b.label == "Train"]
    train.click().run()
    assert not page.exception
    assert "outside the folders this server may read" in texts(page.error)
    assert not (models / "my-triage").exists()


@pytest.fixture
def loops(place):
    """links/loop1 -> loop2 -> loop1, inside the allowed folder."""
    allowed, _, _ = place
    links = allowed / "links"
    links.mkdir()
    (links / "loop1").symlink_to(links / "loop2")
    (links / "loop2").symlink_to(links / "loop1")
    return links


@pytest.mark.parametrize("folder", ["links/loop1", "links", "."])
def test_a_link_loop_is_refused_with_a_message_for_a_viewer(models, place, loops, monkeypatch, folder):
    """The loop itself, or a folder holding it, typed by a viewer (who may classify): a one-line refusal,
    never a traceback naming the server's code."""
    from apptest_support import signed_in_as
    from test_auth import SECRETS
    from test_vet_scanner_page import PAGE, TIMEOUT
    from streamlit.testing.v1 import AppTest

    inference.write_demo_model(models / "demo-vit")
    allowed, _, _ = place
    allow_test_folder(allowed, monkeypatch)
    page = AppTest.from_file(PAGE, default_timeout=TIMEOUT)
    page.secrets.update(SECRETS)
    page.user = signed_in_as("bo@example.org")  # a viewer
    page.run()
    [box] = [t for t in page.text_input if t.label == "Folder"]
    box.set_value(str(allowed / folder)).run()
    [classify] = [b for b in page.button if b.label == "Classify the folder"]
    classify.click().run()
    assert not page.exception, [e.value for e in page.exception]
    [error] = page.error
    assert "round in a loop" in texts([error]) and "\n" not in error.value
    assert "Traceback" not in error.value and ".py" not in error.value
    assert not page.dataframe
