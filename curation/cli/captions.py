"""Commands that write captions: the captioning model's (`caption`) and the curator's, many at once
(`captions`)."""

from __future__ import annotations

import contextlib
import json
import os
import sys

import click

from ..manifest.store import Manifest
from .common import cli, db_option, find_document, open_manifest, page_bar, run_job


@cli.group()
def captions():
    """Edit the curator's captions of many pictures at once. Each picture has three captions: the
    curator's (always wins, never written by a job), its printed legend (read by OCR) and a captioning
    model's; these commands write only the curator's, as one action that `undo` takes back in one step.
    Run with --dry-run first to see every change and how many there are."""


def _picture_filter(manifest: Manifest, doc: str | None, kept: bool, threshold: float | None):
    from ..captions.edit import Pictures

    doc_id = find_document(manifest, doc)["id"] if doc else None
    return Pictures(doc_id=doc_id, kept=kept, threshold=threshold)


def _show_changes(changes, dry_run: bool, what: str) -> None:
    for change in changes.changes:
        before = "" if change.source == "caption" else f" ({change.source.replace('_', ' ')})"
        click.echo(f"{os.path.basename(change.doc)} p. {change.page} picture {change.number}: "
                   f"{json.dumps(change.old, ensure_ascii=False)}{before} → {json.dumps(change.new, ensure_ascii=False)}")
    count = f"{_plural(changes.count, 'caption')} of {_plural(changes.searched, 'picture')}"
    if dry_run:
        click.echo(f"{count} would change ({what}; dry run: nothing written)")
    elif changes.action is None:
        click.echo(f"{count} changed: nothing to do")
    else:
        click.echo(f"{count} changed ({what}), action #{changes.action}: "
                   f"`python -m curation undo {changes.action}` takes them back")


def _plural(count: int, noun: str) -> str:
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


caption_filter_options = [
    click.option("--doc", default=None, metavar="DOC",
                 help="Only this document's pictures: its path, its file name where unique, or its id."),
    click.option("--kept", is_flag=True, help="Only the pictures the export writes (kept, on a kept page)."),
    click.option("--threshold", type=float, default=None,
                 help="With --kept: decide at this sigma instead of the saved threshold."),
    click.option("--dry-run", is_flag=True, help="Show every change and their count; write nothing."),
    db_option,
]


def _with_options(options):
    def decorate(fn):
        for option in reversed(options):
            fn = option(fn)
        return fn
    return decorate


@captions.command("replace")
@click.argument("find")
@click.argument("replacement")
@click.option("--regex", is_flag=True,
              help="FIND is a Python regular expression; REPLACEMENT may name its groups (\\1, \\g<name>).")
@click.option("--ignore-case", "-i", is_flag=True, help="Match upper and lower case alike.")
@click.option("--shown", is_flag=True,
              help="Start from the caption each picture shows: the curator's, else its legend, else the "
                   "model's. A legend or model caption the replacement changes becomes the picture's caption; "
                   "the legend itself is kept as printed.")
@_with_options(caption_filter_options)
def captions_replace(find, replacement, regex, ignore_case, shown, doc, kept, threshold, dry_run, db):
    """Replace FIND with REPLACEMENT in the curator's captions of the pictures (all, one document's, or the
    kept ones), as plain text unless --regex. Lists each change (document, page from 1, picture number,
    old → new) and the count. Pictures without a caption are left as they are unless --shown.

    \b
    Example: python -m curation captions replace "Fig. " "" --doc issue-3.pdf --dry-run
    """
    from ..captions.edit import CaptionEditError, apply, preview

    manifest = open_manifest(db)
    pictures = _picture_filter(manifest, doc, kept, threshold)
    try:
        run = preview if dry_run else apply
        changes = run(manifest, find, replacement, pictures, regex=regex, ignore_case=ignore_case, shown=shown)
    except CaptionEditError as exc:
        raise click.UsageError(str(exc)) from None
    _show_changes(changes, dry_run, f"{json.dumps(find, ensure_ascii=False)} → {json.dumps(replacement, ensure_ascii=False)}")


@captions.command("from-legends")
@click.option("--overwrite", is_flag=True, help="Replace captions the curator typed too (kept by default).")
@_with_options(caption_filter_options)
def captions_from_legends(overwrite, doc, kept, threshold, dry_run, db):
    """Use the legends as captions: every picture with a printed legend read by OCR gets it as its caption
    (its lines joined), as one action. A caption the curator typed is kept unless --overwrite; pictures
    without a legend are left as they are."""
    from ..captions.edit import use_legends

    manifest = open_manifest(db)
    changes = use_legends(manifest, _picture_filter(manifest, doc, kept, threshold), overwrite=overwrite, dry_run=dry_run)
    _show_changes(changes, dry_run, "legends as captions")


@cli.command()
@db_option
@click.option("--model", "model_dir", type=click.Path(file_okay=False), default=None,
              help="Folder of the captioning model. Default: $CAPTIONER_MODEL_DIR, else captioners/florence-2-base "
                   "in the models folder ($VET_MODELS_DIR or models/), downloaded there on first use.")
@click.option("--kept/--all", "kept", default=True, show_default=True,
              help="The kept pictures of kept pages (near-duplicates included), or every picture found.")
@click.option("--overwrite", is_flag=True,
              help="Caption again the pictures this model captioned before (the curator's captions are never "
                   "touched either way).")
@click.option("--device", type=click.Choice(["auto", "cpu", "cuda"]), default="auto", show_default=True,
              help="Where the model runs: auto takes the GPU when there is one, in half precision.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
def caption(db, model_dir, kept, overwrite, device, quiet):
    """Write a caption for each picture with a captioning model (Florence-2-base), as `auto_caption`.

    The model is loaded once for the run and unloaded after it. Captions are saved every few
    pictures: Ctrl-C stops cleanly and the same command resumes, skipping the pictures this model
    has captioned (--overwrite does them again). The curator's own caption is never replaced.
    Without the model and without internet, one line says how to install it.
    """
    from inference import InferenceError

    from ..captions.edit import Pictures
    from ..captions.job import CaptionJob  # torch only when captioning

    manifest = open_manifest(db)
    bars = contextlib.ExitStack()
    shown = []

    def progress(done, total):
        if not shown:  # the bar starts with the first picture: a model that cannot be had prints none
            shown.append(bars.enter_context(page_bar("captioning", quiet, unit="picture")))
        shown[0](done, total)

    try:
        with bars:
            report = run_job(CaptionJob(manifest, model_dir, pictures=Pictures(kept=kept), overwrite=overwrite,
                                        device=device, on_progress=progress))
    except InferenceError as exc:
        raise click.ClickException(str(exc)) from None
    for failed in report.failed:
        click.echo(f"warning: {failed['document']} page {failed['page']} picture {failed['picture']}: "
                   f"{failed['reason']}", err=True)
    per_image = f", {report.seconds_per_image:.2f} s per picture" if report.seconds_per_image else ""
    click.echo(f"{report.captioned} pictures captioned by {report.model}{per_image} (model loaded in "
               f"{report.load_seconds:.1f} s); {report.already} already captioned, {len(report.failed)} unreadable")
    if report.stopped:
        click.echo("Stopped. Run the same command again to resume.", err=True)
        sys.exit(130)
