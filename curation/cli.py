"""Command line: the same work as the dashboard, for headless batch runs and scripts.

Every command takes --db, the manifest (an SQLite file, default data/manifest.sqlite).
"""

from __future__ import annotations

import contextlib
import dataclasses
import csv
import json
import os
import re
import sys

import click
from tqdm import tqdm

from guards.csv_cells import safe_row

from .captions.legend import check_languages
from .manifest import history as history_, thumbnail_store
from .manifest.rules import LIVE_DOCUMENT_SQL, RULES
from .manifest.store import DEFAULT_PAGE_TIMEOUT, JobRunning, Manifest, ManifestError
from .runs.ingest import Ingest, default_worker_memory, default_workers
from .runs.jobs import DiskFull
from .sources.page_numbers import page_index, page_number

DEFAULT_DB = os.environ.get("CURATION_DB", "data/manifest.sqlite")
FORMATS = click.Choice(["table", "csv", "jsonl"])
DOC_COLUMNS = ["path", "pages", "status", "error", "scored", "failed", "sha256"]
PAGE_COLUMNS = ["doc", "page", "sigma", "width", "height", "keep", "decided_by", "status", "method", "error",
                "sigma_content", "ink_tone", "ink_coverage", "picture_area", "picture_count", "picture_share",
                "text_height", "suggestion", "confidence", "duplicate_group"]
PICTURE_COLUMNS = ["doc", "page", "picture", "x0", "y0", "x1", "y1", "area", "keep", "decided_by", "override", "found",
                   "caption"]
DECISIONS = {"include": True, "exclude": False, "auto": None}
# What a labels file may say for a decision, beside include/exclude/auto: the `keep` column of `pages`.
DECISION_WORDS = {**DECISIONS, "true": True, "1": True, "keep": True, "yes": True,
                  "false": False, "0": False, "reject": False, "no": False, "": None}

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

cluster_option = click.option(
    "--cluster", envvar="CURATION_CLUSTER", default=None, metavar="ADDRESS",
    help="Run the tasks on a Dask cluster instead of this machine's processes: a scheduler address, "
         "tls://HOST:8786 with the cluster's CA and this machine's certificate and key in "
         "$CURATION_CLUSTER_TLS_CA_FILE, $CURATION_CLUSTER_TLS_CERT and $CURATION_CLUSTER_TLS_KEY (plain tcp:// "
         "only to this machine's loopback), or local[:N] for N worker processes here, on 127.0.0.1, with Dask's "
         "dashboard at 127.0.0.1:8787. Every worker must see the archive at the same path. Also read from "
         "$CURATION_CLUSTER, which is what the app's ingest jobs use.")

thumbnails_option = click.option(
    "--thumbnails", type=click.Choice(list(thumbnail_store.STORES)), default=None,
    help="Where page thumbnails are kept, saved as the manifest's setting for later runs and the app: "
         + "; ".join(f"{k}: {v}" for k, v in thumbnail_store.STORES.items())
         + f". Default: the manifest's setting ({thumbnail_store.DEFAULT_STORE} when never set). "
         + thumbnail_store.CHANGE_NOTE)


@contextlib.contextmanager
def open_cluster(address: str | None, manifest: Manifest):
    """The Dask cluster at `address` (None: the local process pool); a cluster that cannot be used, or is
    lost during the run, ends in one line and exit 1, and in the manifest as a failed ingest job, so the
    Ingest page that started this process shows why."""
    if not address:
        yield None
        return
    from .runs.cluster import Cluster, ClusterError

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


def open_manifest(db: str, create: bool = False) -> Manifest:
    try:
        return Manifest(db, create=create)
    except ManifestError as exc:
        raise click.ClickException(str(exc)) from exc


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
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
def ingest(paths, db, workers, page_timeout, worker_memory, cluster, thumbnails, legend_languages, quiet):
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
    finish_run(report, f"{report.documents} documents ({report.new_documents} new): {report.pages_scored} pages "
                       f"scored, {failed_pages(report)}, {report.pages_per_second:.1f} pages/s{report.incidents}")


@contextlib.contextmanager
def hash_bar(quiet: bool):
    """A bytes progress bar for hashing and the on_hash_progress callback that drives it."""
    with tqdm(desc="hashing", unit="B", unit_scale=True, disable=quiet, leave=False) as bar:
        def progress(done, total):
            bar.total = total
            bar.n = done
            bar.refresh()

        yield progress


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
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
def rescore(db, workers, all_pages, page_timeout, worker_memory, cluster, quiet):
    """Score the manifest's pages again with this version's scorer and features.

    Only pages scored by an older version are read, unless --all. Overrides, captions and
    settings are kept; near-duplicate groups are recomputed. Stops and resumes like ingest.
    Thumbnails of the pages read go where the manifest's setting says (`settings --thumbnails`).
    """
    from .runs.ingest import Rescore

    manifest = open_manifest(db)
    with open_cluster(cluster, manifest) as dask_cluster, page_bar("rescoring", quiet) as progress:
        try:
            job = Rescore(manifest, all_pages=all_pages, workers=workers, page_timeout=page_timeout,
                          cluster=dask_cluster, worker_memory=worker_memory, on_progress=progress)
        except ValueError as exc:  # the manifest's legend languages are not installed here
            raise click.ClickException(str(exc)) from None
        report = run_job(job)
    finish_run(report, f"{report.documents} documents: {report.pages_scored} pages rescored, {failed_pages(report)}")


@cli.command()
@db_option
@click.option("--quiet", "-q", is_flag=True, help="Print only the result.")
def learn(db, quiet):
    """Fit the model on the curator's overrides and store its suggestion for every page.

    Needs at least 10 overrides with both decisions among them. The suggestions become the
    decisions only with `settings --rule model`. Runs as a job of the manifest (the dashboard shows
    its progress), one at a time.
    """
    from .decisions.learn import MIN_LABELS
    from .manifest import views

    manifest = open_manifest(db)
    try:
        outcome = views.learn_job(manifest)
    except JobRunning as exc:
        raise click.ClickException(str(exc)) from None
    if not outcome.learned:
        raise click.ClickException(f"too few overrides to learn from: {MIN_LABELS} are needed, with both decisions "
                                   f"among them ({outcome.message})")
    state = views.model_state(manifest)
    rule = views.base_rule(manifest.rule)
    click.echo(f"learned from {outcome.labels} overrides: keeps {state.kept} of {state.suggestions} pages; "
               f"disagrees with the {rule} rule on {state.disagrees} pages you have not decided")


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
        line = f"{job['kind']} job {job['id']}: {job['status']}, {job['done']}/{job['total']} pages"
        if job["status"] == "running" and job["rate"]:
            line += f", {job['rate']:.1f} pages/s, {job['eta'] or 0:.0f} s left"
        if job["message"]:
            line += f" ({job['message']})"
        click.echo(line)


@cli.command()
@db_option
@click.option("--format", "fmt", type=FORMATS, default="table", show_default=True)
def docs(db, fmt):
    """One row per document: path, pages, status (ok, partial, failed, encrypted, empty,
    not-pdf, pending, replaced) and error, the reason for a person to read."""
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
    on it: include, exclude or auto), found (whether the scorer still finds it) and caption."""
    from .manifest.views import picture_rows

    rows = ({**row, "page": page_number(row["page"])} for row in picture_rows(open_manifest(db), threshold, rule=rule))
    write_rows(rows, PICTURE_COLUMNS, fmt)


@cli.command()
@db_option
@click.option("--threshold", type=float, default=None, help="The sigma cutoff (the original method's 45).")
@click.option("--rule", type=click.Choice(list(RULES)), default=None,
              help="How pages without an override are decided: " + "; ".join(f"{k}: {v}" for k, v in RULES.items()))
@click.option("--picture-area-min", type=click.FloatRange(min=0), default=None,
              help="Picture rule: the square inches a page's largest picture must cover (2 leaves out "
                   "stock cuts of about an inch; 0 keeps any picture).")
@click.option("--page-timeout", type=click.FloatRange(min=0), default=None, metavar="S",
              help="Seconds one page may take in ingest, rescore and export before it is skipped (0: no limit). "
                   "The app shows it and cannot change it.")
@thumbnails_option
def settings(db, threshold, rule, picture_area_min, page_timeout, thumbnails):
    """Show the decision settings; with options, change them first."""
    manifest = open_manifest(db)
    if threshold is not None:
        manifest.threshold = threshold
    if rule is not None:
        manifest.rule = rule
    if picture_area_min is not None:
        manifest.picture_area_min = picture_area_min
    if page_timeout is not None:
        manifest.page_timeout = page_timeout
    if thumbnails is not None:
        manifest.thumbnail_store = thumbnails
    click.echo(f"rule: {manifest.rule} ({RULES[manifest.rule]})")
    click.echo(f"threshold: {manifest.threshold:g}")
    click.echo(f"picture_area_min: {manifest.picture_area_min:g} sq in")
    click.echo(f"page_timeout: {manifest.page_timeout:g} s" + (" (no limit)" if not manifest.page_timeout else ""))
    store = manifest.thumbnail_store
    click.echo(f"thumbnails: {store} ({thumbnail_store.STORES[store]})"
               + (f", in {manifest.thumbnail_folder}" if store == "folder" else ""))
    from .runs.cluster_config import ADDRESS_ENV, configured_address

    click.echo(f"cluster: {configured_address() or 'none, worker processes here'} (${ADDRESS_ENV}; not a manifest setting)")


class PageAndPicture(click.ParamType):
    """PAGE or PAGE:PICTURE: a page counted from 1, and a picture's number on it as `pictures` lists it."""

    name = "page[:picture]"

    def convert(self, value, param, ctx):
        if isinstance(value, tuple):
            return value
        match = re.fullmatch(r"\s*([0-9]+)\s*(?::\s*([0-9]+)\s*)?", str(value))
        if not match:
            self.fail(f"{value!r} is not PAGE or PAGE:PICTURE (examples: 12, 12:2)", param, ctx)
        return int(match.group(1)), None if match.group(2) is None else int(match.group(2))


@dataclasses.dataclass(frozen=True)
class Label:
    """One decision asked for: a page, or one picture of it (`picture`, its number on the page)."""

    line: int  # of the labels file; 1 for the command line
    doc: str
    page: int  # from 1
    picture: int | None
    keep: bool | None


@cli.command()
@click.argument("doc", required=False)
@click.argument("page", required=False, type=PageAndPicture(), metavar="[PAGE[:PICTURE]]")  # 0: "pages count from 1"
@click.argument("decision", required=False, type=click.Choice(list(DECISIONS)))
@db_option
@click.option("--from", "labels", type=click.File("r", encoding="utf-8-sig"), default=None,
              help="A CSV with columns doc, page (from 1), an optional picture (its number on the page, as "
                   "`pictures` lists it; empty: the page) and the decision: a `decision` column (include, exclude "
                   "or auto), else an `override` column (as `pictures` writes it), else a `keep` column (true/false, "
                   "as `pages` writes it). One override per row. '-' reads standard input.")
def override(doc, page, decision, db, labels):
    """Overrule the decision of one page or one picture, or of every page and picture in a labels file.

    DOC is a document as `pages` lists it (its path), its file name when that is unique, or its
    id; PAGE counts from 1, as a PDF viewer and `pages` count (until version 0.2 it counted from
    0: add 1 to page numbers in older scripts and labels files); PAGE:PICTURE names one picture of
    the page by its number as `pictures` lists it. include keeps the page (or exports the picture)
    whatever the rule says, exclude removes it, auto hands it back to the rule. Re-scoring never
    touches an override; a picture's follows it to its new box.

    A labels file's decision is its `decision` column, else its `override` column, else its `keep`
    column. So `pages --format csv` output pins every page as it is decided now (its keep), and
    `pictures --format csv` output gives every picture back the override it has (its override
    column): as written it changes nothing; change a row's override to include, exclude or auto
    to decide that picture. Every row is checked first: one bad row changes nothing.

    \b
        python -m curation override data/archive/1890-03.pdf 12 include
        python -m curation override data/archive/1890-03.pdf 12:2 exclude    # picture 2 of page 12
        python -m curation override --from labels.csv
        python -m curation pictures --format csv > pictures.csv   # edit the override column, then
        python -m curation override --from pictures.csv
    """
    manifest = open_manifest(db)
    if labels is not None:
        if doc is not None:
            raise click.UsageError("give DOC PAGE DECISION or --from, not both")
        rows = list(_label_rows(labels))
    elif doc is None or page is None or decision is None:
        raise click.UsageError("give DOC PAGE[:PICTURE] DECISION (include, exclude or auto), or --from labels.csv")
    else:
        rows = [Label(1, doc, page[0], page[1], DECISIONS[decision])]
    pages, pictures = [], []
    for label in rows:  # every row is checked before anything is written
        doc_id, index = _find_page(manifest, label.line, label.doc, label.page)
        if label.picture is None:
            pages.append(((doc_id, index), label.keep))
        else:
            pictures.append((_find_picture(manifest, label, doc_id, index), label.keep))
    with manifest.recording("override"):  # one action: `undo` takes the whole file back
        for (doc_id, index), keep in pages:
            manifest.set_override(doc_id, index, keep)
        if pictures:
            manifest.set_picture_overrides(pictures)
    decided = [keep for _, keep in pages + pictures]
    counts = {word: sum(keep is value for keep in decided) for word, value in DECISIONS.items()}
    what = f" ({len(pages)} pages, {len(pictures)} pictures)" if pictures else ""
    click.echo(f"{len(decided)} override(s){what}: {counts['include']} include, {counts['exclude']} exclude, "
               f"{counts['auto']} back to the rule")


def _label_rows(labels):
    reader = csv.DictReader(labels)
    columns = set(reader.fieldnames or ())
    # The decision: a `decision` column, else `override` (as `pictures` writes it), else `keep` (as `pages` does).
    column = next((c for c in ("decision", "override", "keep") if c in columns), None)
    missing = {"doc", "page"} - columns | ({"decision"} if column is None else set())
    if missing:
        raise click.ClickException(f"the labels file needs the columns doc, page, decision; missing {', '.join(sorted(missing))}")
    for line, row in enumerate(reader, start=2):
        word = (row.get(column) or "").strip().lower()
        if word not in DECISION_WORDS:
            raise click.ClickException(f"line {line}: decision {word!r} is not include, exclude or auto")
        kept = (row.get("keep") or "").strip().lower()
        if column != "keep" and kept in DECISIONS:  # a decision typed where `pictures` writes the outcome
            raise click.ClickException(f"line {line}: keep says {kept!r}, but this file's decisions are read from its "
                                       f"{column} column; write {kept} there")
        try:
            number = int(row["page"])
        except (TypeError, ValueError):
            raise click.ClickException(f"line {line}: page {row['page']!r} is not a page number") from None
        picture = (row.get("picture") or "").strip()
        if picture and not picture.isdigit():
            raise click.ClickException(f"line {line}: picture {picture!r} is not a picture's number on its page")
        yield Label(line, row["doc"], number, int(picture) if picture else None, DECISION_WORDS[word])


def _find_page(manifest: Manifest, line: int, name: str, number: int) -> tuple[int, int]:
    """(doc_id, stored page index) of page `number` (from 1) of a live document named by path, unique file name
    or id; a clear error otherwise."""
    where = f"line {line}: " if line > 1 else ""
    doc = _find_document(manifest, name, where)
    index = page_index(number)
    if manifest.conn.execute("SELECT 1 FROM pages WHERE doc_id = ? AND page = ?", (doc["id"], index)).fetchone() is None:
        raise click.ClickException(f"{where}{doc['path']} has no page {number} (pages count from 1 to "
                                   f"{doc['pages']}, as a PDF viewer counts)")
    return doc["id"], index


def _find_picture(manifest: Manifest, label: Label, doc_id: int, index: int) -> int:
    """The id of picture `label.picture` of the page; a clear error naming the page's pictures otherwise."""
    row = manifest.picture_by_number(doc_id, index, label.picture)
    if row is not None:
        return row["id"]
    numbers = [r[0] for r in manifest.conn.execute(
        "SELECT number FROM pictures WHERE doc_id = ? AND page = ? ORDER BY number", (doc_id, index))]
    where = f"line {label.line}: " if label.line > 1 else ""
    held = f"its pictures are {', '.join(map(str, numbers))}" if numbers else "it has no picture"
    raise click.ClickException(f"{where}page {label.page} of {label.doc} has no picture {label.picture} ({held}; "
                               "see `python -m curation pictures`)")


def _find_document(manifest: Manifest, name: str, where: str = ""):
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


@cli.group()
def captions():
    """Edit the curator's captions of many pictures at once. Each picture has three captions: the
    curator's (always wins, never written by a job), its printed legend (read by OCR) and a captioning
    model's; these commands write only the curator's, as one action that `undo` takes back in one step.
    Run with --dry-run first to see every change and how many there are."""


def _picture_filter(manifest: Manifest, doc: str | None, kept: bool, threshold: float | None):
    from .captions.edit import Pictures

    doc_id = _find_document(manifest, doc)["id"] if doc else None
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
    from .captions.edit import CaptionEditError, apply, preview

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
    from .captions.edit import use_legends

    manifest = open_manifest(db)
    changes = use_legends(manifest, _picture_filter(manifest, doc, kept, threshold), overwrite=overwrite, dry_run=dry_run)
    _show_changes(changes, dry_run, "legends as captions")


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
    from .runs import sample

    code = sample.run(db, documents or sample.DOCUMENTS, pages or sample.PAGES, dpi or sample.DPI, workers)
    if code:
        sys.exit(code)


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
              help="Caption of every image. Placeholders: {trigger}, {class}, {best_caption} (the curator's "
                   "caption, else the printed legend, else the captioning model's), {caption} (the curator's: "
                   "the picture's, else its page's, from the Review page; empty if none), {legend} (the legend "
                   "printed with the picture, read by OCR), {auto_caption} (the captioning model's), {doc} "
                   "(file name), {page} (from 1), {picture} (--crop pictures: the picture's number on its page, "
                   "empty for a whole page). A whole page takes the legend and model caption of its largest "
                   "kept picture. Empty parts drop out with their comma.")
@click.option("--repeats", type=click.IntRange(1, 10000), default=10, show_default=True,
              help="kohya layout: times each image is seen per epoch (the number in the folder name).")
@click.option("--pad-colour", "pad_colour", default="paper", show_default=True,
              help="Margin colour for --fit pad: 'paper' (each page's own paper) or #rrggbb.")
@click.option("--crop", type=click.Choice(["page", "picture", "pictures"]), default="page", show_default=True,
              help="page: the whole page. picture: each page cut to its largest picture as the curator left it "
                   "(a kept one first, its redrawn box where redrawn; never a deleted or excluded one; plus a 1 % "
                   "margin), so the text around a plate is left out; then shaped by --mode and --fit. Pages "
                   "without a picture, or with one under 3 % of the page, export whole. "
                   "pictures: every picture of a page its own image (<page>_pic1 the largest, _pic2 ...), "
                   "with the same margin; pictures under the picture_area_min setting (square inches) are "
                   "left out, and a page with no picture that large exports whole.")
@click.option("--duplicates", type=click.Choice(["one", "all"]), default="one", show_default=True,
              help="one: a single page per group of near-identical plates (the one whose picture covers most "
                   "of its page; ties to the first by document path and page), the others listed in "
                   "export.json. all: every kept page.")
@click.option("--threshold", type=float, default=None, help="Decide at this sigma instead of the saved threshold.")
@click.option("--workers", "-w", type=click.IntRange(min=1), default=None,
              help=f"Worker processes reading pages (default: one per core, here {default_workers()}).")
@page_timeout_option
@worker_memory_option
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
def export(db, out, layout, mode, fit, size, quality, trigger, class_word, template, repeats, pad_colour, crop,
           duplicates, threshold, workers, page_timeout, worker_memory, quiet):
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
    from .export import Export, ExportError, ExportSettings, SettingsError  # Pillow only when exporting

    manifest = open_manifest(db)
    try:
        settings = ExportSettings(mode=mode, fit=fit, size=size, quality=quality, layout=layout, trigger=trigger,
                                  class_word=class_word, template=template, repeats=repeats, pad_colour=pad_colour,
                                  crop=crop, duplicates=duplicates)
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
    cropped = f", {report.cropped} cut to their picture" if settings.crop != "page" else ""
    click.echo(f"{report.images} images ({settings.layout} layout, {settings.shape} {settings.size}{cropped}) written "
               f"to {report.path}: {report.bytes / 1e6:.1f} MB, {report.images_per_second:.1f} images/s")
    if report.left_out:
        count = len(report.left_out)
        click.echo(f"{count} near-duplicate{'' if count == 1 else 's'} left out, one page kept per group (listed in "
                   "export.json; --duplicates all keeps them)")

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

    from .captions.edit import Pictures
    from .captions.job import CaptionJob  # torch only when captioning

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


HISTORY_COLUMNS = ["id", "at", "user", "kind", "description", "changes", "undone_by"]
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


def write_rows(rows, columns, fmt) -> None:
    out = sys.stdout
    if fmt == "jsonl":
        for row in rows:
            out.write(json.dumps({c: row.get(c) for c in columns}) + "\n")
    elif fmt == "csv":
        writer = csv.DictWriter(out, columns, extrasaction="ignore", lineterminator="\n")
        writer.writeheader()
        writer.writerows(safe_row(row) for row in rows)
    else:
        import pandas as pd  # only the table view needs it

        frame = pd.DataFrame(list(rows), columns=columns)
        if "sigma" in frame:
            frame["sigma"] = frame["sigma"].round(2)
        out.write((frame.to_string(index=False) if len(frame) else "(none)") + "\n")
