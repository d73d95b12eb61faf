"""A picture the finder scores under the manifest's score cutoff is judged not a picture: ingest's worker reads no
legend for it (the work after a picture is found goes to the pictures that count). When a curator includes it, the
export reads its legend and keeps it, and writes it with the picture."""

import contextlib
import json

import pytest

from curation import Manifest, ingest
from curation.captions.legend import UNREAD, installed_languages
from curation.export import ExportSettings
from curation.pictures.finder import FoundPicture
from curation.pictures.verdict import picture_columns
from curation.runs.ingest_task import _score_and_shrink

from test_export_pictures import exported
from test_legends import PICTURE, accuracy, as_scan, ingest_folder, legend_page, needs_engine, reference_box

SCORE_MIN = 0.2


def found_with_score(score: float):
    """A picture finder that finds the engraving of test_legends' page, with `score`."""
    def check(gray, box_scale):
        box = tuple(round(v / box_scale) for v in reference_box(PICTURE))
        area = (box[2] - box[0]) * (box[3] - box[1]) * box_scale ** 2 / 144 ** 2
        return picture_columns([FoundPicture(box, area, score)], SCORE_MIN, gray.size * box_scale ** 2 / 144 ** 2,
                               box_scale)
    return check


@needs_engine
@pytest.mark.parametrize("score, read", [(0.9, True), (0.1, False)])
def test_the_worker_reads_a_legend_only_for_a_picture_over_the_cutoff(score, read):
    doc = as_scan(legend_page(["SEPTEMBER MORN."], "tiro", 10.0))
    result = _score_and_shrink(doc, 0, "eng", found_with_score(score), score_min=SCORE_MIN)
    [entry] = json.loads(result.features["pictures"])
    if read:
        assert accuracy(entry[5], "SEPTEMBER MORN.") >= 0.9 and 0 < entry[6] <= 1
    else:
        assert entry[5:7] == [None, UNREAD]  # left to be read when the picture is wanted
    assert result.picture_cards[0] is not None  # its card all the same: Review shows it
    assert entry[7] == score


@needs_engine
def test_without_a_cutoff_every_pictures_legend_is_read_as_before():
    doc = as_scan(legend_page(["SEPTEMBER MORN."], "tiro", 10.0))
    result = _score_and_shrink(doc, 0, "eng", found_with_score(0.1))
    [entry] = json.loads(result.features["pictures"])
    assert accuracy(entry[5], "SEPTEMBER MORN.") >= 0.9


@contextlib.contextmanager
def ingested_unread(tmp_path):
    """A manifest of one page whose picture's legend was read at ingest, then left unread as ingest with the finder
    leaves a picture it scores under the cutoff; the manifest and the picture's row."""
    folder = ingest_folder(tmp_path, [as_scan(legend_page(["SEPTEMBER MORN."], "tiro", 10.0))])
    with Manifest(tmp_path / "m.sqlite") as manifest:
        manifest.picture_finder = "rules"
        ingest(manifest, [folder], workers=1, legend_languages="eng")
        [row] = manifest.picture_rows()
        assert accuracy(row["legend"], "SEPTEMBER MORN.") >= 0.9
        manifest.conn.execute("UPDATE pictures SET score = 0.1, legend = NULL, legend_confidence = ? WHERE id = ?",
                              (UNREAD, row["id"]))
        yield manifest, row


@needs_engine
def test_a_picture_under_the_cutoff_that_a_curator_includes_is_exported_with_its_legend(tmp_path):
    with ingested_unread(tmp_path) as (manifest, row):
        settings = ExportSettings(crop="pictures", size=64, template="{trigger}, {legend}")
        rows, _, _ = exported(manifest, tmp_path / "a.zip", settings)
        assert not [r for r in rows if r["picture"]]  # judged not a picture: not exported, its legend not read
        assert manifest.conn.execute("SELECT legend_confidence FROM pictures").fetchone()[0] == UNREAD

        manifest.set_picture_override(row["id"], True)
        rows, _, _ = exported(manifest, tmp_path / "b.zip", settings)
        [written] = [r for r in rows if r["picture"]]
        assert accuracy(written["legend"], "SEPTEMBER MORN.") >= 0.9
        legend, confidence = manifest.conn.execute("SELECT legend, legend_confidence FROM pictures").fetchone()
        assert legend == written["legend"] and 0 < confidence <= 1  # kept: read once


@needs_engine
def test_a_picture_a_curator_includes_in_review_has_its_legend_read_then(tmp_path):
    from curation.captions.unread import read_when_included

    with ingested_unread(tmp_path) as (manifest, row):
        assert not read_when_included(manifest, row["id"]), "not included: nothing is read"
        manifest.set_picture_override(row["id"], False)
        assert not read_when_included(manifest, row["id"])
        manifest.set_picture_override(row["id"], True)
        assert read_when_included(manifest, row["id"])
        included = manifest.picture(row["id"])
        assert accuracy(included["legend"], "SEPTEMBER MORN.") >= 0.9 and 0 < included["legend_confidence"] <= 1
        assert not read_when_included(manifest, row["id"]), "read once"


@pytest.mark.skipif(bool(installed_languages()), reason="the engine is installed here")
def test_without_the_engine_an_unread_legend_stays_unread_and_the_export_goes_on(tmp_path):
    from curation.captions.unread import read_unread

    doc = legend_page([])
    doc.save(tmp_path / "a.pdf")
    with Manifest(tmp_path / "m.sqlite") as manifest:
        assert read_unread(manifest, [{"legend_confidence": UNREAD, "doc_id": 1, "page": 0}]) == 0

