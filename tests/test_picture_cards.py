"""A picture's card is its crop as the export writes it, cut at ingest and kept with the page thumbnails (a box
drawn or redrawn later is cut then); a picture's kind set by the curator (the suggestion:
test_picture_kinds.py); a wrong legend or model caption switched off ("no legend"), kept, undone, and honoured by the export."""

import csv
import io
import json
import pathlib
from dataclasses import replace

import pymupdf
import pytest
from PIL import Image

from curation.export import ExportSettings
from curation.export.card import CARD_SIDE, picture_card
from curation.manifest import history
from curation.manifest.pictures import PictureError, store_suggested_kinds
from curation.views import picture_views as pv

from test_export_crop import blurred_psnr
from test_cli import run as run_cli
from test_export_pictures import exported, manifest, pages, scored_db  # noqa: F401 (fixtures)


def pictures_of(manifest):
    return list(manifest.picture_rows(order="x.number"))


def test_each_card_is_the_exported_picture_scaled(manifest, tmp_path):
    rows = pictures_of(manifest)
    cards = manifest.picture_cards(rows)
    assert set(cards) == {row["id"] for row in rows}  # cut at ingest, kept in the manifest
    _, images, _ = exported(manifest, tmp_path / "lora.zip", ExportSettings(crop="pictures"))
    for row in rows:
        (name,) = [n for n in images if n.endswith(f"_pic{row['number']}.jpg")]
        card = Image.open(io.BytesIO(cards[row["id"]]))
        assert card.size == (CARD_SIDE, CARD_SIDE)
        expected = images[name].convert("RGB").resize(card.size, Image.Resampling.LANCZOS)
        assert blurred_psnr(card, expected) > 32


def test_a_redrawn_box_gets_its_own_card_and_an_undo_the_old_one(manifest):
    row = pictures_of(manifest)[0]
    before = pv.crops(manifest, [row])[row["id"]]
    manifest.set_picture_box(row["id"], [row["bx0"], row["by0"], (row["bx0"] + row["bx1"]) // 2, row["by1"]])
    redrawn = manifest.picture(row["id"])
    assert manifest.picture_cards([redrawn]) == {}  # the kept card is of the old box: not shown for the new one
    after = pv.crops(manifest, [redrawn])[row["id"]]
    assert manifest.picture_cards([redrawn]) == {row["id"]: after}  # drawn from the PDF, and kept
    with pymupdf.open(row["doc"]) as pdf:  # the new box as the export crops it
        assert after == picture_card(pdf, row["page"], [redrawn[k] for k in ("bx0", "by0", "bx1", "by1")],
                                     row["width"], row["height"]) != before
    manifest.undo()
    again = pv.crops(manifest, [manifest.picture(row["id"])])[row["id"]]
    assert blurred_psnr(Image.open(io.BytesIO(again)), Image.open(io.BytesIO(before))) > 40


def captions_in(manifest, path, template: str) -> list[str]:
    rows, _, _ = exported(manifest, path, ExportSettings(crop="pictures", size=64, template=template))
    return [row["caption"].removeprefix("ohwx").removeprefix(", ") for row in rows if row["picture"]]


def test_no_legend_is_kept_exported_and_undone(manifest, tmp_path):
    first, second = pictures_of(manifest)
    manifest.conn.executemany("UPDATE pictures SET legend = ? WHERE id = ?",
                              [("FIG. 1. A WRONG LEGEND", first["id"]), ("THE HARVEST", second["id"])])
    manifest.set_auto_captions([(first["id"], "a man with a hat", "tiny")])
    template = "{trigger}, {best_caption}"
    assert captions_in(manifest, tmp_path / "a.zip", template) == ["FIG. 1. A WRONG LEGEND", "THE HARVEST"]
    manifest.set_no_legend([(first["id"], True)])
    manifest.set_picture_captions([(first["id"], "")])  # clearing the caption does not bring the legend back
    assert captions_in(manifest, tmp_path / "b.zip", template) == ["a man with a hat", "THE HARVEST"]
    switched = history.actions(manifest.conn, limit=2)[1]
    assert switched["description"].startswith("switched off the legend of picture 1")
    manifest.set_no_auto_caption([(first["id"], True)])
    assert captions_in(manifest, tmp_path / "c.zip", template) == ["", "THE HARVEST"]  # nothing left to say
    manifest.undo()  # the model's caption is on again
    manifest.undo(switched["id"])  # and the legend
    assert captions_in(manifest, tmp_path / "d.zip", template) == ["FIG. 1. A WRONG LEGEND", "THE HARVEST"]


def test_the_curator_sets_a_pictures_kind_the_caption_uses_and_an_undo_takes_it_back(manifest, tmp_path):
    first, second = pictures_of(manifest)
    assert first["kind_suggested"] is second["kind_suggested"] is None  # ingest suggests none: the picture job does
    manifest.set_picture_kinds([(first["id"], "drawing"), (second["id"], "woodcut")])
    assert captions_in(manifest, tmp_path / "k.zip", "{trigger}, {kind}") == ["drawing", "woodcut"]
    with pytest.raises(PictureError, match="one of engraving, woodcut, halftone, photograph, drawing"):
        manifest.set_picture_kinds([(first["id"], "ornament")])
    manifest.undo()
    assert manifest.picture(second["id"])["kind"] is None


def test_the_cli_lists_kind_legend_and_the_model_caption_as_the_app_shows_them(manifest):
    first, _ = pictures_of(manifest)
    store_suggested_kinds(manifest.conn, [(first["id"], "engraving")])  # as the picture job suggests it
    manifest.conn.execute("UPDATE pictures SET legend = 'THE HARVEST', legend_confidence = 0.91 WHERE id = ?",
                          (first["id"],))
    manifest.set_auto_captions([(first["id"], "a field", "florence-2-base")])
    manifest.set_no_legend([(first["id"], True)])
    rows = list(csv.DictReader(io.StringIO(run_cli("pictures", "--db", manifest.path, "--format", "csv"))))
    row = next(r for r in rows if r["picture"] == str(first["number"]) and r["page"] == "1")
    assert (row["kind"], row["kind_by"], row["legend"], row["legend_confidence"], row["no_legend"]) == (
        "engraving", "suggested", "THE HARVEST", "0.91", "True")
    assert (row["auto_caption"], row["auto_caption_model"], row["no_auto_caption"]) == ("a field", "florence-2-base",
                                                                                         "False")
    listed = [json.loads(line) for line in run_cli("pictures", "--db", manifest.path, "--format", "jsonl").splitlines()]
    assert listed[0]["kind"] == "engraving" and listed[0]["no_legend"] is True


def test_without_its_pdf_a_redrawn_box_is_cut_from_the_page_thumbnail(manifest, tmp_path):
    row = pictures_of(manifest)[0]
    manifest.set_picture_box(row["id"], [row["bx0"], row["by0"], row["bx1"] - 40, row["by1"] - 40])
    moved = tmp_path / "elsewhere.pdf"
    pathlib.Path(row["doc"]).rename(moved)
    redrawn = manifest.picture(row["id"])
    card = pv.crops(manifest, [redrawn])[row["id"]]  # a card all the same, small and soft
    assert Image.open(io.BytesIO(card)).size == (pv.CROP_SIDE, pv.CROP_SIDE)
    assert manifest.picture_cards([redrawn]) == {}  # and none kept: drawn from the PDF once it is back
    pathlib.Path(moved).rename(row["doc"])


def test_missing_cards_are_cut_a_few_a_run_and_the_screen_says_so(manifest, monkeypatch):
    """A screen whose cards are not kept (a manifest ingested before cards were kept, boxes redrawn elsewhere) is
    drawn at once, each card cut from its page's thumbnail meanwhile, saying it waits for the cards, which the
    runs after cut from the PDFs and keep; never a whole screen of PDF pages on the click."""
    from apptest_support import page as app_page, ran, texts
    from pages.components import pictures_view

    rows = pictures_of(manifest)
    manifest.conn.execute("DELETE FROM picture_thumbnails")
    monkeypatch.setenv("CURATION_DB", str(manifest.path))
    monkeypatch.setattr(pictures_view, "CARD_SECONDS", 0.0)  # a run's time spent before the first card
    at = ran(app_page("pages/review.py"))
    at.segmented_control(key="view").set_value("pictures")
    ran(at)
    assert f"Cutting this screen's cards from their PDFs: 0 of {len(rows)}" in texts(at)
    assert len(grid_images(at)) == len(rows)  # every card shown, from its page's thumbnail
    assert manifest.picture_cards(rows) == {}

    monkeypatch.setattr(pictures_view, "CARD_SECONDS", 30.0)
    ran(at)  # what the fragment's rerun does
    assert "Cutting this screen's cards" not in texts(at)
    assert set(manifest.picture_cards(rows)) == {row["id"] for row in rows}  # cut from the PDFs, and kept


def grid_images(at) -> list[str]:
    from apptest_support import grid_cards

    return [html for html in grid_cards(at).values() if "<img" in html]


def test_a_pages_cards_at_one_reduction_decode_its_scan_once_and_are_cut_as_one_by_one(tmp_path, monkeypatch):
    import simplejpeg

    from curation.export.card import with_picture_cards
    from curation.scoring.scorer import score_page
    from curation.sources.synthetic import PageSpec, write_pdf

    pdf = pymupdf.open(write_pdf(tmp_path / "scan.pdf", [PageSpec(kind="engraving", seed=4, dpi=300, inches=(3.0, 4.0))]))
    scored = score_page(pdf, 0)
    assert scored.method == "jpeg"
    w, h = scored.width, scored.height
    boxes = [[w // 10, h // 10, w // 2, h // 3], [w // 2, h // 2, w * 9 // 10, h * 3 // 4]]  # the same size
    page = replace(scored, features={**scored.features, "pictures": json.dumps([[*b, 1.0] for b in boxes])})
    one_by_one = [picture_card(pdf, 0, box, w, h) for box in boxes]
    decodes = []
    decode = simplejpeg.decode_jpeg
    monkeypatch.setattr(simplejpeg, "decode_jpeg", lambda *a, **k: decodes.append(1) or decode(*a, **k))
    assert with_picture_cards(page, pdf).picture_cards == tuple(one_by_one)
    assert len(decodes) == 1
