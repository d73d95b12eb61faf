"""The Export page's preview pages through every image the export will write (and only those), twelve to a
screen in the order written, each with its file name and caption; only the screen shown is drawn."""

import pytest
from streamlit.testing.v1 import AppTest

from curation import Manifest

from apptest_support import shown
from test_export_cli import record_scores, repeated_scan_pdf
from test_export_page import PAGE, texts


@pytest.fixture
def db(tmp_path, monkeypatch):
    """Twenty-six kept pages: three screens of the preview (12, 12, 2)."""
    pdf = repeated_scan_pdf(tmp_path / "issue.pdf", 26)
    db = tmp_path / "data" / "manifest.sqlite"
    with Manifest(db) as m:
        m.set_captions([(record_scores(m, pdf, [60 + n for n in range(26)]), 24, "the 25th page")])
    monkeypatch.setenv("CURATION_DB", str(db))
    return db


def file_names(at) -> list[str]:
    return [shown(c.value).strip("`").rsplit("-", 1)[1] for c in at.caption if shown(c.value).endswith(".jpg`")]


def image_captions(at) -> list[str]:
    return [image.proto.imgs[0].caption for image in at.get("image")]


def test_every_image_is_reachable_screen_by_screen_with_its_name_and_caption(db):
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.run()
    at.run()  # the run the page asks for once drawn: the preview's images
    assert not at.exception, at.exception
    assert {m.label: m.value for m in at.metric}["Images"] == "26"
    assert file_names(at) == [f"p{n:04d}.jpg" for n in range(1, 13)]
    assert any("Images 1–12 of 26" in shown(c.value) for c in at.caption)
    assert len(at.pagination) == 1

    at.pagination[0].set_value(3).run()
    assert not at.exception, at.exception
    assert file_names(at) == ["p0025.jpg", "p0026.jpg"]  # only this screen is drawn
    assert len(image_captions(at)) == 2 and shown(image_captions(at)[0]).endswith("issue.pdf, page 25")
    assert texts(at.code)[:2] == ["ohwx, engraving, the 25th page", "ohwx, engraving"]
    assert any("Images 25–26 of 26" in shown(c.value) for c in at.caption)

    at.pagination[0].set_value(2).run()
    assert file_names(at) == [f"p{n:04d}.jpg" for n in range(13, 25)]


def test_the_preview_counts_and_shows_only_the_images_written(tmp_path, monkeypatch):
    """With a minimum source size, the images left out are neither counted in the preview's heading nor
    shown in it: "Images 1–3 of 3" when three of five are written, as the finished ZIP holds."""
    db = tmp_path / "data" / "manifest.sqlite"
    with Manifest(db) as m:
        record_scores(m, repeated_scan_pdf(tmp_path / "small.pdf", 2, dpi=40), [70, 71])
        record_scores(m, repeated_scan_pdf(tmp_path / "large.pdf", 3), [72, 73, 74])
    monkeypatch.setenv("CURATION_DB", str(db))
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.run()
    assert any("Images 1–5 of 5" in shown(c.value) for c in at.caption)
    at.number_input(key="export_min_source").set_value(256).run()
    assert not at.exception, at.exception
    assert {m.label: m.value for m in at.metric}["Images"] == "3"
    assert any("Images 1–3 of 3" in shown(c.value) for c in at.caption)
    assert all("large.pdf" in shown(caption) for caption in image_captions(at)) and len(image_captions(at)) == 3
    assert not [info for info in at.info if "Left out" in info.value]
    [left_out] = [e for e in at.expander if "2 images left out of the ZIP" in e.label]
    assert sum("small.pdf" in shown(c.value) for c in left_out.caption) == 2  # each named, with why


def test_a_screen_past_the_end_after_the_selection_shrank_shows_the_last_one(db):
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.run()
    at.pagination[0].set_value(3).run()
    with Manifest(db) as m:
        doc_id = next(m.pages())["doc_id"]
        for page in range(13, 26):
            m.set_override(doc_id, page, False)  # thirteen pages left: two screens
    at.run()
    assert not at.exception, at.exception
    assert file_names(at) == ["p0013.jpg"] and at.pagination[0].value == 2
