"""The `export` command: the kept pages as a LoRA training ZIP."""

from __future__ import annotations

import sys

import click
from tqdm import tqdm

from ..runs.worker_pool import default_workers
from ..runs.jobs import plural
from .common import cli, db_option, open_manifest, page_timeout_option, run_job, worker_memory_option


@cli.command()
@db_option
@click.option("--out", "-o", required=True, type=click.Path(dir_okay=False),
              help="The ZIP to write. It is written beside, under a hidden temporary name, and renamed "
                   "when complete: an interrupted export never leaves a half ZIP here.")
@click.option("--layout", type=click.Choice(["kohya", "folder", "diffusers"]), default="kohya", show_default=True,
              help="kohya: img/<repeats>_<trigger> <class>/ with .txt captions and dataset.toml (kohya_ss, "
                   "sd-scripts). folder: images/ with .txt captions (ai-toolkit, OneTrainer). diffusers: "
                   "train/ with metadata.jsonl (datasets imagefolder).")
@click.option("--mode", type=click.Choice(["square", "bucket"]), default="square", show_default=True,
              help="square: every image SIZE x SIZE, shaped by --fit. bucket: proportions kept, each image "
                   "snapped to the nearest SDXL bucket (area about SIZE², sides multiples of 64).")
@click.option("--fit", type=click.Choice(["pad", "crop", "stretch"]), default="pad", show_default=True,
              help="How a page becomes a square. pad: the whole page on a margin of its paper colour. "
                   "crop: the centre square; the page's ends are lost. stretch: squashed, as the original "
                   "method did.")
@click.option("--size", type=click.IntRange(64, 4096), default=1024, show_default=True,
              help="Side of the square, or the bucket area's side, in pixels.")
@click.option("--quality", type=click.IntRange(1, 100), default=92, show_default=True, help="JPEG quality.")
@click.option("--trigger", default="ohwx", show_default=True,
              help="The trigger word prompts use to call the style (a rare token).")
@click.option("--class", "class_word", default="engraving", show_default=True,
              help="The class word: what the images show.")
@click.option("--template", default="{trigger}, {class}, {best_caption}", show_default=True,
              help="Caption of every image. Placeholders: {trigger}, {class}, {kind} (the picture's: engraving, "
                   "woodcut, halftone, photograph, drawing, cartoon, map or diagram, the curator's else suggested; "
                   "the class word where neither says), {best_caption} "
                   "(the curator's "
                   "caption, else the printed legend, else the captioning model's), {caption} (the curator's: "
                   "the picture's, else its page's, from the Review page; empty if none), {legend} (the legend "
                   "printed with the picture, read by OCR; empty where Review switched it off), {auto_caption} (the "
                   "captioning model's, likewise), {doc} "
                   "(file name), {page} (from 1), {picture} (--crop pictures: the picture's number on its page, "
                   "empty for a whole page). A whole page takes the legend and model caption of its largest "
                   "kept picture. Empty parts drop out with their comma.")
@click.option("--repeats", type=click.IntRange(1, 10000), default=10, show_default=True,
              help="kohya layout: times each image is seen per epoch (the number in the folder name).")
@click.option("--pad-colour", "pad_colour", default="paper", show_default=True,
              help="Margin colour for --fit pad: 'paper' (each page's own paper) or #rrggbb.")
@click.option("--crop", type=click.Choice(["page", "picture", "pictures"]), default="pictures", show_default=True,
              help="pictures (the default): every picture of a page its own image (<page>_pic1 the largest, "
                   "_pic2 ...), cut with a margin of 1 % of the page; pictures under the picture_area_min setting "
                   "(square inches) are left out, and a kept page with no picture that large exports whole. "
                   "page: the whole page, text columns and all. picture: each page cut to its largest picture as the curator left it "
                   "(a kept one first, its redrawn box where redrawn; never a deleted or excluded one; plus a 1 % "
                   "margin), so the text around a plate is left out; then shaped by --mode and --fit. Pages "
                   "without a picture, or with one under 3 % of the page, export whole.")
@click.option("--duplicates", type=click.Choice(["one", "all"]), default="one", show_default=True,
              help="one: a single page per group of near-identical plates (the one whose picture covers most "
                   "of its page; ties to the first by document path and page), the others listed in "
                   "export.json. all: every kept page.")
@click.option("--min-source", "min_source", type=click.IntRange(0, 16384), default=0, show_default=True,
              help="Leave out images whose source has fewer pixels than this on its short side (0: none). A small "
                   "cut enlarged 2.5-3.5 times to --size comes out soft; 512 keeps what --size 1024 enlarges at most "
                   "2x. The export says how many images are enlarged and by how much; export.json lists those left "
                   "out.")
@click.option("--masks/--no-masks", default=None,
              help="Write each image's mask (white: the picture, learned; black: the paper, legend and type round "
                   "it and the padding), where the layout's trainer reads it: kohya, mask/ as dataset.toml's "
                   "conditioning_data_dir, with training.toml setting sd-scripts' masked_loss; folder, "
                   "<stem>-masklabel.png beside each image (OneTrainer; not for ai-toolkit); diffusers, masks/. "
                   "Default: on for kohya, off for the others.")
@click.option("--threshold", type=float, default=None, help="Decide at this sigma instead of the saved threshold.")
@click.option("--workers", "-w", type=click.IntRange(min=1), default=None,
              help=f"Worker processes reading pages (default: one per core, here {default_workers()}).")
@page_timeout_option
@worker_memory_option
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
def export(db, out, layout, mode, fit, size, quality, trigger, class_word, template, repeats, pad_colour, crop,
           duplicates, min_source, masks, threshold, workers, page_timeout, worker_memory, quiet):
    """Write the kept pages to a LoRA training ZIP that kohya_ss, ai-toolkit and diffusers take as it is.

    The kept pages are the curator's overrides, else the decision rule (see `settings`), one page
    per group of near-duplicates unless --duplicates all. Each becomes an RGB JPEG read at full
    quality from its source (the embedded scan, decoded at the smallest size that covers the
    output; other pages rendered), cut to its picture with --crop picture (or one image per
    picture with --crop pictures), resized with LANCZOS,
    with a same-stem .txt caption. The ZIP also holds manifest.csv (source document, page, sigma,
    decided_by, caption, near-duplicate group and crop box of each image, and the curator's caption,
    legend and model caption it was made from) and export.json (these settings, the decision rule and
    its cutoffs, the pages left out, the caption template and captioning models). The same manifest and
    settings give a byte-identical ZIP. Ctrl-C stops cleanly and writes nothing.
    """
    from ..export import Export, ExportError, ExportSettings, SettingsError  # Pillow only when exporting

    manifest = open_manifest(db)
    try:
        settings = ExportSettings(mode=mode, fit=fit, size=size, quality=quality, layout=layout, trigger=trigger,
                                  class_word=class_word, template=template, repeats=repeats, pad_colour=pad_colour,
                                  crop=crop, duplicates=duplicates, min_source_side=min_source, masks=masks)
    except SettingsError as exc:
        raise click.UsageError(str(exc)) from exc
    bar = None

    def progress(done, total):
        nonlocal bar
        if bar is None:  # made on the first image, so a refusal prints no empty bar
            bar = tqdm(desc="exporting", unit="image", total=total, disable=quiet, dynamic_ncols=True)
        bar.update(done - bar.n)

    try:
        report = run_job(Export(manifest, out, settings, threshold=threshold, workers=workers or default_workers(),
                                page_timeout=page_timeout, worker_memory=worker_memory, on_progress=progress))
    except ExportError as exc:
        raise click.ClickException(str(exc)) from exc
    finally:
        if bar is not None:
            bar.close()
    for skipped in report.skipped:
        click.echo(f"warning: {skipped['document']} page {skipped['page']}: {skipped['reason']}", err=True)
    if report.stopped:
        click.echo(f"Stopped. Nothing was written to {report.path}.", err=True)
        sys.exit(130)
    cropped = {"page": "", "picture": f", {report.cropped} cut to their picture",
               "pictures": f", {plural(report.cropped, 'picture')} cut apart"}[settings.crop]
    click.echo(f"{plural(report.images, 'image')} ({settings.layout} layout, {settings.shape} {settings.size}{cropped}) "
               f"written to {report.path}: {report.bytes / 1e6:.1f} MB, {report.images_per_second:.1f} images/s")
    if settings.writes_masks:
        click.echo(f"each image with its mask ({settings.layout} layout"
                   + ("; train with --config_file training.toml: masked loss)" if settings.layout == "kohya" else ")"))
    if report.enlarged:
        click.echo(f"{report.enlarged}" + ("" if settings.min_source_side else
                                           "; --min-source PIXELS leaves out sources smaller than that"))
    if report.too_small:
        click.echo(f"{plural(len(report.too_small), 'image')} left out: under {settings.min_source_side} px on the "
                   "short side (listed in export.json)")
    if report.left_out:
        count = len(report.left_out)
        click.echo(f"{count} near-duplicate{'' if count == 1 else 's'} left out, one page kept per group (listed in "
                   "export.json; --duplicates all keeps them)")
