"""Near-duplicates: by default the export keeps one page per group of near-identical plates (the one whose
picture covers most of its page, ties to the first by document path and page); `duplicates="all"` keeps
them all. manifest.csv gives each image's group; export.json lists what was left out and records the
decision rule with its cutoffs."""

import csv
import io
import json
import shutil
import zipfile

import pytest

from curation import Manifest, ingest
from curation.export import Export, ExportSettings, export, select
from curation.sources.page_numbers import page_index
from curation.sources.synthetic import PageSpec, write_pdf

from conftest import SMALL

PLATE = PageSpec(kind="engraving", seed=21, dpi=150, inches=SMALL)  # the plate reprinted in both issues
SETTINGS = ExportSettings(size=128)


@pytest.fixture(scope="module")
def scored_db(tmp_path_factory):
    """Two issues that both print PLATE (page 1 of a.pdf, page 0 of b.pdf), each beside other pages."""
    folder = tmp_path_factory.mktemp("duplicates")
    write_pdf(folder / "archive" / "a.pdf", [PageSpec(kind="text", seed=30, dpi=150, inches=SMALL), PLATE,
                                             PageSpec(kind="engraving", seed=31, dpi=150, inches=SMALL)])
    write_pdf(folder / "archive" / "b.pdf", [PLATE, PageSpec(kind="engraving", seed=32, dpi=150, inches=SMALL)])
    db = folder / "template.sqlite"
    with Manifest(db) as m:
        ingest(m, [folder / "archive"], workers=1)
    return db


@pytest.fixture
def manifest(scored_db, tmp_path):
    shutil.copy(scored_db, tmp_path / "manifest.sqlite")
    with Manifest(tmp_path / "manifest.sqlite") as m:
        yield m


def pages_of(manifest) -> dict[tuple[str, int], object]:
    return {(r["doc"].rsplit("/", 1)[-1], r["page"]): r for r in manifest.pages()}


def exported(manifest, tmp_path, settings=SETTINGS, **options):
    export(manifest, tmp_path / "lora.zip", settings, **options)
    with zipfile.ZipFile(tmp_path / "lora.zip") as z:
        rows = list(csv.DictReader(io.StringIO(z.read("manifest.csv").decode())))
        images = [n for n in z.namelist() if n.endswith(".jpg")]
        return rows, images, json.loads(z.read("export.json"))


def names(rows) -> set[tuple[str, int]]:
    return {(r["document"].rsplit("/", 1)[-1], page_index(int(r["page"]))) for r in rows}  # the ZIP counts from 1


def test_the_reprinted_plate_is_one_group_of_kept_pages(manifest):
    pages = pages_of(manifest)
    assert pages[("a.pdf", 1)]["keep"] and pages[("b.pdf", 0)]["keep"]
    group = pages[("a.pdf", 1)]["duplicate_group"]
    assert group is not None and pages[("b.pdf", 0)]["duplicate_group"] == group
    assert [key for key, row in pages.items() if row["duplicate_group"] == group] == [("a.pdf", 1), ("b.pdf", 0)]


def test_one_page_per_group_by_default_the_first_on_a_tie(manifest, tmp_path):
    kept = sum(r["keep"] for r in manifest.pages())
    rows, images, document = exported(manifest, tmp_path)
    assert len(images) == len(rows) == kept - 1
    assert ("a.pdf", 1) in names(rows) and ("b.pdf", 0) not in names(rows)  # same picture: a.pdf comes first
    group = pages_of(manifest)[("a.pdf", 1)]["duplicate_group"]
    groups = {(r["document"].rsplit("/", 1)[-1], page_index(int(r["page"]))): r["duplicate_group"] for r in rows}
    assert groups.pop(("a.pdf", 1)) == str(group) and set(groups.values()) == {""}  # the others have no group
    assert document["settings"]["duplicates"] == "one"
    [left_out] = document["duplicates"]["left_out"]
    assert left_out["document"].endswith("b.pdf") and left_out["page"] == 1 and left_out["group"] == group
    assert left_out["kept"]["document"].endswith("a.pdf") and left_out["kept"]["page"] == 2  # export.json counts pages from 1


def test_the_page_whose_picture_covers_most_is_the_one_kept(manifest, tmp_path):
    b = pages_of(manifest)[("b.pdf", 0)]
    manifest.conn.execute("UPDATE pages SET picture_share = picture_share + 0.01 WHERE doc_id = ? AND page = 0",
                          (b["doc_id"],))
    rows, _, document = exported(manifest, tmp_path)
    assert ("b.pdf", 0) in names(rows) and ("a.pdf", 1) not in names(rows)
    assert document["duplicates"]["left_out"][0]["kept"]["page"] == 1


def test_the_option_keeps_them_all(manifest, tmp_path):
    kept = sum(r["keep"] for r in manifest.pages())
    rows, images, document = exported(manifest, tmp_path, ExportSettings(size=128, duplicates="all"))
    assert len(images) == kept and {("a.pdf", 1), ("b.pdf", 0)} <= names(rows)
    groups = [r["duplicate_group"] for r in rows if r["duplicate_group"]]
    assert len(groups) == 2 and len(set(groups)) == 1
    assert document["duplicates"] == {"mode": "all", "left_out": []}


def test_a_duplicate_the_curator_excluded_does_not_take_the_place_of_the_other(manifest, tmp_path):
    a = pages_of(manifest)[("a.pdf", 1)]
    manifest.set_override(a["doc_id"], 1, False)
    rows, _, document = exported(manifest, tmp_path)
    assert ("b.pdf", 0) in names(rows) and ("a.pdf", 1) not in names(rows)
    assert document["duplicates"]["left_out"] == []


def test_the_selection_counts_what_it_leaves_out(manifest):
    one, everything = select(manifest), select(manifest, duplicates="all")
    assert len(everything.items) == len(one.items) + 1
    assert [(entry.item.page, entry.kept.page) for entry in one.left_out] == [(0, 1)]
    assert one.duplicates == everything.duplicates == 1 and everything.left_out == []


def test_two_exports_leaving_duplicates_out_are_byte_identical(manifest, tmp_path):
    export(manifest, tmp_path / "a.zip", SETTINGS)
    export(manifest, tmp_path / "b.zip", SETTINGS, workers=2)
    assert (tmp_path / "a.zip").read_bytes() == (tmp_path / "b.zip").read_bytes()


@pytest.mark.parametrize("rule, threshold, share", [("picture", 45.0, 0.05), ("sigma", 52.5, 0.03)])
def test_export_json_records_the_decision_rule_and_its_cutoffs(manifest, tmp_path, rule, threshold, share):
    manifest.rule = rule
    manifest.picture_area_min = share
    manifest.threshold = 45.0
    rows, _, document = exported(manifest, tmp_path, threshold=threshold)
    assert document["threshold"] == threshold
    decision = document["decision"]
    assert (decision["rule"], decision["threshold"], decision["picture_area_min"]) == (rule, threshold, share)
    assert decision == manifest.decision_params(threshold)
    job = json.loads(manifest.latest_job("export")["args"])
    assert job["decision"] == decision and job["left_out"] == len(document["duplicates"]["left_out"])


def test_the_report_and_the_job_message_count_what_was_left_out(manifest, tmp_path):
    report = Export(manifest, tmp_path / "lora.zip", SETTINGS).run()
    assert len(report.left_out) == 1
    assert "1 near-duplicate left out" in manifest.latest_job("export")["message"]
