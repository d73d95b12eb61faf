"""The `settings` command: the manifest's decision rule and the settings of the jobs that read pages."""

from __future__ import annotations

import click

from ..manifest import picture_decisions, thumbnail_store
from ..manifest.rules import RULES
from .common import cli, db_option, open_manifest, thumbnails_option


@cli.command()
@db_option
@click.option("--threshold", type=float, default=None, help="The sigma cutoff (the original method's 45).")
@click.option("--rule", type=click.Choice(list(RULES)), default=None,
              help="How pages without an override are decided: " + "; ".join(f"{k}: {v}" for k, v in RULES.items()))
@click.option("--picture-area-min", type=click.FloatRange(min=0), default=None,
              help="Picture rule: the square inches a page's largest picture must cover (2 leaves out "
                   "stock cuts of about an inch; 0 keeps any picture).")
@click.option("--picture-score-min", type=click.FloatRange(min=0, max=1), default=None,
              help="Pictures found by the learned verdict: the score (0 to 1) under which a picture it scored "
                   "does not count, under every rule (its own cutoff, 0.2, unless changed). Ingest keeps its "
                   "candidates down to 0.05, so a lower cutoff adds them; a curator's include, exclude, delete "
                   "or redrawn box wins over it. `pictures` lists each picture's score.")
@click.option("--page-timeout", type=click.FloatRange(min=0), default=None, metavar="S",
              help="Seconds one page may take in ingest, rescore and export before it is skipped (0: no limit). "
                   "The app shows it and cannot change it.")
@thumbnails_option
@click.option("--picture-job", type=click.Choice(["on", "off"]), default=None,
              help="Whether ingest and rescore are followed by the picture job, which embeds each new picture "
                   "(`python -m curation embed`). Where never set: $CURATION_PICTURE_JOB, else on.")
def settings(db, threshold, rule, picture_area_min, picture_score_min, page_timeout, thumbnails, picture_job):
    """Show the decision settings; with options, change them first."""
    manifest = open_manifest(db)
    if threshold is not None:
        manifest.threshold = threshold
    if rule is not None:
        manifest.rule = rule
    if picture_area_min is not None:
        manifest.picture_area_min = picture_area_min
    if picture_score_min is not None:
        manifest.picture_score_min = picture_score_min
    if page_timeout is not None:
        manifest.page_timeout = page_timeout
    if thumbnails is not None:
        manifest.thumbnail_store = thumbnails
    if picture_job is not None:
        manifest.picture_job = picture_job == "on"
    click.echo(f"rule: {manifest.rule} ({RULES[manifest.rule]})")
    click.echo(f"threshold: {manifest.threshold:g}")
    click.echo(f"picture_area_min: {manifest.picture_area_min:g} sq in")
    click.echo(f"picture_score_min: {manifest.picture_score_min:g} (the learned verdict's pictures)")
    click.echo(f"page_timeout: {manifest.page_timeout:g} s" + (" (no limit)" if not manifest.page_timeout else ""))
    store = manifest.thumbnail_store
    click.echo(f"thumbnails: {store} ({thumbnail_store.STORES[store]})"
               + (f", in {manifest.thumbnail_folder}" if store == "folder" else ""))
    click.echo(f"picture_job: {'on' if manifest.picture_job else 'off'} (embeds new pictures after ingest and rescore)")
    from ..runs.cluster_config import ADDRESS_ENV, configured_address

    click.echo(f"cluster: {configured_address() or 'none, worker processes here'} (${ADDRESS_ENV}; not a manifest setting)")
    if picture_decisions.needs_job(manifest):  # a rule switch, or an area cutoff moved over many pictures
        click.echo("The pictures' stored decisions are being brought to these settings: `python -m curation decide` "
                   "does it now, with its progress (until then the dashboard evaluates the rule, more slowly).")
