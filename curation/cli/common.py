"""What every command shares: the command group, the --db option, the manifest opened with a clear error,
the options of the jobs that read pages, progress bars, and tables written as text, CSV or JSON lines."""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys

import click
from tqdm import tqdm

from guards.csv_cells import SafeDictWriter

from ..manifest import thumbnail_store
from ..manifest.rules import LIVE_DOCUMENT_SQL
from ..manifest.settings import DEFAULT_PAGE_TIMEOUT, PICTURE_FINDERS
from ..manifest.store import JobRunning, Manifest, ManifestError
from ..runs.worker_pool import default_worker_memory, default_workers
from ..runs.jobs import DiskFull

DEFAULT_DB = os.environ.get("CURATION_DB", "data/manifest.sqlite")
FORMATS = click.Choice(["table", "csv", "jsonl"])

db_option = click.option(
    "--db", "db", default=DEFAULT_DB, show_default=True, type=click.Path(dir_okay=False),
    help="Manifest file (SQLite). Also read from $CURATION_DB.",
)


@click.group()
@click.version_option(package_name=None, version="0.2.0")
def cli():
    """Score scanned periodical pages, review the decisions, export a training set."""


class Size(click.ParamType):
    """A memory size: 2G, 1500M, 800MB; a bare number is megabytes."""

    name = "size"
    UNITS = {"": 1 << 20, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}

    def convert(self, value, param, ctx):
        if isinstance(value, int):
            return value
        match = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([kmgt]?)i?b?\s*", str(value).lower())
        if not match:
            self.fail(f"{value!r} is not a size (examples: 2G, 1500M)", param, ctx)
        size = int(float(match.group(1)) * self.UNITS[match.group(2)])
        if size < 256 << 20:
            self.fail(f"{value} is too little for a worker: give it at least 256M", param, ctx)
        return size


page_timeout_option = click.option(
    "--page-timeout", type=click.FloatRange(min=0), default=None, metavar="S",
    help="Seconds one page may take; a page past it is skipped, marked failed, and the run goes on "
         "(its worker is killed and replaced). 0: no limit. Default: the manifest's setting "
         f"(see `settings`; {DEFAULT_PAGE_TIMEOUT:g} s when never set).")
worker_memory_option = click.option(
    "--worker-memory", type=Size(), default=None, metavar="SIZE",
    help="Memory each worker process may take (2G, 1500M). A page that needs more fails with a message; "
         f"the machine and this process are never at risk. Default: a fair share, here "
         f"{default_worker_memory(default_workers()) / (1 << 30):.1f}G with one worker per core.")
picture_finder_option = click.option(
    "--pictures", "picture_finder", type=click.Choice(PICTURE_FINDERS), default=None,
    help="Who finds the pictures: network (the picture finder's network, its boxes fitted to the pictures' ink; "
         "docs/picture-finder.md), rules (the page analysis alone, faster, finds fewer) or learned (the page "
         "analysis's candidates checked by the learned verdict; about a second a page on a CPU). Default: the "
         "manifest's setting (network when never set; rules on a manifest that scored pages before network was "
         "the default); saved in the manifest.")
thumbnails_option = click.option(
    "--thumbnails", type=click.Choice(list(thumbnail_store.STORES)), default=None,
    help="Where page thumbnails are kept, saved as the manifest's setting for later runs and the app: "
         + "; ".join(f"{k}: {v}" for k, v in thumbnail_store.STORES.items())
         + f". Default: the manifest's setting ({thumbnail_store.DEFAULT_STORE} when never set). "
         + thumbnail_store.CHANGE_NOTE)


def open_manifest(db: str, create: bool = False) -> Manifest:
    try:
        return Manifest(db, create=create)
    except ManifestError as exc:
        raise click.ClickException(str(exc)) from exc


def find_document(manifest: Manifest, name: str, where: str = ""):
    """The live document named by path, unique file name or id; a clear error otherwise."""
    docs = manifest.conn.execute(f"SELECT d.id, d.path, d.pages FROM documents d WHERE {LIVE_DOCUMENT_SQL}").fetchall()
    matches = ([d for d in docs if d["path"] == name or os.path.abspath(name) == d["path"]]
               or [d for d in docs if os.path.basename(d["path"]) == name]
               or [d for d in docs if name.isdigit() and d["id"] == int(name)])
    if not matches:
        raise click.ClickException(f"{where}no document {name!r} in the manifest (see `python -m curation docs`)")
    if len(matches) > 1:
        raise click.ClickException(f"{where}{name!r} names {len(matches)} documents; give the full path")
    return matches[0]


@contextlib.contextmanager
def page_bar(desc: str, quiet: bool, unit: str = "page"):
    """A page (or `unit`) progress bar and the on_progress callback that drives it."""
    with tqdm(desc=desc, unit=unit, disable=quiet, dynamic_ncols=True) as bar:
        def progress(done, total):
            if bar.total != total:  # first call: pages done by earlier runs count as done
                bar.reset(total=total)
                bar.initial = bar.n = done
            bar.update(done - bar.n)

        yield progress


def run_job(job):
    """Run an ingest, rescore or export; a refusal or a full disk ends in one line and exit 1."""
    try:
        return job.run()
    except (JobRunning, DiskFull) as exc:
        raise click.ClickException(str(exc)) from None


def write_rows(rows, columns, fmt) -> None:
    out = sys.stdout
    if fmt == "jsonl":
        for row in rows:
            out.write(json.dumps({c: row.get(c) for c in columns}) + "\n")
    elif fmt == "csv":
        writer = SafeDictWriter(out, columns, extrasaction="ignore", lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    else:
        import pandas as pd  # only the table view needs it

        frame = pd.DataFrame(list(rows), columns=columns)
        if "sigma" in frame:
            frame["sigma"] = frame["sigma"].round(2)
        out.write((frame.to_string(index=False) if len(frame) else "(none)") + "\n")
