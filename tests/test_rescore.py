"""Re-scoring an existing manifest fills the features and keeps every curator decision."""

import dataclasses

from click.testing import CliRunner

from curation import Manifest, ingest
from curation.cli import cli
from curation.runs.ingest import Rescore
from curation.scoring.features import FEATURES_VERSION
from curation.sources.synthetic import PageSpec, write_pdf

from conftest import SMALL, small_specs


def test_rescore_fills_old_rows_and_keeps_overrides_and_captions(manifest, archive):
    ingest(manifest, [archive], workers=1)
    rows = list(manifest.pages())
    manifest.set_override(rows[0]["doc_id"], rows[0]["page"], True)
    manifest.set_override(rows[1]["doc_id"], rows[1]["page"], False)
    manifest.set_caption(rows[0]["doc_id"], rows[0]["page"], "a lady in a walking dress")
    # As scored by a version without features:
    manifest.conn.execute("UPDATE pages SET picture_share = NULL, picture_area = NULL, ink_tone = NULL, features_version = NULL "
                          "WHERE page % 2 = 0")
    stale = manifest.conn.execute("SELECT COUNT(*) FROM pages WHERE features_version IS NULL").fetchone()[0]
    report = Rescore(manifest, workers=1).run()
    assert report.pages_scored == stale
    assert manifest.conn.execute("SELECT COUNT(*) FROM pages WHERE features_version = ?",
                                 (FEATURES_VERSION,)).fetchone()[0] == 15
    decided = {(r["doc_id"], r["page"]): (r["keep"], r["decided_by"]) for r in manifest.pages()}
    assert decided[(rows[0]["doc_id"], rows[0]["page"])] == (1, "override")
    assert decided[(rows[1]["doc_id"], rows[1]["page"])] == (0, "override")
    assert manifest.caption(rows[0]["doc_id"], rows[0]["page"]) == "a lady in a walking dress"
    assert {d["status"] for d in manifest.documents()} == {"ok"}
    assert Rescore(manifest, workers=1).run().pages_scored == 0  # nothing left out of date


def test_rescore_command_scores_every_page_again_with_all(tmp_path, archive):
    db = tmp_path / "m.sqlite"
    with Manifest(db) as m:
        ingest(m, [archive], workers=1)
        m.set_override(1, 0, False)
    result = CliRunner().invoke(cli, ["rescore", "--db", str(db), "--all", "-q"])
    assert result.exit_code == 0, result.output
    assert "15 pages rescored" in result.output
    with Manifest(db) as m:
        assert [(o["doc_id"], o["page"], o["keep"]) for o in m.overrides()] == [(1, 0, 0)]


def test_near_duplicates_are_found_across_documents(manifest, tmp_path):
    plate = PageSpec(kind="engraving", seed=77, dpi=150, inches=SMALL)
    first = small_specs(3, seed=1) + [plate]
    later = small_specs(2, seed=2) + [dataclasses.replace(plate, rescan=1, bleed=True)] + small_specs(1, seed=3)
    write_pdf(tmp_path / "archive" / "1890-03.pdf", first)
    write_pdf(tmp_path / "archive" / "1891-07.pdf", later)
    ingest(manifest, [tmp_path / "archive"], workers=1)
    grouped = [(r["doc"].rsplit("/", 1)[1], r["page"], r["duplicate_group"])
               for r in manifest.pages(where="g.group_id IS NOT NULL")]
    assert [(doc, page) for doc, page, _ in grouped] == [("1890-03.pdf", 3), ("1891-07.pdf", 2)]
    assert grouped[0][2] == grouped[1][2]
