"""Layouts, captions, names and settings: the parts of an export that are text."""

import dataclasses
import json
import tomllib

import pytest
import toml as kohya_toml_parser
from click.testing import CliRunner

from curation import Manifest
from curation.cli import cli
from curation.export import ExportSettings, SettingsError, image_folder, safe_zip_name
from curation.export.captions import render_caption
from curation.export.layouts import Record, kohya_toml, mask_folder, metadata_jsonl, provenance_csv
from curation.export.selection import Item, safe_stem
from curation.export.zipwriter import UnsafeName, check_name


def record(name="issue-0-abcdef12-p0004", caption="ohwx, engraving, a hat", folder="train", **extra):
    item = Item(1, 3, "/archive/issue-0.pdf", "abcdef12" * 8, 1000, 61.25, "override", "a hat", name,
                **{"width": 1224, "height": 1584, **extra})
    return Record(item, f"{folder}/{name}.jpg", caption, 1024, 1024, "jpeg")


def test_kohya_folder_and_dataset_toml_agree():
    settings = ExportSettings(trigger="bzr1890", class_word="fashion plate", repeats=20, mode="bucket", size=1024,
                              masks=False)
    assert image_folder(settings) == "img/20_bzr1890 fashion plate"
    toml = tomllib.loads(kohya_toml(settings))
    dataset = toml["datasets"][0]
    assert toml["general"]["caption_extension"] == ".txt"
    assert (dataset["resolution"], dataset["enable_bucket"], dataset["bucket_reso_steps"]) == (1024, True, 64)
    assert (dataset["min_bucket_reso"], dataset["max_bucket_reso"]) == (256, 2048)
    assert dataset["subsets"] == [{"image_dir": "img/20_bzr1890 fashion plate", "num_repeats": 20,
                                   "class_tokens": "bzr1890 fashion plate"}]


def test_trigger_and_class_cannot_escape_the_image_folder():
    settings = ExportSettings(trigger='../../etc/"x', class_word="a\\b:c")
    folder = image_folder(settings)
    assert folder.count("/") == 1 and ".." not in folder.split("/")
    check_name(folder + "/x.jpg")
    assert tomllib.loads(kohya_toml(settings))["datasets"][0]["subsets"][0]["image_dir"] == folder


def test_other_layouts_use_plain_folders():
    assert image_folder(ExportSettings(layout="folder")) == "images"
    assert image_folder(ExportSettings(layout="diffusers")) == "train"


def test_diffusers_metadata_names_each_file_with_its_caption():
    rows = [json.loads(line) for line in metadata_jsonl([record(), record("b", "ohwx, ü")]).decode().splitlines()]
    assert rows == [{"file_name": "issue-0-abcdef12-p0004.jpg", "text": "ohwx, engraving, a hat"},
                    {"file_name": "b.jpg", "text": "ohwx, ü"}]


def test_provenance_table_says_where_each_image_came_from():
    cut = dataclasses.replace(record("b", picture_box=(100, 80, 900, 700), group=7), crop=(88, 68, 912, 712))
    second = dataclasses.replace(record("c", picture_box=(10, 20, 90, 100), picture=2), crop=(0, 7, 103, 113))
    lines = provenance_csv([record(), cut, second]).decode().splitlines()
    assert lines[0] == ("file,document,sha256,page,sigma,decided_by,caption,width,height,source,"
                        "duplicate_group,crop,crop_x0,crop_y0,crop_x1,crop_y1,picture,"
                        "curator_caption,legend,auto_caption,auto_caption_model,caption_source,mask,mask_share")
    # page index 3 in the manifest is page 4, in the file name and the page column alike
    assert lines[1].startswith("train/issue-0-abcdef12-p0004.jpg,/archive/issue-0.pdf,abcdef12")
    captions = ",a hat,,,,caption,,"  # the curator's caption, no legend, no model caption: the caption won; no mask
    assert lines[1].endswith(',4,61.250,override,"ohwx, engraving, a hat",1024,1024,jpeg,,page,0,0,1224,1584,' + captions)
    assert lines[2].endswith(",jpeg,7,picture,88,68,912,712," + captions)  # its group, and the part of the page it shows
    assert lines[3].endswith(",jpeg,,picture,0,7,103,113,2" + captions)  # crop "pictures": the second picture of its page


@pytest.mark.parametrize("caption, expected", [
    (None, "ohwx, engraving"),
    ("", "ohwx, engraving"),
    ("a lady\nwith a  parasol ", "ohwx, engraving, a lady with a parasol"),
    ("hat, gloves", "ohwx, engraving, hat, gloves"),
])
def test_captions_are_one_tidy_line(caption, expected):
    assert render_caption("{trigger}, {class}, {caption}", trigger="ohwx", class_word="engraving",
                          caption=caption) == expected


def test_captions_can_name_the_document_and_page():
    text = render_caption("{trigger} {doc} p{page}", trigger="t", class_word="", doc="issue-3", page=7)
    assert text == "t issue-3 p7"


@pytest.mark.parametrize("options, message", [
    ({"template": "{trigger}, {style}"}, "unknown placeholder {style}"),
    ({"template": "{class}, {caption}"}, "must contain {trigger}"),
    ({"template": "{trigger}, {caption"}, "malformed"),
    ({"template": "{trigger} {caption:d}"}, "placeholders take a name only"),
    ({"trigger": "  "}, "trigger word must not be empty"),
    ({"size": 32}, "size must be between"),
    ({"mode": "bucket", "size": 256}, "bucket mode needs a size of at least 512"),
    ({"quality": 0}, "quality"),
    ({"layout": "webdataset"}, "layout must be one of"),
    ({"fit": "fill"}, "fit must be one of"),
    ({"pad_colour": "red"}, "pad colour"),
    ({"crop": "plate"}, "crop must be one of page, picture"),
    ({"duplicates": "none"}, "duplicates must be one of one, all"),
])
def test_settings_that_cannot_work_are_refused_with_the_reason(options, message):
    with pytest.raises(SettingsError, match=message.replace("{", r"\{").replace("}", r"\}")):
        ExportSettings(**options)


@pytest.mark.parametrize("field", ["trigger", "class_word"])
@pytest.mark.parametrize("char", ["\x7f", "\x00", "\x1b", "\t", "\n", "\r", "\x85", "\u2028"])
def test_control_characters_in_trigger_and_class_are_refused(field, char):
    with pytest.raises(SettingsError, match=rf"must not hold control characters.*U\+{ord(char):04X}"):
        ExportSettings(**{field: f"oh{char}wx"})


def test_the_command_line_says_why_a_control_character_is_refused(tmp_path):
    Manifest(tmp_path / "m.sqlite").close()
    result = CliRunner().invoke(cli, ["export", "--db", str(tmp_path / "m.sqlite"), "--out", str(tmp_path / "x.zip"),
                                      "--trigger", "ohwx\x7f"])
    assert result.exit_code == 2 and "trigger word must not hold control characters" in result.output
    assert "U+007F" in result.output and not (tmp_path / "x.zip").exists()


@pytest.mark.parametrize("trigger, class_word", [
    ('sks"', "a\\b"), ("#ohwx", "[[datasets]]"), ("x = 1", "'''"), ("ünï", "漢字 🎨"), ("a\u200db", "c\u00a0d"),
    ("\\u0041", '"""'),
])
def test_dataset_toml_reads_back_the_same_words_in_kohya_s_parser(trigger, class_word):
    for masks in (False, True):  # without masks the class tokens; with them the masks' folder (mask_folder)
        settings = ExportSettings(trigger=trigger, class_word=class_word, masks=masks)
        text = kohya_toml(settings)
        for loads in (tomllib.loads, kohya_toml_parser.loads):  # the standard, and the `toml` package sd-scripts uses
            subset = loads(text)["datasets"][0]["subsets"][0]
            if masks:
                assert subset["conditioning_data_dir"] == mask_folder(settings) and "class_tokens" not in subset
            else:
                assert subset["class_tokens"] == f"{trigger} {class_word}"
            assert subset["image_dir"] == image_folder(settings)


def test_settings_round_trip_through_the_command_line():
    settings = ExportSettings(mode="bucket", size=768, quality=85, layout="diffusers", trigger="a b",
                              class_word="plate", template="{trigger}; {caption}", repeats=3, pad_colour="#102030",
                              crop="picture", duplicates="all", masks=True)
    context = cli.commands["export"].make_context("export", ["--out", "x.zip", *settings.cli_args()])
    params = {k: v for k, v in context.params.items() if k in settings.as_dict()}
    assert ExportSettings(**params) == settings
    defaults = cli.commands["export"].make_context("export", ["--out", "x.zip"]).params
    assert ExportSettings(**{k: v for k, v in defaults.items() if k in settings.as_dict()}) == ExportSettings()


@pytest.mark.parametrize("name", ["../x.jpg", "/etc/passwd", "a/../../b", "a\\b.jpg", "C:/x", "a//b", "a/./b",
                                  "x\x00.jpg", ""])
def test_unsafe_member_names_are_refused(name):
    with pytest.raises(UnsafeName):
        check_name(name)


@pytest.mark.parametrize("path, stem", [
    ("/archive/issue-003.pdf", "issue-003"),
    ("/a/..Harper's Bazar ü (1890).pdf", "Harper_s_Bazar_u_1890"),
    ("C:\\scans\\vol 2.pdf", "vol_2"),
    ("/a/....pdf", "doc"),
])
def test_document_names_become_safe_stems(path, stem):
    assert safe_stem(path) == stem


def test_typed_zip_names_stay_in_the_exports_folder():
    assert safe_zip_name("../../etc/passwd") == "passwd.zip"
    assert safe_zip_name("my set.ZIP") == "my_set.zip"
    assert safe_zip_name(" ") == "lora.zip"
