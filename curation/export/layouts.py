"""Where files go in the ZIP, and the extra files each trainer reads.

- kohya (kohya_ss, sd-scripts): `img/<repeats>_<trigger> <class>/` with images and same-stem `.txt`
  captions, and `dataset.toml` (a dataset config for `--dataset_config`).
- folder (ai-toolkit, OneTrainer): `images/` with images and same-stem `.txt` captions.
- diffusers: `train/` with images, `.txt` captions and `metadata.jsonl` rows `{"file_name", "text"}`
  (an imagefolder `datasets.load_dataset` reads as it is; it ignores the `.txt` files).

With masks (`--masks`; on unasked for kohya, whose sd-scripts reads them), each image's mask is a gray PNG of the
image's size (white: learned; black: not: the paper, legend and type round a picture, the padding), where the
layout's trainer looks for it:

- kohya: `mask/<repeats>_<trigger> <class>/<image's stem>.png`, the subset's `conditioning_data_dir` in
  `dataset.toml` (sd-scripts pairs an image with the conditioning image of the same stem, and refuses a mask
  missing or left over), and `training.toml` (`--config_file`) sets `masked_loss = true`, which sd-scripts needs
  to read a `conditioning_data_dir` subset at all.
- folder: `images/<stem>-masklabel.png` beside each image, OneTrainer's name for an image's mask (its masked
  training reads it; its image lists skip such files). ai-toolkit would read them as images: leave masks off
  for it, or point its dataset's `mask_path` at a folder of same-named masks made from these.
- diffusers: `masks/<stem>.png`, outside `train/` so the imagefolder loader does not take them for images; its
  example scripts have no masked loss, a custom one reads the mask of `file_name` there.

Every ZIP also carries `manifest.csv` (where each image came from, why it was kept, its near-duplicate
group, the part of the page it shows and the three captions its caption was made from) and `export.json`
(the settings and the decision rule that made it, to make it again, the pages it left out, the caption
template and the captioning models).
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass

from guards.csv_cells import SafeWriter

from ..captions.best import CAPTION_SOURCES, caption_source
from ..sources.page_numbers import page_number
from .geometry import BUCKET_STEP, CROP_MARGIN, MIN_CROP_SHARE, max_bucket_side
from .selection import Item, LeftOut
from .settings import MIN_BUCKET_SIDE, ExportSettings

FORMAT = "curation-export/1"
# crop_x0..crop_y1: the part of the page the image shows, in reference pixels (144 dpi, as the
# manifest's picture_x0..y1); the whole page when crop is "page". picture: which picture of its page
# the image is (crop "pictures", 1 the largest), empty for a page. caption: the text of its .txt file;
# curator_caption, legend, auto_caption (and auto_caption_model): the three it is made from (for a whole
# page, the legend and model caption of its largest kept picture); caption_source: which of them
# {best_caption} took (empty: none).
PROVENANCE_COLUMNS = ["file", "document", "sha256", "page", "sigma", "decided_by", "caption", "width", "height", "source",
                      "duplicate_group", "crop", "crop_x0", "crop_y0", "crop_x1", "crop_y1", "picture"]
# mask: its mask's file (empty: none written); mask_share: the share of the image the mask learns.
MASK_COLUMNS = ["mask", "mask_share"]
MASK_SUFFIX = "-masklabel"  # OneTrainer's: <stem>-masklabel.png beside <stem>.jpg
CAPTION_COLUMNS = ["curator_caption", "legend", "auto_caption", "auto_caption_model", "caption_source"]
# Characters no folder name may hold on some system, and control characters.
UNSAFE_IN_FOLDER = re.compile(r'[\\/:*?"<>|\x00-\x1f\x7f]+')


@dataclass(frozen=True)
class Record:
    """One exported image, for the provenance table and the trainers' metadata."""

    item: Item
    file: str  # member path of the image in the ZIP
    caption: str
    width: int
    height: int
    method: str  # "jpeg" (the embedded scan) or "render"
    crop: tuple[int, int, int, int] | None = None  # the picture it was cut to, in reference pixels; None: whole page
    mask: str | None = None  # member path of its mask in the ZIP; None: none written
    mask_share: float | None = None  # the share of the image its mask learns


def image_folder(settings: ExportSettings) -> str:
    if settings.layout == "kohya":
        return f"img/{settings.repeats}_{folder_safe(concept(settings))}"
    return {"folder": "images", "diffusers": "train"}[settings.layout]


def mask_folder(settings: ExportSettings) -> str:
    """Where the layout's masks go (see the module): for kohya the subset's conditioning_data_dir."""
    if settings.layout == "kohya":
        return f"mask/{settings.repeats}_{folder_safe(concept(settings))}"
    return {"folder": "images", "diffusers": "masks"}[settings.layout]


def mask_file(settings: ExportSettings, stem: str) -> str:
    """The member path of the mask of the image named `stem`, where the layout's trainer looks for it."""
    suffix = MASK_SUFFIX if settings.layout == "folder" else ""
    return f"{mask_folder(settings)}/{stem}{suffix}.png"


def concept(settings: ExportSettings) -> str:
    """kohya's folder name after the repeats: the trigger and the class word."""
    return " ".join(part.strip() for part in (settings.trigger, settings.class_word) if part.strip())


def folder_safe(name: str) -> str:
    """A folder name that is one folder everywhere: no separators, no `..`, nothing reserved."""
    name = UNSAFE_IN_FOLDER.sub("_", name).strip(" .")
    return name or "concept"


def dataset_files(settings: ExportSettings, records: list[Record]) -> list[tuple[str, bytes]]:
    """The trainer's own files for this layout, after the images."""
    if settings.layout == "kohya":
        files = [("dataset.toml", kohya_toml(settings).encode())]
        if settings.writes_masks:
            files.append(("training.toml", kohya_training_toml().encode()))
        return files
    if settings.layout == "diffusers":
        return [(f"{image_folder(settings)}/metadata.jsonl", metadata_jsonl(records))]
    return []


def kohya_toml(settings: ExportSettings) -> str:
    """The dataset config. With masks its subset is sd-scripts' conditioning subset (image_dir and
    conditioning_data_dir; its schema has no class_tokens, which only stands in for a missing caption file)."""
    bucket = settings.mode == "bucket"
    masks = settings.writes_masks
    subset = ([f"  conditioning_data_dir = {toml_string(mask_folder(settings))}"] if masks
              else [f"  class_tokens = {toml_string(concept(settings))}"])
    return "\n".join([
        "# sd-scripts / kohya_ss dataset config: train with --dataset_config dataset.toml,",
        "# run from the folder this ZIP was unpacked into (image_dir is relative to it).",
        *(["# Each image's mask is in conditioning_data_dir: train with --masked_loss (or --config_file",
           "# training.toml, which sets it), else sd-scripts refuses conditioning_data_dir."] if masks else []),
        "[general]",
        'caption_extension = ".txt"',
        "shuffle_caption = false",
        "keep_tokens = 1  # the trigger word stays first if you turn shuffling on",
        "",
        "[[datasets]]",
        f"resolution = {settings.size}",
        "batch_size = 1",
        # Bucketed images already have their bucket's exact size; square ones need none.
        f"enable_bucket = {'true' if bucket else 'false'}",
        f"min_bucket_reso = {MIN_BUCKET_SIDE}",
        f"max_bucket_reso = {max_bucket_side(settings.size)}",
        f"bucket_reso_steps = {BUCKET_STEP}",
        "bucket_no_upscale = false",
        "",
        "  [[datasets.subsets]]",
        f"  image_dir = {toml_string(image_folder(settings))}",
        f"  num_repeats = {settings.repeats}",
        *subset,
        "",
    ])


def kohya_training_toml() -> str:
    """sd-scripts' training options (--config_file) that train with the masks: masked loss on, this dataset. The
    model, network and output are the trainer's own, given on its command line as usual."""
    return "\n".join([
        "# sd-scripts training options: add --config_file training.toml to your train_network.py command,",
        "# run from the folder this ZIP was unpacked into. Options on the command line still apply.",
        "[training]",
        "masked_loss = true",
        'dataset_config = "dataset.toml"',
        "",
    ])


def toml_string(text: str) -> str:
    # A JSON string is a TOML basic string, but JSON leaves DEL (U+007F) as it is, which TOML forbids.
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


def metadata_jsonl(records: Iterable[Record]) -> bytes:
    lines = [json.dumps({"file_name": r.file.rsplit("/", 1)[-1], "text": r.caption}, ensure_ascii=False)
             for r in records]
    return ("\n".join(lines) + "\n").encode() if lines else b""


def provenance_csv(records: Iterable[Record]) -> bytes:
    out = io.StringIO()
    writer = SafeWriter(out, lineterminator="\n")
    writer.writerow(PROVENANCE_COLUMNS + CAPTION_COLUMNS + MASK_COLUMNS)
    for r in records:
        writer.writerow([
            r.file, r.item.doc, r.item.sha256, page_number(r.item.page), f"{r.item.sigma:.3f}", r.item.decided_by, r.caption,
            r.width, r.height, r.method, "" if r.item.group is None else r.item.group,
            "page" if r.crop is None else "picture", *_shown_box(r), "" if r.item.picture is None else r.item.picture,
            *(text or "" for text in (r.item.caption, r.item.legend, r.item.auto_caption, r.item.auto_caption_model)),
            _source(r.item) or "",
            r.mask or "", "" if r.mask_share is None else f"{r.mask_share:.4f}",
        ])
    return out.getvalue().encode()


def _source(item: Item) -> str | None:
    return caption_source(item.caption, item.legend, item.auto_caption)


def captions_json(settings: ExportSettings, records: Iterable[Record]) -> dict:
    """The template that made the captions, how many images each caption source gave `{best_caption}`
    (none: all three empty) and the captioning models of the model captions the images carry."""
    records = list(records)
    sources = {name: 0 for name in (*CAPTION_SOURCES, "none")}
    for r in records:
        sources[_source(r.item) or "none"] += 1
    models = sorted({r.item.auto_caption_model for r in records if r.item.auto_caption and r.item.auto_caption_model})
    return {"template": settings.template, "best_caption_sources": sources, "auto_caption_models": models}


def masks_json(settings: ExportSettings, records: Iterable[Record]) -> dict:
    """Whether masks were written, where (the layout's convention) and for which images, what each was made from
    (the finder's region of the picture, the picture's box, or the whole image) and the mean share of an image
    its mask learns."""
    records = list(records)
    if not settings.writes_masks:
        return {"written": False}
    masked = [r for r in records if r.mask is not None]
    made = {"region": 0, "box": 0, "whole_image": 0}
    for r in masked:
        made["whole_image" if r.crop is None else (r.item.mask.kind if r.item.mask else "box")] += 1
    shares = [r.mask_share for r in masked if r.mask_share is not None]
    return {"written": True, "layout": settings.layout, "folder": mask_folder(settings),
            "suffix": (MASK_SUFFIX if settings.layout == "folder" else "") + ".png",
            "convention": MASK_CONVENTIONS[settings.layout], "images_with_masks": len(masked),
            "images_without_masks": [r.file for r in records if r.mask is None], "made_from": made,
            "mean_share": round(sum(shares) / len(shares), 4) if shares else None,
            "values": "gray PNG the image's size: 255 learned, 0 not, between a partial weight"}


MASK_CONVENTIONS = {
    "kohya": "sd-scripts masked loss: conditioning_data_dir in dataset.toml, masked_loss = true in training.toml",
    "folder": "OneTrainer masked training: <image stem>-masklabel.png beside each image",
    "diffusers": "masks/<image stem>.png for a training script that reads masks (diffusers' examples do not)",
}


def _shown_box(r: Record) -> list:
    if r.crop is not None:
        return list(r.crop)
    if r.item.width and r.item.height:
        return [0, 0, r.item.width, r.item.height]
    return ["", "", "", ""]  # a page scored before its size was recorded


def export_json(settings: ExportSettings, threshold: float, images: int, skipped: list[dict], *,
                decision: dict | None = None, left_out: list[LeftOut] = (), cropped: int = 0,
                records: Iterable[Record] = (), sources: dict | None = None) -> bytes:
    """What made this ZIP; no clock time, so the same manifest and settings give the same bytes.

    `decision` is the rule that decided the pages without an override and its cutoffs
    (`Manifest.decision_params()`); `left_out` the near-duplicates not written, each with the page of
    its group that was; `cropped` how many images show a picture rather than a whole page. With crop
    "pictures", `min_area` is the size (square inches, the decision's `picture_area_min`) under which a
    picture was not exported on its own. `captions` says which template made the captions and from
    which sources and models (`captions_json` over the written `records`); `sources` how sharp the sources
    were (the minimum source size asked for, the images it left out, the images enlarged)."""
    crop = {"mode": settings.crop, "cropped_images": cropped, "margin": CROP_MARGIN, "min_share": MIN_CROP_SHARE,
            "units": "reference pixels (144 dpi)"}
    if settings.crop == "pictures":
        crop["min_area"] = (decision or {}).get("picture_area_min")
    document = {
        "format": FORMAT,
        "settings": settings.as_dict(),
        "threshold": threshold,
        "decision": dict(decision) if decision else {"threshold": threshold},
        "images": images,
        "image_folder": image_folder(settings),
        "skipped": skipped,
        "crop": crop,
        "duplicates": {"mode": settings.duplicates, "left_out": [entry.as_dict() for entry in left_out]},
        "captions": captions_json(settings, records),
        "masks": masks_json(settings, records),
    }
    if sources is not None:
        document["sources"] = sources
    return (json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode()
