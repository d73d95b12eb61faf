"""The export ZIP: one RGB JPEG and caption per kept page, in every layout, byte-identical run after run,
honouring overrides both ways, never half written."""

import io
import json
import os
import shutil
import zipfile

import pytest
from PIL import Image

from curation import Manifest, ingest
from curation.export import Export, ExportError, ExportSettings, export, image_folder, select_items
from curation.export.job import CRASH_REASON, in_order
from curation.export.worker import NotExported
from curation.export.zipwriter import check_name
from curation.sources.page_numbers import page_index

from conftest import small_pdf

SMALL = ExportSettings(size=256)  # most tests need the shape of the output, not its size


@pytest.fixture(scope="module")
def scored_db(tmp_path_factory):
    """The conftest archive (three small periodicals, 15 pages, a few kept at sigma > 45), ingested once."""
    folder = tmp_path_factory.mktemp("export")
    for n, pages in enumerate((4, 5, 6)):
        small_pdf(folder / "archive" / f"issue-{n}.pdf", pages=pages, seed=n)
    db = folder / "template.sqlite"
    with Manifest(db) as m:
        # These tests count one image a kept page: the rules find one picture on each of these pages, where the
        # picture network (the default) also finds small marks that the sigma rule keeps with their page.
        m.picture_finder = "rules"
        ingest(m, [folder / "archive"], workers=2)
        m.rule = "sigma"  # these tests reason about sigma > threshold
    return db


@pytest.fixture
def manifest(scored_db, tmp_path):
    shutil.copy(scored_db, tmp_path / "manifest.sqlite")
    with Manifest(tmp_path / "manifest.sqlite") as m:
        yield m


def members(path):
    with zipfile.ZipFile(path) as z:
        assert z.testzip() is None
        return {info.filename: z.read(info) for info in z.infolist() if not info.is_dir()}


def images_of(files):
    return {name: data for name, data in files.items() if name.endswith(".jpg")}


def provenance(files):
    rows = files["manifest.csv"].decode().splitlines()
    header = rows[0].split(",")
    import csv

    return [dict(zip(header, row)) for row in csv.reader(rows[1:])]


def test_one_rgb_jpeg_of_the_promised_size_and_a_caption_per_kept_page(manifest, tmp_path):
    report = export(manifest, tmp_path / "lora.zip")  # the defaults: kohya, square pad 1024, JPEG 92
    files = members(tmp_path / "lora.zip")
    images = images_of(files)
    kept = manifest.summary()["kept"]
    assert kept >= 3 and len(images) == report.images == kept
    for name, data in images.items():
        assert name.startswith("img/10_ohwx engraving/")
        image = Image.open(io.BytesIO(data))
        assert (image.format, image.mode, image.size) == ("JPEG", "RGB", (1024, 1024))
        assert files[name[:-4] + ".txt"] == b"ohwx, engraving"
    rows = provenance(files)
    assert [r["file"] for r in rows] == sorted(images) == list(images)
    expected = {(r["doc"], r["page"]) for r in manifest.pages() if r["keep"]}
    assert {(r["document"], page_index(int(r["page"]))) for r in rows} == expected  # pages from 1
    assert {r["decided_by"] for r in rows} == {"threshold"}
    assert all(float(r["sigma"]) > 45 for r in rows)
    settings = json.loads(files["export.json"])
    assert settings["settings"] == ExportSettings().as_dict() and settings["images"] == kept


def test_captions_follow_the_template_and_each_page_caption(manifest, tmp_path):
    first, second = select_items(manifest)[:2]
    manifest.set_caption(first.doc_id, first.page, "  a lady in a bustle,\nwith a parasol ")
    settings = ExportSettings(size=256, trigger="bzr1890", class_word="fashion plate",
                              template="{trigger}, {class}, {caption}", crop="page")  # a page's own caption
    export(manifest, tmp_path / "lora.zip", settings)
    files = members(tmp_path / "lora.zip")
    captions = {r["file"]: r["caption"] for r in provenance(files)}
    folder = "img/10_bzr1890 fashion plate"
    assert captions[f"{folder}/{first.name}.jpg"] == "bzr1890, fashion plate, a lady in a bustle, with a parasol"
    assert captions[f"{folder}/{second.name}.jpg"] == "bzr1890, fashion plate"
    for file, caption in captions.items():
        assert files[file[:-4] + ".txt"].decode() == caption


def test_overrides_are_honoured_both_ways(manifest, tmp_path):
    pages = list(manifest.pages())
    rejected = next(r for r in pages if not r["keep"])
    kept = next(r for r in pages if r["keep"])
    manifest.set_override(rejected["doc_id"], rejected["page"], True)
    manifest.set_override(kept["doc_id"], kept["page"], False)
    export(manifest, tmp_path / "lora.zip", SMALL)
    rows = {(r["document"], page_index(int(r["page"]))): r for r in provenance(members(tmp_path / "lora.zip"))}
    assert (rejected["doc"], rejected["page"]) in rows
    assert rows[(rejected["doc"], rejected["page"])]["decided_by"] == "override"
    assert (kept["doc"], kept["page"]) not in rows
    assert len(rows) == manifest.summary()["kept"]


def test_two_exports_are_byte_identical_whatever_the_workers(manifest, tmp_path):
    export(manifest, tmp_path / "a.zip", SMALL)
    export(manifest, tmp_path / "b.zip", SMALL)
    export(manifest, tmp_path / "c.zip", SMALL, workers=2)
    data = (tmp_path / "a.zip").read_bytes()
    assert data == (tmp_path / "b.zip").read_bytes() == (tmp_path / "c.zip").read_bytes()
    with zipfile.ZipFile(tmp_path / "a.zip") as z:
        assert {info.date_time for info in z.infolist()} == {(1980, 1, 1, 0, 0, 0)}


@pytest.mark.parametrize("layout", ["kohya", "folder", "diffusers"])
@pytest.mark.parametrize("mode, fit, size", [("square", "crop", 256), ("bucket", "pad", 512)])
def test_every_layout_holds_what_its_trainer_reads(manifest, tmp_path, layout, mode, fit, size):
    import tomllib

    settings = ExportSettings(size=size, layout=layout, mode=mode, fit=fit, crop="page")  # whole pages: one bucket
    export(manifest, tmp_path / "lora.zip", settings)
    files = members(tmp_path / "lora.zip")
    folder = image_folder(settings)
    images = images_of(files)
    assert len(images) == manifest.summary()["kept"] and all(name.rsplit("/", 1)[0] == folder for name in images)
    for name in images:  # a same-stem caption beside every image, in every layout
        assert files[name[:-4] + ".txt"].startswith(b"ohwx, engraving")
    if layout == "kohya":
        toml = tomllib.loads(files["dataset.toml"].decode())
        subset = toml["datasets"][0]["subsets"][0]
        assert subset["image_dir"] == folder == "img/10_ohwx engraving"
        assert toml["datasets"][0]["enable_bucket"] is (mode == "bucket")
    if layout == "diffusers":
        rows = [json.loads(line) for line in files["train/metadata.jsonl"].decode().splitlines()]
        assert [f"train/{row['file_name']}" for row in rows] == list(images)
        assert all(row["text"] == "ohwx, engraving" for row in rows)
    sizes = {Image.open(io.BytesIO(data)).size for data in images.values()}
    assert sizes == ({(256, 256)} if mode == "square" else {(448, 576)})  # 3x4 inch pages: the nearest bucket of area 512²


def test_zip64_records_are_written_past_the_limits(manifest, tmp_path, monkeypatch):
    monkeypatch.setattr(zipfile, "ZIP64_LIMIT", 1 << 16)  # as if each image were past 4 GiB into the file
    export(manifest, tmp_path / "lora.zip", SMALL)
    data = (tmp_path / "lora.zip").read_bytes()
    assert b"PK\x06\x06" in data  # the ZIP64 end of central directory record
    monkeypatch.undo()
    assert len(images_of(members(tmp_path / "lora.zip"))) == manifest.summary()["kept"]


def test_member_names_are_safe_whatever_the_document_is_called(manifest, tmp_path):
    item = select_items(manifest)[0]
    odd = tmp_path / "..Harper's Bazar ü (1890) #3 ..pdf"
    shutil.copy(item.doc, odd)
    manifest.conn.execute("UPDATE documents SET path = ? WHERE id = ?", (str(odd), item.doc_id))
    export(manifest, tmp_path / "lora.zip", SMALL)
    names = list(members(tmp_path / "lora.zip"))
    for name in names:
        check_name(name)
    assert any("/Harper_s_Bazar_u_1890_3-" in name for name in names)


def test_nothing_kept_is_a_clear_error_and_writes_nothing(manifest, tmp_path):
    with pytest.raises(ExportError, match="nothing to export"):
        export(manifest, tmp_path / "lora.zip", SMALL, threshold=1000)
    assert list(tmp_path.glob("*.zip")) == [] and manifest.latest_job("export") is None


def test_pages_that_cannot_be_read_are_skipped_and_listed(manifest, tmp_path):
    items = select_items(manifest)
    gone, changed = items[0].doc_id, items[-1].doc_id  # the first and last documents with kept pages
    assert gone != changed
    fine = next(r for r in manifest.pages() if r["doc_id"] not in (gone, changed))
    manifest.set_override(fine["doc_id"], fine["page"], True)
    manifest.conn.execute("UPDATE documents SET path = ? WHERE id = ?", (str(tmp_path / "gone.pdf"), gone))
    manifest.conn.execute("UPDATE documents SET size = size + 1 WHERE id = ?", (changed,))
    report = export(manifest, tmp_path / "lora.zip", SMALL)
    files = members(tmp_path / "lora.zip")
    skipped = json.loads(files["export.json"])["skipped"]
    reasons = {s["reason"].split(":")[0] for s in skipped}
    assert reasons == {"the file is gone", "the file changed since it was scored; run ingest again"}
    assert len(skipped) == len(report.skipped) == sum(i.doc_id in (gone, changed) for i in items)
    assert report.images == 1 and [r["document"] for r in provenance(files)] == [fine["doc"]]
    assert "could not be read" in manifest.latest_job("export")["message"]


def test_a_stop_request_ends_the_export_and_leaves_no_file(manifest, tmp_path):
    def stop_after_first(done, total):
        if done == 1:
            manifest.request_stop(manifest.running_job("export")["id"])

    report = Export(manifest, tmp_path / "lora.zip", SMALL, on_progress=stop_after_first).run()
    assert report.stopped and report.images == 1
    assert not list(tmp_path.glob("*lora*"))  # neither the ZIP nor its temporary file
    assert manifest.latest_job("export")["status"] == "stopped"


def ten_times_but_crash_on_3(task):
    if task == 3:
        os._exit(139)  # as a MuPDF segfault would
    return task * 10


def test_a_page_that_crashes_its_worker_is_given_up_alone_and_the_order_is_kept():
    results = list(in_order(ten_times_but_crash_on_3, range(8), workers=2))
    assert [task for task, _ in results] == list(range(8))
    assert [r for task, r in results if task != 3] == [0, 10, 20, 40, 50, 60, 70]
    assert results[3][1] == NotExported(CRASH_REASON)
