"""The `folders` commands: which server folders the dashboard may read archives from."""

from __future__ import annotations

import click

from ..sources import paths
from .common import cli, db_option, open_manifest


@cli.group()
def folders():
    """The server folders the dashboard may read PDFs from.

    A path typed on the Ingest page (or the Vet scanner's) is read only when it lies under an allowed
    folder, links followed: the manifest's own folder (data/ by default, where uploads and the sample
    archive go), the folders in $CURATION_ROOTS (separated by ':'), and the folders added here, which
    are kept in the manifest. Every job checks again as it opens each file, so removing a folder takes
    effect at the next file read. A folder or PDF named on the command line
    (`python -m curation ingest /archive`) needs no allowing: whoever runs the command may read it.

    \b
        python -m curation folders list
        python -m curation folders add /srv/archives/harpers
        python -m curation folders remove /srv/archives/harpers
    """


def _list(db: str, manifest) -> None:
    for root, where in paths.roots_with_sources(db, manifest):
        click.echo(f"{root}\t({where})")


@folders.command("list")
@db_option
def list_(db):
    """List the allowed folders, each with where it comes from: the manifest's folder, $CURATION_ROOTS,
    or added with `folders add`."""
    with open_manifest(db) as manifest:
        _list(db, manifest)


@folders.command()
@db_option
@click.argument("folder", type=click.Path(file_okay=False))
def add(db, folder):
    """Allow the dashboard to read FOLDER and everything under it.

    FOLDER is stored as its real path (links resolved), in the manifest (created if need be). The
    Ingest page then accepts it and any PDF or folder under it; a link inside it that leads outside the
    allowed folders is still refused. The whole file system ('/') is refused: allow the folder that
    holds the archives. Prints the allowed folders.
    """
    with open_manifest(db, create=True) as manifest:
        try:
            added = paths.add_root(manifest, folder)
        except paths.PathRefused as exc:
            raise click.ClickException(str(exc)) from None
        click.echo(f"allowed {added}")
        _list(db, manifest)


@folders.command()
@db_option
@click.argument("folder", type=click.Path(file_okay=False))
def remove(db, folder):
    """Stop allowing FOLDER, one added with `folders add`.

    Sources under it stay listed on the Ingest page, but Start skips them, saying why. Documents already
    ingested from it stay in the manifest, and rescore and export still read them. The manifest's folder
    and $CURATION_ROOTS cannot be removed here. Prints the allowed folders.
    """
    with open_manifest(db) as manifest:
        if not paths.remove_root(manifest, folder):
            raise click.ClickException(
                f"{folder} is not one of the folders added with `folders add` (the manifest's folder and "
                f"${paths.ROOTS_ENV} are not removed here); see `python -m curation folders list`")
        click.echo(f"no longer allowed: {click.format_filename(folder)}")
        _list(db, manifest)
