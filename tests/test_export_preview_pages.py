"""The Export page's preview pages through every image the export will write, four to a screen in the
order written, each with its file name and caption; only the screen shown is drawn."""

import pytest
from streamlit.testing.v1 import AppTest

from curation import Manifest

from apptest_support import shown
from test_export_cli import record_scores, repeated_scan_pdf
from test_export_page import PAGE, texts


@pytest.fixture
def db(tmp_path, monkeypatch):
    """Ten kept pages: three screens of the preview (4, 4, 2)."""
    pdf = repeated_scan_pdf(tmp_path / "issue.pdf", 10)
    db = tmp_path / "data" / "manifest.sqlite"
    with Manifest(db) as m:
        m.set_captions([(record_scores(m, pdf, [60 + n for n in range(10)]), 8, "the ninth page")])
    monkeypatch.setenv("CURATION_DB", str(db))
    return db


def file_names(at) -> list[str]:
    return [shown(c.value).strip("`").rsplit("-", 1)[1] for c in at.caption if shown(c.value).endswith(".jpg`")]


def image_captions(at) -> list[str]:
    return [image.proto.imgs[0].caption for image in at.get("image")]


def test_every_image_is_reachable_screen_by_screen_with_its_name_and_caption(db):
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.run()
    assert not at.exception, at.exception
    assert {m.label: m.value for m in at.metric}["Images"] == "10"
    assert file_names(at) == ["p0001.jpg", "p0002.jpg", "p0003.jpg", "p0004.jpg"]
    assert any("Images 1–4 of 10" in shown(c.value) for c in at.caption)
    assert len(at.pagination) == 1

    at.pagination[0].set_value(3).run()
    assert not at.exception, at.exception
    assert file_names(at) == ["p0009.jpg", "p0010.jpg"]  # only this screen is drawn
    assert len(image_captions(at)) == 2 and shown(image_captions(at)[0]).endswith("issue.pdf, page 9")
    assert texts(at.code)[:2] == ["ohwx, engraving, the ninth page", "ohwx, engraving"]
    assert any("Images 9–10 of 10" in shown(c.value) for c in at.caption)

    at.pagination[0].set_value(2).run()
    assert file_names(at) == ["p0005.jpg", "p0006.jpg", "p0007.jpg", "p0008.jpg"]


def test_a_screen_past_the_end_after_the_selection_shrank_shows_the_last_one(db):
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.run()
    at.pagination[0].set_value(3).run()
    with Manifest(db) as m:
        doc_id = next(m.pages())["doc_id"]
        for page in range(5, 10):
            m.set_override(doc_id, page, False)  # five pages left: two screens
    at.run()
    assert not at.exception, at.exception
    assert file_names(at) == ["p0005.jpg"] and at.pagination[0].value == 2
