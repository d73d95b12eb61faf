"""The export follows the curator's picture decisions: an excluded picture survives re-scoring and stays out,
an added one is cut from its page, a deleted one is never written, a page whose pictures are all excluded
goes, picture captions reach the caption files and manifest.csv, and `--crop picture` cuts to the largest
picture as the curator left it."""

import zipfile

import pytest

from curation.export import ExportSettings
from curation.runs.ingest import Rescore

from conftest import manifest_copy
from test_export_crop import box_of
from test_export_pictures import exported, pages, scored_db  # noqa: F401  (fixtures)

MARGIN = 9  # 1 % of the 864-pixel page's width, rounded up
PICTURES = ExportSettings(size=64, crop="pictures", template="{trigger}, {caption}")


@pytest.fixture
def manifest(scored_db, tmp_path):  # noqa: F811
    """two.pdf: page 1 two drawings (picture 1 the larger), page 2 text; both pages included by the curator."""
    with manifest_copy(scored_db, tmp_path) as m:
        yield m


def doc_id(manifest):
    return next(manifest.pages())["doc_id"]


def picture(manifest, page, number):
    return manifest.picture_by_number(doc_id(manifest), page, number)


def written(rows):
    """(page, picture) of each image, as manifest.csv lists them."""
    return [(r["page"], r["picture"]) for r in rows]


def test_an_excluded_picture_survives_rescoring_and_is_not_exported(manifest, tmp_path):
    manifest.set_picture_override(picture(manifest, 0, 2)["id"], False)
    report = Rescore(manifest, all_pages=True, workers=1).run()
    assert report.pages_scored == 2
    again = picture(manifest, 0, 2)
    assert again["keep"] == 0 and again["rank"] is not None  # found again, matched, its decision kept
    rows, _, _ = exported(manifest, tmp_path / "lora.zip", PICTURES)
    assert written(rows) == [("1", "1"), ("2", "")]


def test_an_added_picture_is_exported_cut_to_its_box(manifest, tmp_path):
    box = (100, 500, 500, 900)  # drawn on the text page, in reference pixels
    added = manifest.add_picture(doc_id(manifest), 1, box)
    rows, images, _ = exported(manifest, tmp_path / "lora.zip", PICTURES)
    assert written(rows) == [("1", "1"), ("1", "2"), ("2", "1")]
    row = rows[2]
    assert row["file"].endswith("p0002_pic1.jpg") and row["crop"] == "picture"
    assert box_of(row) == (box[0] - MARGIN, box[1] - MARGIN, box[2] + MARGIN, box[3] + MARGIN)
    assert images[row["file"]].size == (64, 64)
    manifest.delete_picture(added)
    rows, _, _ = exported(manifest, tmp_path / "deleted.zip", PICTURES)
    assert written(rows) == [("1", "1"), ("1", "2"), ("2", "")]  # the text page whole again


def test_a_deleted_picture_is_not_exported(manifest, tmp_path):
    manifest.delete_picture(picture(manifest, 0, 1)["id"])
    rows, _, _ = exported(manifest, tmp_path / "lora.zip", PICTURES)
    assert written(rows) == [("1", "2"), ("2", "")]
    assert rows[0]["file"].endswith("p0001_pic2.jpg")  # its number stays: names are stable


def test_a_page_with_all_its_pictures_excluded_is_not_exported(manifest, tmp_path):
    doc = doc_id(manifest)
    manifest.set_override(doc, 0, None)  # the page follows its pictures again
    manifest.set_picture_overrides([(picture(manifest, 0, n)["id"], False) for n in (1, 2)])
    for crop in ("page", "picture", "pictures"):
        rows, _, _ = exported(manifest, tmp_path / f"{crop}.zip", ExportSettings(size=64, crop=crop))
        assert [r["page"] for r in rows] == ["2"], crop
    manifest.set_picture_override(picture(manifest, 0, 2)["id"], None)  # one back to the rule: the page is back
    rows, _, _ = exported(manifest, tmp_path / "back.zip", PICTURES)
    assert written(rows) == [("1", "2"), ("2", "")]


def test_picture_captions_reach_the_caption_files_and_manifest_csv(manifest, tmp_path):
    doc = doc_id(manifest)
    manifest.set_picture_captions([(picture(manifest, 0, 1)["id"], "A WET DAY.")])
    manifest.set_caption(doc, 0, "a page of two drawings")
    rows, _, _ = exported(manifest, tmp_path / "lora.zip", PICTURES)
    assert [(r["picture"], r["caption"]) for r in rows] == [
        ("1", "ohwx, A WET DAY."), ("2", "ohwx, a page of two drawings"), ("", "ohwx")]
    with zipfile.ZipFile(tmp_path / "lora.zip") as z:
        texts = {name.rsplit("-", 1)[1]: z.read(name).decode() for name in z.namelist() if name.endswith(".txt")}
    assert texts == {"p0001_pic1.txt": "ohwx, A WET DAY.", "p0001_pic2.txt": "ohwx, a page of two drawings",
                     "p0002.txt": "ohwx"}


def test_crop_picture_cuts_to_the_largest_picture_as_the_curator_left_it(manifest, tmp_path):
    settings = ExportSettings(size=64, crop="picture")
    first, second = picture(manifest, 0, 1), picture(manifest, 0, 2)
    rows, _, _ = exported(manifest, tmp_path / "scorer.zip", settings)
    assert box_of(rows[0]) == (first["bx0"] - MARGIN, first["by0"] - MARGIN, first["bx1"] + MARGIN,
                               first["by1"] + MARGIN)
    manifest.set_picture_override(first["id"], False)  # the larger one excluded: the other is the picture
    rows, _, _ = exported(manifest, tmp_path / "excluded.zip", settings)
    assert box_of(rows[0]) == (second["bx0"] - MARGIN, second["by0"] - MARGIN, second["bx1"] + MARGIN,
                               second["by1"] + MARGIN)
    redrawn = (second["bx0"] + 20, second["by0"] + 20, second["bx1"] - 20, second["by1"] - 20)
    manifest.set_picture_box(second["id"], redrawn)
    rows, _, _ = exported(manifest, tmp_path / "redrawn.zip", settings)
    assert box_of(rows[0]) == (redrawn[0] - MARGIN, redrawn[1] - MARGIN, redrawn[2] + MARGIN, redrawn[3] + MARGIN)
    manifest.delete_picture(second["id"])  # none left: the (included) page exports whole
    rows, _, _ = exported(manifest, tmp_path / "none.zip", settings)
    assert rows[0]["crop"] == "page"
