"""Commands that read pages into the manifest: ingest, rescore and the synthetic sample."""

from __future__ import annotations

import contextlib
import os
import sys

import click
from tqdm import tqdm

from ..captions.legend import check_languages
from ..manifest.store import JobRunning, Manifest
from ..runs.ingest import Ingest
from ..runs.worker_pool import default_workers
from ..runs.jobs import plural
from ..sources.reader import error_text
from .common import (cli, db_option, open_manifest, page_bar, page_timeout_option, picture_finder_option, run_job,
                     thumbnails_option, worker_memory_option)

cluster_option = click.option(
    "--cluster", envvar="CURATION_CLUSTER", default=None, metavar="ADDRESS",
    help="Run the tasks on a Dask cluster instead of this machine's processes: a scheduler address, "
         "tls://HOST:8786 with the cluster's CA and this machine's certificate and key in "
         "$CURATION_CLUSTER_TLS_CA_FILE, $CURATION_CLUSTER_TLS_CERT and $CURATION_CLUSTER_TLS_KEY (plain tcp:// "
         "only to this machine's loopback), or local[:N] for N worker processes here, on 127.0.0.1, with Dask's "
         "dashboard at 127.0.0.1:8787. Every worker must see the archive at the same path. Also read from "
         "$CURATION_CLUSTER, which is what the app's ingest jobs use.")


@contextlib.contextmanager
def open_cluster(address: str | None, manifest: Manifest):
    """The Dask cluster at `address` (None: the local process pool); a cluster that cannot be used, or is
    lost during the run, ends in one line and exit 1, and in the manifest as a failed ingest job, so the
    Ingest page that started this process shows why."""
    if not address:
        yield None
        return
    from ..runs.cluster import Cluster, ClusterError

    before = manifest.latest_job("ingest")
    try:
        with Cluster(address) as cluster:
            click.echo(cluster.describe(), err=True)
            yield cluster
    except ClusterError as exc:
        _record_cluster_failure(manifest, before, address, str(exc))
        raise click.ClickException(str(exc)) from None


def _record_cluster_failure(manifest: Manifest, before, address: str, message: str) -> None:
    """A failed ingest job saying why the cluster could not be used, unless this process's job already
    said so (a scheduler lost mid-run) or another job holds the manifest."""
    latest = manifest.latest_job("ingest")
    if latest is not None and latest["pid"] == os.getpid() and (before is None or latest["id"] != before["id"]):
        return
    with contextlib.suppress(JobRunning):
        job_id = manifest.start_job("ingest", {"cluster": address})
        manifest.finish_job(job_id, "failed", message)


class ArchivePath(click.Path):
    """A local file or folder that exists, or a URL (s3://, gs://, https://, file://) read through fsspec."""

    def __init__(self):
        super().__init__(exists=True)

    def convert(self, value, param, ctx):
        return value if "://" in str(value) else super().convert(value, param, ctx)


@cli.command()
@click.argument("paths", nargs=-1, required=True, type=ArchivePath())
@db_option
@click.option("--workers", "-w", type=click.IntRange(min=1), default=None,
              help=f"Worker processes (default: one per core, here {default_workers()}).")
@page_timeout_option
@worker_memory_option
@cluster_option
@thumbnails_option
@click.option("--legend-languages", default=None, metavar="LANGS",
              help="Tesseract's languages to read the pictures' printed legends in, e.g. eng+deu (default: the "
                   "manifest's setting, eng+deu+fra); saved in the manifest.")
@picture_finder_option
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
def ingest(paths, db, workers, page_timeout, worker_memory, cluster, thumbnails, legend_languages, picture_finder,
           quiet):
    """Score every page of the PDFs in PATHS (files or folders, searched recursively; or URLs such as
    s3://bucket/archive/, read through fsspec with its filesystem package installed).

    Only what the manifest does not hold yet is read: new documents, and pages a killed run did
    not finish. A document is known by its content, so a moved or renamed file is not scored
    again and a changed file is. Broken files are recorded with their reason and skipped.
    Ctrl-C stops cleanly; run the same command to resume. With --cluster the same tasks run on
    a Dask cluster's workers; this process still plans them and is the only writer of the manifest.
    """
    manifest = open_manifest(db, create=True)
    if thumbnails is not None:
        manifest.thumbnail_store = thumbnails
    if picture_finder is not None:
        manifest.picture_finder = picture_finder
    if legend_languages is not None:
        try:
            manifest.legend_languages = check_languages(legend_languages)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--legend-languages") from None
    with open_cluster(cluster, manifest) as dask_cluster, hash_bar(quiet) as hash_progress, page_bar("scoring", quiet) as progress:
        try:
            job = Ingest(manifest, paths, workers=workers, page_timeout=page_timeout, cluster=dask_cluster,
                         worker_memory=worker_memory, on_progress=progress, on_hash_progress=hash_progress)
        except (FileNotFoundError, ValueError) as exc:  # a URL that names nothing; a legend language gone
            raise click.ClickException(str(exc)) from None
        report = run_job(job)
    finish_run(report, f"{plural(report.documents, 'document')} ({report.new_documents} new): "
                       f"{plural(report.pages_scored, 'page')} scored, {report.failures}, {report.pages_per_second:.1f} pages/s{report.incidents}")
    pictures_after(manifest, quiet)


@contextlib.contextmanager
def hash_bar(quiet: bool):
    """A bytes progress bar for hashing and the on_hash_progress callback that drives it."""
    with tqdm(desc="hashing", unit="B", unit_scale=True, disable=quiet, leave=False) as bar:
        def progress(done, total):
            bar.total = total
            bar.n = done
            bar.refresh()

        yield progress


def failed_pages(report) -> str:
    """'3 failed', with how many of them were over the time limit; the reasons are in `docs` and `pages`."""
    text = f"{report.pages_failed} failed"
    if report.pages_timed_out:
        text += f" ({report.pages_timed_out} over the {report.page_timeout:g} s time limit)"
    return text


def finish_run(report, summary: str) -> None:
    """Warnings, the summary line, and exit 130 when the run was stopped (so scripts can tell)."""
    for problem in report.problems:
        click.echo(f"warning: {problem}", err=True)
    if getattr(report, "legend_note", None):  # ingest and rescore: legends not read, and how to get them
        click.echo(report.legend_note, err=True)
    click.echo(summary)
    if report.stopped:
        click.echo("Stopped. Run the same command again to resume.", err=True)
        sys.exit(130)


@cli.command()
@db_option
@click.option("--workers", "-w", type=click.IntRange(min=1), default=None, help="Worker processes (default: one per core).")
@click.option("--all", "all_pages", is_flag=True, help="Score every page again, not only pages whose features are out of date.")
@page_timeout_option
@worker_memory_option
@cluster_option
@picture_finder_option
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
def rescore(db, workers, all_pages, page_timeout, worker_memory, cluster, picture_finder, quiet):
    """Score the manifest's pages again with this version's scorer and features.

    Only pages scored by an older version are read, unless --all. Overrides, captions and
    settings are kept; near-duplicate groups are recomputed. Stops and resumes like ingest.
    Thumbnails of the pages read go where the manifest's setting says (`settings --thumbnails`).
    """
    from ..runs.ingest import Rescore

    manifest = open_manifest(db)
    if picture_finder is not None:
        manifest.picture_finder = picture_finder
    with open_cluster(cluster, manifest) as dask_cluster, page_bar("rescoring", quiet) as progress:
        try:
            job = Rescore(manifest, all_pages=all_pages, workers=workers, page_timeout=page_timeout,
                          cluster=dask_cluster, worker_memory=worker_memory, on_progress=progress)
        except ValueError as exc:  # the manifest's legend languages are not installed here
            raise click.ClickException(str(exc)) from None
        report = run_job(job)
    finish_run(report, f"{plural(report.documents, 'document')}: {plural(report.pages_scored, 'page')} rescored, {failed_pages(report)}")
    pictures_after(manifest, quiet)


def pictures_after(manifest: Manifest, quiet: bool) -> None:
    """The picture job, following an ingest or rescore that finished, where the manifest's setting wants it.
    Where it cannot run here, one line says what to install, and the ingest has succeeded all the same."""
    if not manifest.picture_job:
        return
    from ..runs.embed import KIND, not_here_note

    note = not_here_note()
    if note:
        click.echo(note, err=True)
        return
    running = manifest.running_job(KIND)
    if running is not None:  # started by an earlier ingest or by hand: it embeds these pictures too
        click.echo(f"The picture job already running on this manifest (pid {running['pid']}) asks for the "
                   "new pictures before it ends; `python -m curation embed` does any it missed.", err=True)
        return
    run_pictures(manifest, quiet, after="ingest finished, but ")


def run_pictures(manifest: Manifest, quiet: bool, after: str = "", **options) -> None:
    """Run the picture job with a progress bar; its summary, or one line saying why it did not finish."""
    from ..runs.embed import PictureJob

    with page_bar("embedding", quiet, unit="picture") as progress:
        try:
            report = run_job(PictureJob(manifest, on_progress=progress, **options))
        except click.ClickException as exc:  # another picture job holds the manifest; a full disk
            raise click.ClickException(f"{after}{exc.message}") from None
        except ValueError as exc:  # torch or the weights missing (`embed` alone)
            raise click.ClickException(str(exc)) from None
        except Exception as exc:
            raise click.ClickException(f"{after}the picture job failed: {error_text(exc)}. "
                                       "`python -m curation embed` retries it.") from None
    finish_run(report, report.summary())


@cli.command()
@db_option
@click.option("--batch", type=click.IntRange(min=1), default=None,
              help="Pictures embedded and stored together (default 32): more use a GPU better, fewer lose less "
                   "to a kill.")
@click.option("--workers", "-w", type=click.IntRange(min=1), default=None,
              help="Processes reading the pages while this one embeds (default: one per core).")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
def embed(db, batch, workers, quiet):
    """Embed every picture that has no embedding for its current box: the picture job that follows ingest
    and rescore (`settings --picture-job`), run by hand.

    Each page holding such a picture is read once; its pictures' crops are embedded by the picture stage's
    network (EfficientNet-Lite0, on the GPU where torch sees one) in batches, each stored as it is done. Ctrl-C
    stops cleanly and the next run does only what is missing; a page that cannot be read is skipped with its
    reason. More like this, near-duplicates and the manifest's own picture model read these embeddings.
    """
    options = {"batch": batch, "workers": workers}
    run_pictures(open_manifest(db), quiet, **{name: value for name, value in options.items() if value})


@cli.command("sample")
@db_option
@click.option("--documents", type=click.IntRange(min=1), default=None,
              help="Synthetic issues to write (default 4).")
@click.option("--pages", type=click.IntRange(min=1), default=None, help="Pages per issue (default 16).")
@click.option("--dpi", type=click.IntRange(min=20), default=None, help="Scan resolution of the pages (default 100).")
@click.option("--workers", "-w", type=click.IntRange(min=1), default=None,
              help="Worker processes scoring the pages (default: one per core).")
@click.option("--quiet", "-q", is_flag=True, help="Print only the result.")
def sample_command(db, documents, pages, dpi, workers, quiet):
    """Write a small synthetic archive beside the manifest (data/sample/) and ingest it.

    Text columns, engravings, mixed pages and the hard cases that fool sigma, to try the whole
    workflow without PDFs of your own. Files already written are kept, so a stopped run resumes.
    """
    from ..runs import sample

    code = sample.run(db, documents or sample.DOCUMENTS, pages or sample.PAGES, dpi or sample.DPI, workers)
    if code:
        sys.exit(code)
