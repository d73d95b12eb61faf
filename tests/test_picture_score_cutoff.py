"""The learned verdict's score cutoff (picture_score_min): ingest stores the candidates it scored under its own
cutoff too, and a picture it scored counts (for its page's figures, its decision, the export, the outlines and
the counts) only at or above the saved cutoff; a curator's include, exclude, delete or redrawn box wins over
it and survives a cutoff change and a rescore; Threshold's score histogram and the CLI set it."""

import json
import sqlite3

import numpy as np
import pytest
from click.testing import CliRunner

from curation import Manifest, views
from curation.cli import cli
from curation.export import ExportSettings
from curation.manifest import history, schema, store
from curation.manifest.rules import DEFAULT_PICTURE_SCORE_MIN
from curation.pictures import verdict
from curation.pictures.candidates import Candidate
from curation.scoring.result import PageResult
from curation.views import cutoff_counts
from curation.views import picture_views as pv
from test_export_pictures import exported, pages, scored_db  # noqa: F401  (fixtures)
from test_picture_decisions import assert_stored_as_evaluated
from conftest import manifest_copy

WIDTH, HEIGHT = 1000, 1400
# (x0, y0, x1, y1, sq in, legend, confidence, score): page 0 a sure engraving and a doubtful cut beside it;
# page 1 only a doubtful cut; page 2 only candidates under the ingest floor's neighbour, 0.06.
SURE = [40, 30, 400, 330, 5.2, None, None, 0.9]
DOUBTFUL = [500, 600, 800, 900, 3.0, None, None, 0.12]
ALONE = [100, 100, 500, 500, 4.0, None, None, 0.15]
FAINT = [100, 700, 500, 1100, 4.0, None, None, 0.06]
PAGES = [[SURE, DOUBTFUL], [ALONE], [FAINT]]


@pytest.fixture
def manifest(tmp_path, monkeypatch):
    monkeypatch.setenv(history.USER_VARIABLE, "ana")
    with Manifest(tmp_path / "m.sqlite") as m:
        yield m


def scored(manifest, doc_id, page, entries, sigma=30.0):
    """A page as a learned ingest stores it: its figures are its worker's, at the head's cutoff."""
    counted = [e for e in entries if e[7] >= 0.2]
    features = {"ink_tone": 0.6, "picture_area": max((e[4] for e in counted), default=0.0),
                "picture_count": len(counted), "pictures": json.dumps(entries)}
    manifest.save_pages(doc_id, [PageResult(page=page, status="ok", sigma=sigma, width=WIDTH, height=HEIGHT,
                                            features=features)])


def learned_document(manifest):
    doc = manifest.register_document(sha256="a" * 64, path="/archive/a.pdf", size=1)["id"]
    for page, entries in enumerate(PAGES):
        scored(manifest, doc, page, entries)
    manifest.set_document(doc, status="ok", pages=len(PAGES))
    return doc


def kept(manifest):
    """(page, number) of every picture the export writes, under the saved settings."""
    return sorted((page, row["number"]) for (_, page), rows in manifest.kept_pictures().items() for row in rows)


def kept_pages(manifest):
    return sorted(p["page"] for p in manifest.pages() if p["keep"])


def number_of(manifest, doc, page, entry):
    return next(r["number"] for r in manifest.picture_rows(where="x.doc_id = :d AND x.page = :p AND x.score = :s",
                                                             params={"d": doc, "p": page, "s": entry[7]}))


def test_ingest_stores_candidates_under_the_heads_cutoff_one_of_each_overlapping_group(monkeypatch):
    boxes = [(0, 0, 400, 400), (10, 10, 390, 390), (500, 0, 700, 200), (0, 500, 300, 800), (400, 900, 600, 1100)]
    scores = np.array([0.8, 0.1, 0.3, 0.12, 0.02])  # the second overlaps the first; the last under the floor
    candidates = [Candidate(b, (b[2] - b[0]) * (b[3] - b[1]) / 144 ** 2, {}) for b in boxes]
    monkeypatch.setattr(verdict, "page_candidates",
                        lambda gray, dpi: verdict.PageCandidates(candidates, np.zeros((len(boxes), 1))))

    class Head:
        cutoff, tighten, margin = 0.2, False, 0.0

        def score(self, inputs):
            return scores

    columns = verdict.checked_columns(np.zeros((1200, 900), np.uint8), head=Head())
    entries = json.loads(columns["pictures"])
    assert sorted(e[7] for e in entries) == [0.12, 0.3, 0.8]  # down to the floor, the overlapped one left out
    assert verdict.STORED_FLOOR <= 0.12
    # The page's own figures are those at or above the head's cutoff: two pictures, the largest 400 px square.
    assert columns["picture_count"] == 2
    assert columns["picture_area"] == pytest.approx(400 * 400 / 144 ** 2)


def test_the_saved_score_cutoff_decides_pictures_pages_outlines_and_counts(manifest):
    doc = learned_document(manifest)
    assert manifest.picture_score_min == DEFAULT_PICTURE_SCORE_MIN == verdict.shipped_head().cutoff
    assert_stored_as_evaluated(manifest, [doc])
    assert kept(manifest) == [(0, number_of(manifest, doc, 0, SURE))]
    assert kept_pages(manifest) == [0]  # page 1's only picture is under the cutoff: no picture, σ 30 text
    assert manifest.pictures(doc, 0) == [tuple(SURE[:5])]  # the doubtful cut is not outlined
    assert manifest.pictures(doc, 1) == []
    figures = cutoff_counts.picture_figures(manifest, None, picture_score_min=0.1)  # tried, not saved
    assert (figures["kept_saved"], figures["excluded_saved"]) == (1, 3)
    assert (figures["kept"], figures["excluded"]) == (3, 1)  # the doubtful cut and the lone one; not the faint

    with manifest.recording("setting"):
        manifest.picture_score_min = 0.1
    assert_stored_as_evaluated(manifest, [doc])
    assert len(kept(manifest)) == 3 and kept_pages(manifest) == [0, 1]
    assert pv.filter_counts(manifest, None)["kept"] == figures["kept"]  # what Threshold showed before Save
    page1 = next(p for p in manifest.pages() if p["page"] == 1)
    assert page1["picture_area"] == ALONE[4] and page1["picture_count"] == 1
    assert manifest.pictures(doc, 1) == [tuple(ALONE[:5])]

    manifest.undo()  # the setting, back to 0.2: the pages' figures and decisions with it
    assert manifest.picture_score_min == DEFAULT_PICTURE_SCORE_MIN
    assert_stored_as_evaluated(manifest, [doc])
    assert kept_pages(manifest) == [0] and len(kept(manifest)) == 1
    assert next(p for p in manifest.pages() if p["page"] == 1)["picture_area"] == 0


def test_a_curators_decisions_win_over_the_score_cutoff_and_survive_its_moves_and_a_rescore(manifest):
    doc = learned_document(manifest)
    ids = {name: manifest.picture_by_number(doc, page, number_of(manifest, doc, page, entry))["id"]
           for name, page, entry in (("sure", 0, SURE), ("doubtful", 0, DOUBTFUL), ("alone", 1, ALONE),
                                     ("faint", 2, FAINT))}
    manifest.set_picture_override(ids["alone"], True)  # under the cutoff, included: exported, its page kept
    manifest.set_picture_override(ids["sure"], False)
    manifest.set_picture_box(ids["faint"], [120, 720, 480, 1080])  # a redrawn box says there is a picture
    manifest.delete_picture(ids["doubtful"])
    check = lambda: assert_stored_as_evaluated(manifest, [doc])  # noqa: E731
    expected = sorted([(1, number_of(manifest, doc, 1, ALONE)), (2, number_of(manifest, doc, 2, FAINT))])
    check()
    assert kept(manifest) == expected and kept_pages(manifest) == [1, 2]
    for cutoff in (0.05, 0.95, 0.2):
        manifest.picture_score_min = cutoff
        check()
        assert kept(manifest) == expected, cutoff
    for page, entries in enumerate(PAGES):  # scored again, the scores moved: matched by overlap, work kept
        scored(manifest, doc, page, [[*e[:7], round(e[7] / 2, 4)] for e in entries])
    check()
    assert kept(manifest) == expected
    assert manifest.picture(ids["sure"])["keep"] == 0 and manifest.picture(ids["doubtful"])["deleted"]


@pytest.fixture
def exported_manifest(scored_db, tmp_path):  # noqa: F811
    """two.pdf (ingested by the page analysis, both pages included by the curator), its first page stored
    again as the learned verdict stores it: the larger drawing scored sure, the smaller doubtful."""
    with manifest_copy(scored_db, tmp_path) as m:
        doc = next(m.pages())["doc_id"]
        rows = sorted(m.picture_rows(where="x.doc_id = :d AND x.page = 0", params={"d": doc}),
                      key=lambda r: -r["area"])
        entries = [[r["x0"], r["y0"], r["x1"], r["y1"], r["area"], None, None, score]
                   for r, score in zip(rows, (0.9, 0.1))]
        page = next(p for p in m.pages() if p["page"] == 0)
        m.save_pages(doc, [PageResult(page=0, status="ok", sigma=page["sigma"], width=page["width"],
                                      height=page["height"], features={"ink_tone": page["ink_tone"],
                                                                       "picture_area": entries[0][4],
                                                                       "pictures": json.dumps(entries)})])
        yield m


def test_the_export_follows_the_score_cutoff(exported_manifest, tmp_path):
    settings = ExportSettings(size=64, crop="pictures", template="{trigger}, {caption}")
    rows, _, _ = exported(exported_manifest, tmp_path / "a.zip", settings)
    assert [(r["page"], r["picture"]) for r in rows] == [("1", "1"), ("2", "")]
    exported_manifest.picture_score_min = 0.05
    rows, _, _ = exported(exported_manifest, tmp_path / "b.zip", settings)
    assert [(r["page"], r["picture"]) for r in rows] == [("1", "1"), ("1", "2"), ("2", "")]


def test_threshold_histogram_of_scores_and_none_without_scores(manifest):
    assert views.score_histogram(manifest, 0.2) is None and not views.has_scores(manifest)
    learned_document(manifest)
    hist = views.score_histogram(manifest, 0.2)
    assert views.has_scores(manifest)
    assert (int(hist.admitted.sum()), int(hist.dropped.sum())) == (1, 3)
    assert hist.admitted[18] == 1 and hist.dropped[1] == 1 and hist.dropped[2] == 1 and hist.dropped[3] == 1
    assert int(views.score_histogram(manifest, 0.1).admitted.sum()) == 3


def test_threshold_figures_and_histograms_follow_a_score_cutoff_being_tried_as_once_saved(manifest):
    doc = learned_document(manifest)
    manifest.set_picture_override(manifest.picture_by_number(doc, 0, number_of(manifest, doc, 0, SURE))["id"], False)

    def histograms(**tried):
        sigma = views.histogram(manifest, 45, bins=10, span=(0, 100), rule="picture", **tried)
        tallied = views.picture_histogram(manifest, 45, bins=45, **tried)  # whole kept-count bins
        scanned = views.picture_histogram(manifest, 45, bins=7, **tried)  # counted by a scan
        counts = (views.figures(manifest, 45, rule="picture", **tried)["kept"],
                  cutoff_counts.picture_figures(manifest, 45, rule="picture", **tried)["kept"])
        return [(h.kept.tolist(), h.rejected.tolist()) for h in (sigma, tallied, scanned)] + [counts]

    for score in (0.1, 0.05, 0.13, 0.5):
        tried = histograms(picture_score_min=score)
        with manifest.recording("setting"):
            manifest.picture_score_min = score
        assert tried == histograms(), score
        manifest.undo()
    assert histograms(picture_score_min=0.1) != histograms()  # the lone cut's page is kept at 0.1, not at 0.2


def test_the_cli_sets_the_score_cutoff_and_refuses_one_out_of_range(tmp_path, monkeypatch):
    monkeypatch.setenv(history.USER_VARIABLE, "ana")
    db = tmp_path / "m.sqlite"
    with Manifest(db) as m:
        learned_document(m)
    runner = CliRunner()
    result = runner.invoke(cli, ["settings", "--db", str(db), "--picture-score-min", "0.1"])
    assert result.exit_code == 0, result.output
    assert "picture_score_min: 0.1" in result.output
    with Manifest(db) as m:
        assert m.picture_score_min == 0.1 and kept_pages(m) == [0, 1]
    result = runner.invoke(cli, ["settings", "--db", str(db), "--picture-score-min", "2"])
    assert result.exit_code != 0 and "0<=x<=1" in result.output.replace(" ", "")
    assert "--picture-score-min" in runner.invoke(cli, ["settings", "--help"]).output


def test_an_older_manifest_with_pictures_scored_under_the_cutoff_is_decided_again(tmp_path, monkeypatch):
    monkeypatch.setenv(history.USER_VARIABLE, "ana")
    path = tmp_path / "old.sqlite"
    conn = sqlite3.connect(path)
    version = next(i for i, script in enumerate(store.MIGRATIONS) if "picture_score_min" in script)  # before it
    for script in store.MIGRATIONS[:version]:
        for statement in schema.statements(script):
            conn.execute(statement)
    conn.execute(f"PRAGMA user_version = {version}")
    conn.execute("INSERT INTO documents (id, sha256, path, size, status, added_at, updated_at) "
                 "VALUES (1, ?, '/a.pdf', 1, 'ok', '', '')", ("a" * 64,))
    # An earlier head's cutoff kept a picture scored 0.1: every picture counted, the page kept by it.
    conn.execute("INSERT INTO pages (doc_id, page, status, sigma, width, height, picture_area, picture_count, "
                 "ink_tone, scored_at) VALUES (1, 0, 'ok', 30.0, 1000, 1400, 4.0, 1, 0.6, '')")
    conn.execute("INSERT INTO pictures (doc_id, page, number, rank, x0, y0, x1, y1, area, score) "
                 "VALUES (1, 0, 1, 0, 10, 10, 400, 400, 4.0, 0.1)")
    conn.commit()
    assert conn.execute("SELECT exported FROM pictures").fetchone()[0] == 1
    conn.close()
    with Manifest(path) as manifest:
        assert manifest.schema_version == len(store.MIGRATIONS)
        assert_stored_as_evaluated(manifest, [1])
        assert kept(manifest) == [] and kept_pages(manifest) == []
        manifest.picture_score_min = 0.1
        assert_stored_as_evaluated(manifest, [1])
        assert kept(manifest) == [(0, 1)] and kept_pages(manifest) == [0]
