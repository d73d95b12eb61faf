"""Captions keep their source: a picture's printed legend, a model's caption and the curator's caption
are template placeholders of their own; the default template takes the curator's, else the legend, else
the model's; a whole page takes its largest kept picture's; the ZIP's manifest.csv carries all three and
export.json the template, the sources used and the captioning models."""

import csv
import io
import json
import zipfile

import pytest
from streamlit.testing.v1 import AppTest

from curation import Manifest
from curation.captions.best import best_caption, caption_source
from curation.export import ExportSettings, SettingsError, export, select_items
from curation.export.captions import render_caption
from curation.export.settings import DEFAULT_TEMPLATE

from test_export_cli import record_scores, repeated_scan_pdf, run_cli
from test_export_page import PAGE

LARGE = (20, 20, 300, 300, 3.78)  # reference pixels of a 432 x 576 page, and square inches
SMALL = (320, 400, 420, 560, 0.77)


def render(template=DEFAULT_TEMPLATE, **texts):
    return render_caption(template, trigger="ohwx", class_word="engraving", **texts)


@pytest.mark.parametrize("texts, expected, source", [
    ({"caption": "a lady", "legend": "SEPTEMBER MORN.", "auto_caption": "a woman"}, "ohwx, engraving, a lady", "caption"),
    ({"caption": None, "legend": "SEPTEMBER MORN.", "auto_caption": "a woman"}, "ohwx, engraving, SEPTEMBER MORN.", "legend"),
    ({"caption": "  ", "legend": "", "auto_caption": "a woman bathing"}, "ohwx, engraving, a woman bathing", "auto_caption"),
    ({"caption": None, "legend": None, "auto_caption": None}, "ohwx, engraving", None),
])
def test_the_default_takes_the_curators_caption_else_the_legend_else_the_models(texts, expected, source):
    assert DEFAULT_TEMPLATE == "{trigger}, {class}, {best_caption}"
    assert render(**texts) == expected
    assert caption_source(**texts) == source
    assert best_caption(**texts) == (None if source is None else texts[source])


def test_each_source_has_its_own_placeholder_and_a_template_with_caption_is_unchanged():
    texts = {"caption": None, "legend": "A WET\nDAY.", "auto_caption": "rain, umbrellas"}
    assert render("{trigger}, {legend} | {auto_caption}", **texts) == "ohwx, A WET DAY. | rain, umbrellas"  # one line
    assert render("{trigger}, {class}, {caption}", **texts) == "ohwx, engraving"  # the curator's only, as before
    assert render("{trigger}, {class}, {caption}", **{**texts, "caption": "a street"}) == "ohwx, engraving, a street"
    ExportSettings(template="{trigger}, {legend}, {auto_caption}, {caption}, {best_caption}")  # all accepted
    with pytest.raises(SettingsError, match=r"unknown placeholder \{description\}.*\{best_caption\}.*\{legend\}"):
        ExportSettings(template="{trigger}, {description}")


# -- an export of a generated manifest ----------------------------------------------------------


@pytest.fixture
def manifest(tmp_path):
    """Three kept pages of one scan: p. 1 with a large engraving (legend, model caption) and a small cut
    (model caption only), p. 2 with one picture carrying nothing, p. 3 without a picture."""
    pdf = repeated_scan_pdf(tmp_path / "issue.pdf", 3)
    with Manifest(tmp_path / "manifest.sqlite") as m:
        doc = record_scores(m, pdf, [60, 70, 80])
        m.rule = "sigma"  # every picture of a kept page is kept
        m.picture_area_min = 0.5
        m.set_pictures(doc, 0, [(*LARGE, "SEPTEMBER MORN.", 0.91), SMALL])
        m.set_pictures(doc, 1, [LARGE])
        large, small = (m.picture_by_number(doc, 0, n)["id"] for n in (1, 2))
        m.set_auto_captions([(large, "a woman bathing in a lake", "tiny-blip@abc123"),
                             (small, "a bottle of ink", "tiny-florence@def456")])
        yield m


def exported(manifest, path, **settings):
    export(manifest, path, ExportSettings(size=64, layout="folder", **settings))
    with zipfile.ZipFile(path) as z:
        rows = list(csv.DictReader(io.StringIO(z.read("manifest.csv").decode())))
        texts = {r["file"]: z.read(r["file"][:-4] + ".txt").decode() for r in rows}
        return rows, texts, json.loads(z.read("export.json"))


def sources(row):
    return {k: row[k] for k in ("curator_caption", "legend", "auto_caption", "auto_caption_model", "caption_source")}


def test_each_picture_exports_its_best_caption_and_the_csv_carries_all_three(manifest, tmp_path):
    rows, texts, document = exported(manifest, tmp_path / "a.zip", crop="pictures")
    assert [(r["page"], r["picture"], r["caption"]) for r in rows] == [
        ("1", "1", "ohwx, engraving, SEPTEMBER MORN."), ("1", "2", "ohwx, engraving, a bottle of ink"),
        ("2", "1", "ohwx, engraving"), ("3", "", "ohwx, engraving")]
    assert all(texts[r["file"]] == r["caption"] for r in rows)
    assert sources(rows[0]) == {"curator_caption": "", "legend": "SEPTEMBER MORN.",
                                "auto_caption": "a woman bathing in a lake", "auto_caption_model": "tiny-blip@abc123",
                                "caption_source": "legend"}
    assert sources(rows[1])["caption_source"] == "auto_caption" and sources(rows[2])["caption_source"] == ""
    assert document["captions"] == {
        "template": DEFAULT_TEMPLATE, "best_caption_sources": {"caption": 0, "legend": 1, "auto_caption": 1, "none": 2},
        "auto_caption_models": ["tiny-blip@abc123", "tiny-florence@def456"]}
    assert document["settings"]["template"] == DEFAULT_TEMPLATE


def test_the_curators_caption_always_wins(manifest, tmp_path):
    large = next(manifest.picture_rows())["id"]
    manifest.set_picture_captions([(large, "a bather, 1912")])
    rows, _, document = exported(manifest, tmp_path / "a.zip", crop="pictures")
    assert rows[0]["caption"] == "ohwx, engraving, a bather, 1912"
    assert sources(rows[0])["curator_caption"] == "a bather, 1912" and sources(rows[0])["legend"] == "SEPTEMBER MORN."
    assert document["captions"]["best_caption_sources"]["caption"] == 1


def test_a_whole_page_takes_its_largest_kept_pictures_captions(manifest, tmp_path):
    rows, _, document = exported(manifest, tmp_path / "a.zip", crop="page", template="{trigger}, {legend}, {auto_caption}")
    assert [r["caption"] for r in rows] == ["ohwx, SEPTEMBER MORN., a woman bathing in a lake", "ohwx", "ohwx"]
    assert document["captions"]["auto_caption_models"] == ["tiny-blip@abc123"]  # the small cut's is not exported
    doc_id = next(manifest.pages())["doc_id"]
    manifest.set_picture_override(manifest.picture_by_number(doc_id, 0, 1)["id"], False)  # the engraving: excluded
    [first] = [i for i in select_items(manifest) if i.page == 0]
    assert (first.legend, first.auto_caption) == (None, "a bottle of ink")  # now the largest kept is the cut
    manifest.set_caption(doc_id, 0, "a page of advertisements")  # the page's own caption wins
    manifest.set_picture_captions([(manifest.picture_by_number(doc_id, 0, 2)["id"], "an ink bottle")])
    [first] = [i for i in select_items(manifest, crop="picture") if i.page == 0]
    assert first.caption == "a page of advertisements"
    manifest.set_caption(doc_id, 0, None)  # without it, the picture's typed caption
    [first] = [i for i in select_items(manifest) if i.page == 0]
    assert first.caption == "an ink bottle"


def test_an_old_template_with_caption_exports_as_before(manifest, tmp_path):
    rows, _, document = exported(manifest, tmp_path / "a.zip", crop="pictures", template="{trigger}, {class}, {caption}")
    assert [r["caption"] for r in rows] == ["ohwx, engraving"] * 4  # legends and model captions are not used
    assert rows[0]["legend"] == "SEPTEMBER MORN."  # but the table still says what there was
    assert document["captions"]["template"] == "{trigger}, {class}, {caption}"


def test_the_command_line_and_the_export_page_offer_the_new_placeholders(manifest, tmp_path, monkeypatch):
    help_text = " ".join(run_cli("--help").stdout.split())
    assert "[default: {trigger}, {class}, {best_caption}]" in help_text
    assert all(name in help_text for name in ("{legend}", "{auto_caption}", "{best_caption}"))
    manifest.close()
    monkeypatch.setenv("CURATION_DB", str(tmp_path / "manifest.sqlite"))
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.run()
    assert not at.exception
    template = at.text_input(key="export_template")
    assert template.value == DEFAULT_TEMPLATE
    assert all(name in template.help for name in ("{legend}", "{auto_caption}", "{best_caption}", "{caption}"))


def test_a_legend_read_unsurely_by_an_earlier_ingest_is_not_a_caption(manifest, tmp_path):
    doc = manifest.documents()[0]["id"]
    manifest.set_pictures(doc, 0, [(*LARGE, "KKKK KK ROR", 0.62), SMALL])  # hatching read as letters, kept before
    rows, texts, _ = exported(manifest, tmp_path / "b.zip", crop="pictures")
    assert (rows[0]["caption"], rows[0]["legend"], rows[0]["caption_source"]) == (
        "ohwx, engraving, a woman bathing in a lake", "", "auto_caption")
