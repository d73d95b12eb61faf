"""Masks for masked loss: each exported image's mask, read the way the trainers read it.

sd-scripts is not installed here (it pulls torch, diffusers and accelerate at import), so its lookup rules are
reproduced below from its source, read with the code search (kohya-ss/sd-scripts):

- library/config_util.py (ConfigSanitizer, commit 02534721): a dataset whose every subset has
  `conditioning_data_dir` is a ControlNet dataset (BlueprintGenerator.generate: `is_controlnet = all(...)`), its
  subsets checked against SUBSET_ASCENDABLE_SCHEMA + CN_SUBSET_DISTINCT_SCHEMA (Required image_dir,
  Required conditioning_data_dir) + CN_SUBSET_ASCENDABLE_SCHEMA (caption_extension, cache_info): no class_tokens.
  The trainers build the sanitizer as ConfigSanitizer(True, True, args.masked_loss, True): without --masked_loss
  the conditioning schema is not allowed at all.
- library/train_util.py (ControlNetDataset.__init__, commit 0005867b): for each image,
  `glob_images(subset.conditioning_data_dir, splitext(basename(image))[0])` must find one file (else "missing
  conditioning data"), and every file there must pair with an image (else "extra conditioning data");
  __getitem__ asserts, with buckets on, that the conditioning image has its image's size, then reads it as RGB.
  docs/masked_loss_README-ja.md: white is learned, black ignored, gray a weight; the R channel is used.

OneTrainer (its dataset tools and mgds loader, read the same way): an image's mask is
`image_path.with_name(f"{image_path.stem}-masklabel.png")`, read as gray ("L"), and its image lists skip names
ending in "-masklabel.png".
"""

import glob
import io
import json
import os
import pathlib
import tomllib
import zipfile

import numpy as np
import pytest
import toml as sd_scripts_toml  # the parser sd-scripts loads dataset.toml with
from PIL import Image

from curation.export import ExportSettings, export
from curation.export.selection import select_items
from curation.export.worker import mask_task
from curation.manifest import history
from curation.pictures import region
from curation.pictures.region import MaskSource

from test_export_pictures import DRAWINGS, REF, manifest, pages, scored_db  # noqa: F401 (fixtures)

SD_SCRIPTS_IMAGE_EXTENSIONS = [".png", ".jpg", ".jpeg", ".webp", ".bmp", ".PNG", ".JPG", ".JPEG", ".WEBP", ".BMP"]
CN_SUBSET_KEYS = {  # config_util.ConfigSanitizer: SUBSET_ASCENDABLE + CN_SUBSET_DISTINCT + CN_SUBSET_ASCENDABLE
    "color_aug", "face_crop_aug_range", "flip_aug", "num_repeats", "random_crop", "shuffle_caption", "keep_tokens",
    "keep_tokens_separator", "secondary_separator", "enable_wildcard", "token_warmup_min", "token_warmup_step",
    "caption_prefix", "caption_suffix", "caption_dropout_every_n_epochs", "caption_dropout_rate",
    "caption_tag_dropout_rate", "image_dir", "conditioning_data_dir", "caption_extension", "cache_info"}


def unpacked(manifest, tmp_path, settings) -> pathlib.Path:
    path = tmp_path / "lora.zip"
    export(manifest, path, settings)
    folder = tmp_path / "unpacked"
    with zipfile.ZipFile(path) as z:
        z.extractall(folder)
    return folder


def sd_scripts_pairs(folder: pathlib.Path) -> list[tuple[str, str]]:
    """(image, its mask) as sd-scripts pairs them from dataset.toml (see the module), asserting as it does."""
    config = sd_scripts_toml.load(folder / "dataset.toml")
    training = sd_scripts_toml.load(folder / "training.toml")
    assert training["training"]["masked_loss"] is True and training["training"]["dataset_config"] == "dataset.toml"
    pairs = []
    for dataset in config["datasets"]:
        subsets = dataset["subsets"]
        assert all("conditioning_data_dir" in s for s in subsets)  # is_controlnet: the masks are read
        for subset in subsets:
            assert set(subset) <= CN_SUBSET_KEYS, set(subset) - CN_SUBSET_KEYS
            image_dir, masks = folder / subset["image_dir"], folder / subset["conditioning_data_dir"]
            images = [p for p in sorted(image_dir.iterdir()) if p.suffix in SD_SCRIPTS_IMAGE_EXTENSIONS]
            paired = set()
            for image in images:
                stem = os.path.splitext(os.path.basename(image))[0]
                found = [p for ext in SD_SCRIPTS_IMAGE_EXTENSIONS
                         for p in glob.glob(os.path.join(glob.escape(str(masks)), glob.escape(stem) + ext))]
                assert len(found) == 1, f"missing conditioning data for {stem}"
                pairs.append((str(image), found[0]))
                paired.add(os.path.splitext(os.path.abspath(found[0]))[0])
            extra = [p for ext in SD_SCRIPTS_IMAGE_EXTENSIONS for p in glob.glob(os.path.join(glob.escape(str(masks)), "*" + ext))
                     if os.path.splitext(os.path.abspath(p))[0] not in paired]
            assert not extra, f"extra conditioning data: {extra}"
    return pairs


def weight(mask_path) -> np.ndarray:
    """The loss weight sd-scripts takes from a mask: its R channel (read as RGB), 0..1."""
    return np.asarray(Image.open(mask_path).convert("RGB"))[..., 0] / 255.0


@pytest.mark.parametrize("mode", ["square", "bucket"])
def test_kohya_masks_are_where_sd_scripts_looks_and_the_size_of_their_images(manifest, tmp_path, mode):
    folder = unpacked(manifest, tmp_path, ExportSettings(size=512, mode=mode))  # masks on: the kohya default
    pairs = sd_scripts_pairs(folder)
    assert len(pairs) == 3  # two pictures and a page without one
    for image, mask in pairs:
        assert Image.open(image).size == Image.open(mask).size
        assert Image.open(mask).mode == "L"
    document = json.loads((folder / "export.json").read_text())
    masks = document["masks"]
    assert masks["written"] and masks["images_with_masks"] == 3 and masks["images_without_masks"] == []
    assert masks["made_from"] == {"region": 2, "box": 0, "whole_image": 1}
    assert 0 < masks["mean_share"] < 1
    rows = (folder / "manifest.csv").read_text().splitlines()
    assert rows[0].endswith(",mask,mask_share") and all(".png," in row for row in rows[1:])


def test_a_picture_s_mask_is_its_drawing_not_the_margin_nor_the_padding(manifest, tmp_path, pages):
    folder = unpacked(manifest, tmp_path, ExportSettings(size=512))
    pairs = dict(sd_scripts_pairs(folder))
    large = next(image for image in pairs if image.endswith("_pic1.jpg"))
    w = weight(pairs[large])
    crop = next(item for item in select_items(manifest, crop="pictures") if item.name.endswith("_pic1"))
    task = mask_task(crop, ExportSettings(size=512))
    x0, y0, x1, y1 = task.span
    scale = 512 / max(x1 - x0, y1 - y0)  # square pad: the crop's longer side fills the square
    width, height = round((x1 - x0) * scale), round((y1 - y0) * scale)
    left, top = (512 - width) // 2, (512 - height) // 2
    assert not w[:, :left].any() and not w[:, left + width:].any()  # the padding is never learned
    assert not w[:top].any() and not w[top + height:].any()
    assert left + top > 0  # (the picture is not square: there is padding)
    # the drawing's ink, brought into the image, is learned; the crop's margin round the picture's box is not
    ink = pages["masks"]["large"]
    ys, xs = np.nonzero(ink)
    ix = np.clip(((xs * REF - x0) * scale + left).astype(int), 0, 511)
    iy = np.clip(((ys * REF - y0) * scale + top).astype(int), 0, 511)
    assert (w[iy, ix] >= 0.5).mean() > 0.99
    bx0, by0 = (crop.picture_box[0] - x0) * scale + left, (crop.picture_box[1] - y0) * scale + top
    assert int(by0) - 2 > top and int(bx0) - 2 > left
    assert not w[top:int(by0) - 2, left:left + width].any() and not w[top:top + height, left:int(bx0) - 2].any()
    whole = next(image for image in pairs if image.endswith("p0002.jpg"))
    page = weight(pairs[whole])  # a 6 x 8 inch page exported whole: all of it learned, its padding not
    assert page[:, 64:448].min() == 1.0 and page[:, :64].max() == 0 and page[:, 448:].max() == 0


def test_onetrainer_finds_each_mask_beside_its_image(manifest, tmp_path):
    folder = unpacked(manifest, tmp_path, ExportSettings(size=256, layout="folder", masks=True))
    listed = [p for p in sorted((folder / "images").iterdir())
              if p.suffix in (".jpg", ".png") and "-masklabel.png" not in p.name]  # OneTrainer's image list
    assert len(listed) == 3 and all(p.suffix == ".jpg" for p in listed)
    for image in listed:
        mask = image.with_name(f"{image.stem}-masklabel.png")
        assert mask.exists() and Image.open(mask).convert("L").size == Image.open(image).size
    assert not (folder / "dataset.toml").exists()


def test_masks_are_off_unasked_for_folder_and_diffusers_and_on_when_asked(manifest, tmp_path):
    for layout in ("folder", "diffusers"):
        path = tmp_path / f"{layout}.zip"
        export(manifest, path, ExportSettings(size=64, layout=layout))
        with zipfile.ZipFile(path) as z:
            assert not [n for n in z.namelist() if n.endswith(".png")]
            assert json.loads(z.read("export.json"))["masks"] == {"written": False}
    path = tmp_path / "diffusers-masks.zip"
    export(manifest, path, ExportSettings(size=64, layout="diffusers", masks=True))
    with zipfile.ZipFile(path) as z:
        masks = sorted(n for n in z.namelist() if n.endswith(".png"))
        assert len(masks) == 3 and all(n.startswith("masks/") for n in masks)
        assert not [n for n in z.namelist() if n.startswith("train/") and n.endswith(".png")]


def test_without_masks_kohya_trains_as_before(manifest, tmp_path):
    folder = unpacked(manifest, tmp_path, ExportSettings(size=64, masks=False))
    subset = tomllib.loads((folder / "dataset.toml").read_text())["datasets"][0]["subsets"][0]
    assert "class_tokens" in subset and "conditioning_data_dir" not in subset
    assert not (folder / "mask").exists() and not (folder / "training.toml").exists()


def test_a_mask_turned_off_or_painted_out_changes_the_export_and_undo_takes_it_back(manifest, tmp_path):
    doc_id = next(manifest.pages())["doc_id"]
    picture = manifest.picture_by_number(doc_id, 0, 1)
    item = next(i for i in select_items(manifest, crop="pictures") if i.picture == 1)
    span = mask_task(item, ExportSettings()).span
    before = item.mask.mask(span, item.picture_box)
    assert item.mask.kind == "region" and 0.3 < before.mean() < 1
    manifest.set_mask_off([(picture["id"], True)])
    off = next(i for i in select_items(manifest, crop="pictures") if i.picture == 1)
    whole = off.mask.mask(span, off.picture_box)
    x0, y0, x1, y1 = off.picture_box
    assert whole[y0 - span[1]:y1 - span[1], x0 - span[0]:x1 - span[0]].all() and off.mask.kind == "box"
    manifest.undo()
    stamp = (x0 + 20, y0 + 20, x0 + 80, y0 + 60)
    manifest.add_mask_stamp(picture["id"], stamp)
    stamped = next(i for i in select_items(manifest, crop="pictures") if i.picture == 1)
    cut = stamped.mask.mask(span, stamped.picture_box)
    assert not cut[stamp[1] - span[1]:stamp[3] - span[1], stamp[0] - span[0]:stamp[2] - span[0]].any()
    manifest.clear_mask_stamps(picture["id"])
    assert manifest.picture(picture["id"])["mask_stamps"] is None
    manifest.undo()  # the stamp is back, then undone itself
    assert manifest.picture(picture["id"])["mask_stamps"] is not None
    manifest.undo(history.actions(manifest.conn, limit=4)[2]["id"])
    again = next(i for i in select_items(manifest, crop="pictures") if i.picture == 1)
    assert np.array_equal(again.mask.mask(span, again.picture_box), before)
    said = [row["description"] for row in history.actions(manifest.conn, limit=10)]
    assert any("painted out part of the mask of picture 1" in text for text in said)
    assert any("turned off the mask of picture 1" in text for text in said)
    assert any("took back the painted-out parts of the mask of picture 1" in text for text in said)


def test_a_redrawn_box_bounds_the_mask(manifest):
    doc_id = next(manifest.pages())["doc_id"]
    picture = manifest.picture_by_number(doc_id, 0, 1)
    x0, y0, x1, y1 = picture["x0"], picture["y0"], picture["x1"], picture["y1"]
    manifest.set_picture_box(picture["id"], (x0, y0, (x0 + x1) // 2, y1))
    item = next(i for i in select_items(manifest, crop="pictures") if i.picture == 1)
    span = mask_task(item, ExportSettings()).span
    mask = item.mask.mask(span, item.picture_box)
    assert not mask[:, (x0 + x1) // 2 - span[0]:].any() and mask.any()


def test_a_picture_without_a_region_is_masked_by_its_box():
    mask = MaskSource().mask((0, 0, 100, 80), (10, 20, 60, 70))
    assert mask[20:70, 10:60].all() and mask.sum() == 50 * 50
    unreadable = MaskSource("not a region", (10, 20, 60, 70)).mask((0, 0, 100, 80), (10, 20, 60, 70))
    assert np.array_equal(unreadable, mask)


def test_a_region_closes_the_picture_s_holes_keeps_a_little_paper_and_leaves_the_legend_out():
    ink = np.zeros((200, 250), bool)
    ink[40:160, 50:230:6] = True  # hatching: strokes with paper between
    ink[178:182, 70:76], ink[178:182, 80:86], ink[178:182, 92:97] = True, True, True  # a legend's letters under it
    found = region.region_of(ink, dpi=72)
    assert found[40:160, 50:225].all()  # the paper between the strokes and inside is the picture's
    assert found[37:163, 47:228].all()  # and a little paper round it
    assert not found[:30].any() and not found[170:].any() and not found[:, :40].any()  # not the legend
    text = region.encode(found)
    assert len(text) < 400 and np.array_equal(region.decode(text), found)
    big = np.ones((1000, 700), bool)
    assert region.decode(region.encode(big)).shape == (256, 179)  # kept small: at most MAX_SIDE a side


def test_the_export_page_writes_masks_where_the_trainer_reads_them_unless_told(manifest, tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    from test_export_page import PAGE, texts

    manifest.close()
    monkeypatch.setenv("CURATION_DB", str(tmp_path / "manifest.sqlite"))
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.run()
    assert at.checkbox(key="export_masks_kohya").value  # kohya: on, and the command says so
    assert any("--masks" in text for text in texts(at.code))
    at.checkbox(key="export_masks_kohya").uncheck().run()
    assert any("--no-masks" in text for text in texts(at.code))
    at.radio(key="export_layout").set_value("folder").run()
    assert not at.checkbox(key="export_masks_folder").value  # ai-toolkit would take OneTrainer's masks for images
    assert not at.exception
