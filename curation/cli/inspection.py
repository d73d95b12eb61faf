"""Commands that show what the manifest holds: its status, and its documents, pages and pictures as tables."""

from __future__ import annotations

import click

from ..manifest.rules import RULES
from ..sources.page_numbers import page_number
from .common import FORMATS, cli, db_option, open_manifest, write_rows

DOC_COLUMNS = ["path", "pages", "status", "error", "scored", "failed", "sha256"]
PAGE_COLUMNS = ["doc", "page", "sigma", "width", "height", "keep", "decided_by", "status", "method", "error",
                "sigma_content", "ink_tone", "ink_coverage", "picture_area", "picture_count", "picture_share",
                "text_height", "suggestion", "confidence", "duplicate_group"]
PICTURE_COLUMNS = ["doc", "page", "picture", "x0", "y0", "x1", "y1", "area", "keep", "decided_by", "override", "found",
                   "caption", "kind", "kind_by", "legend", "legend_confidence", "no_legend", "auto_caption",
                   "auto_caption_model", "no_auto_caption", "score"]
# What a job counts in its done/total, by kind; the other kinds count steps of their own (a share, the rules
# counted, rows written), shown as bare numbers.
JOB_UNITS = {"ingest": "pages", "sample": "pages", "embed": "pictures", "caption": "pictures", "export": "images"}


@cli.command()
@db_option
def status(db):
    """Documents and pages by state, score summary, and the running job if any."""
    manifest = open_manifest(db)
    summary = manifest.summary()
    click.echo(f"manifest: {manifest.path} (schema {manifest.schema_version})")
    docs = ", ".join(f"{count} {state}" for state, count in sorted(summary["documents"].items())) or "none"
    click.echo(f"documents: {docs}")
    click.echo(f"pages: {summary['pages']} ({summary['scored']} scored, {summary['failed']} failed)")
    if summary["scored"]:
        click.echo(
            f"sigma: min {summary['sigma_min']:.1f}, mean {summary['sigma_mean']:.1f}, max {summary['sigma_max']:.1f}"
        )
    share = summary["rejected"] / summary["pages"] if summary["pages"] else 0
    rule = {"sigma": f"sigma > {summary['threshold']:g}",
            "picture": f"a picture >= {manifest.picture_area_min:g} sq in",
            "model": "learned from overrides"}[summary["rule"]]
    click.echo(
        f"rule {summary['rule']} ({rule}): {summary['kept']} kept, {summary['rejected']} rejected "
        f"({share:.0%} removed), {summary['overrides']} overrides"
    )
    job = manifest.latest_job()
    if job is not None:
        unit = JOB_UNITS.get(job["kind"])
        line = f"{job['kind']} job {job['id']}: {job['status']}, {job['done']}/{job['total']}{f' {unit}' if unit else ''}"
        if job["status"] == "running" and job["rate"]:
            line += f", {job['rate']:.1f} {unit or 'steps'}/s, {job['eta'] or 0:.0f} s left"
        if job["message"]:
            line += f" ({job['message']})"
        click.echo(line)


@cli.command()
@db_option
@click.option("--format", "fmt", type=FORMATS, default="table", show_default=True)
def docs(db, fmt):
    """One row per document: path, pages, status (ok, partial, failed, encrypted, empty,
    not-pdf, too-long, outside, pending, replaced) and error, the reason for a person to read."""
    manifest = open_manifest(db)
    write_rows((dict(row) for row in manifest.documents()), DOC_COLUMNS, fmt)


@cli.command()
@db_option
@click.option("--format", "fmt", type=FORMATS, default="table", show_default=True)
@click.option("--threshold", type=float, default=None, help="Decide at this sigma instead of the saved threshold.")
@click.option("--rule", type=click.Choice(list(RULES)), default=None, help="Decide with this rule instead of the saved one.")
def pages(db, fmt, threshold, rule):
    """One row per page: doc, page (from 1, as a PDF viewer counts), sigma, width and height (pixels at 144 dpi),
    keep (the curator's override where one exists, else the decision rule: see `settings`) and
    decided_by (override or threshold), then the features beside sigma."""
    manifest = open_manifest(db)
    rows = ({**dict(row), "page": page_number(row["page"]), "keep": bool(row["keep"])}
            for row in manifest.pages(threshold, rule=rule))
    write_rows(rows, PAGE_COLUMNS, fmt)


@cli.command()
@db_option
@click.option("--format", "fmt", type=FORMATS, default="table", show_default=True)
@click.option("--threshold", type=float, default=None, help="Decide at this sigma instead of the saved threshold.")
@click.option("--rule", type=click.Choice(list(RULES)), default=None, help="Decide with this rule instead of the saved one.")
def pictures(db, fmt, threshold, rule):
    """One row per picture: doc, page (from 1), picture (its number on the page: 1 the largest when first
    found, kept while the manifest holds it, as `export --crop pictures` names it), x0 y0 x1 y1 (its box as
    fractions of the page's width and height, the curator's where redrawn), area (square inches), keep
    (whether `export --crop pictures` writes it: its page is kept and so is the picture), decided_by
    (override, page: its page is excluded, added, deleted or threshold), override (the curator's decision
    on it: include, exclude or auto), found (whether the scorer still finds it), caption (the curator's),
    kind (engraving, woodcut, halftone, cartoon, map or diagram; kind_by: "curator", "learned" from the
    pictures like it that a curator marked, or "suggested" by the analysis: the last two suggestions only), legend
    (the printed legend read by OCR) with legend_confidence (0-1; -1: not read yet, the picture judged not a
    picture at ingest: the export reads it if it writes the picture),
    no_legend (the curator switched it off: never shown nor exported), auto_caption and auto_caption_model
    (a captioning model's caption and its name), no_auto_caption (switched off likewise) and score (the
    learned verdict's probability that it is a picture, where `ingest --pictures learned` found it)."""
    from ..views import picture_rows

    rows = ({**row, "page": page_number(row["page"])} for row in picture_rows(open_manifest(db), threshold, rule=rule))
    write_rows(rows, PICTURE_COLUMNS, fmt)
