"""Commands over the manifest's history of actions: who did what (`history`), and `undo`."""

from __future__ import annotations

import click

from ..manifest import history as history_
from .common import FORMATS, cli, db_option, open_manifest, write_rows

HISTORY_COLUMNS = ["id", "at", "user", "kind", "description", "changes", "undone_by", "issuer", "subject"]
CHANGE_COLUMNS = ["action", "at", "user", "kind", "field", "target", "old", "new"]


class Since(click.ParamType):
    name = "time"

    def convert(self, value, param, ctx):
        try:
            return history_.parse_since(str(value))
        except ValueError:
            self.fail(f"{value!r} is not a time: give 2026-12-03, 2026-12-03T14:00 (UTC) or a span back from "
                      "now such as 30m, 2h, 7d", param, ctx)


@cli.command()
@db_option
@click.option("--user", default=None, help="Only what this person did (a login name, or the name they sign in with).")
@click.option("--since", type=Since(), default=None,
              help="Only from this time on: 2026-12-03, 2026-12-03T14:00 (UTC unless it says +01:00), or a span "
                   "back from now: 30m, 2h, 7d.")
@click.option("--changes", "detail", is_flag=True,
              help="One row per page or setting changed, with its value before and after, instead of one per action.")
@click.option("--format", "fmt", type=FORMATS, default="table", show_default=True)
def history(db, user, since, detail, fmt):
    """Who did what, newest first: every override, caption, bulk action, settings change, ingest and
    export, with who (their login name from the CLI, their sign-in name from the app) and when (UTC).

    An action's id is what `undo` takes; undone_by names the action that undid it.
    """
    manifest = open_manifest(db)
    if detail:
        write_rows(history_.changes(manifest.conn, user=user, since=since), CHANGE_COLUMNS, fmt)
    else:
        write_rows(history_.actions(manifest.conn, user=user, since=since), HISTORY_COLUMNS, fmt)


@cli.command()
@click.argument("action", required=False, type=click.IntRange(min=1))
@db_option
def undo(action, db):
    """Undo ACTION (an id from `history`), or your latest override, caption or settings change that is
    not undone yet, in one step: a bulk action of 100,000 pages is undone as one.

    The overrides, captions and settings it replaced come back exactly as they were (a page that had
    no override has none again). A page someone changed since keeps that later change. The undo is
    an action of its own: undo it to redo. Ingests and exports cannot be undone.
    """
    manifest = open_manifest(db)
    try:
        done, left = manifest.undo(action)
    except history_.UndoError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"#{done['id']} {done['description']}: {done['changes']:,} change(s) taken back")
    if left:
        click.echo(f"{left:,} change(s) were left as they are: they were changed again since", err=True)
