"""Commands that decide pages and pictures: the curator's overrides, one by one or from a labels file, and
the model learned from them."""

from __future__ import annotations

import csv
import dataclasses
import json
import re

import click

from ..manifest.pictures import PictureError
from ..manifest.store import JobRunning, Manifest
from ..sources.page_numbers import page_index
from .common import cli, db_option, find_document, open_manifest, page_bar, run_job

DECISIONS = {"include": True, "exclude": False, "auto": None}
MAX_PICTURES_PER_PAGE = 1_000  # a line's boxes are matched pairwise against the page's pictures
MAX_PAGE_NUMBER = 2**31 - 1  # past any PDF's pages, within SQLite's integers (10**23 would not reach the query)
# What a labels file may say for a decision, beside include/exclude/auto: the `keep` column of `pages`.
DECISION_WORDS = {**DECISIONS, "true": True, "1": True, "keep": True, "yes": True,
                  "false": False, "0": False, "reject": False, "no": False, "": None}


@cli.command()
@db_option
@click.option("--boxes", is_flag=True,
              help="Learn the picture finder from the boxes a curator corrected, instead of the pages' model from "
                   "the overrides.")
@click.option("--undo", "undo_boxes", is_flag=True, help="With --boxes: put the previous finder and pictures back.")
@click.option("--steps", type=click.IntRange(min=1), default=None, hidden=True, help="Training steps (--boxes).")
@click.option("--judge", is_flag=True,
              help="With --boxes: also learn this archive's judge from your picture decisions (not the default: on "
                   "the real pages measured it was never kept; docs/picture-finder.md).")
@click.option("--quiet", "-q", is_flag=True, help="Print only the result.")
def learn(db, boxes, undo_boxes, steps, judge, quiet):
    """Fit the model on the curator's overrides and store its suggestion for every page; with --boxes, learn the
    picture finder from the curator's boxes ("Learn from my boxes").

    Needs at least 10 overrides with both decisions among them. The suggestions become the
    decisions only with `settings --rule model`. Runs as a job of the manifest (the dashboard shows
    its progress), one at a time.

    --boxes: the pages where a curator redrew, added or deleted a picture (in the app, or with `boxes
    --from`) teach the picture finder this archive's pictures. A quarter of them is held out; the finder in
    use is fine-tuned on the rest (a few minutes at most on a CPU) and both are judged on the held-out pages.
    Only when the new one does better there is it kept, used by later ingests (with the network, the default),
    and the pictures of every page no curator touched are found again with it; a curator's boxes and
    decisions stay as they are. The held-out figures before and after are printed. One action in the
    history: `learn --boxes --undo` (or `undo`) puts the previous finder and pictures back.

    --boxes --judge: also learns the archive's judge from the pictures a curator kept and the boxes they deleted
    or excluded, kept only where it decides them better than the finder alone, each page judged by what it
    learned from the others; where kept, a box it judges not a picture stays, not counted, with its score.

    \b
        python -m curation boxes --from boxes.jsonl
        python -m curation learn --boxes
        python -m curation learn --boxes --undo
    """
    if undo_boxes and not boxes:
        raise click.UsageError("--undo goes with --boxes: learn --boxes --undo")
    if judge and not boxes:
        raise click.UsageError("--judge goes with --boxes: learn --boxes --judge")
    if boxes:
        return _learn_boxes(db, undo_boxes, steps, quiet, judge)
    from ..decisions.learn import MIN_LABELS
    from .. import views

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


def _learn_boxes(db: str, undo: bool, steps: int | None, quiet: bool, judge: bool = False) -> None:
    from ..manifest.history import UndoError
    from ..runs import learn_boxes

    manifest = open_manifest(db)
    if undo:
        try:
            done = learn_boxes.undo_last(manifest)
        except UndoError as exc:
            raise click.ClickException(str(exc)) from None
        click.echo(f"#{done['id']} {done['description']}")
        return
    with page_bar("learning from the boxes", quiet, unit="step") as progress:
        job = learn_boxes.LearnBoxes(manifest, steps=steps or learn_boxes.STEPS, judge=judge,
                                     on_progress=progress)
        report = run_job(job)
    for problem in report.unread:
        click.echo(f"not read: {problem}", err=True)
    if not report.before and not report.judge and not report.stopped:  # nothing to learn from, or to check on
        raise click.ClickException(report.message)
    click.echo(f"{report.message} in {report.seconds:.0f} s")


@cli.command()
@db_option
@click.option("--quiet", "-q", is_flag=True, help="Print nothing.")
def decide(db, quiet):
    """Decide every picture again under the saved rule, after a rule switch left the stored decisions stale.

    Runs as a job of the manifest (the dashboard launches it and shows its progress), a chunk of pictures
    per short transaction; stopped, the next run goes on from there. Until it ends, the dashboard
    evaluates the rule instead of reading the stored decisions.
    """
    from ..manifest import picture_decisions

    manifest = open_manifest(db)
    try:
        decided = picture_decisions.decide_job(manifest)
    except JobRunning as exc:
        raise click.ClickException(str(exc)) from None
    if not quiet:
        click.echo(f"decided {decided:,} pictures again")


@cli.command()
@db_option
@click.option("--quiet", "-q", is_flag=True, help="Print nothing.")
def cutoffs(db, quiet):
    """Count the pictures each rule keeps at every σ and area cutoff (Threshold's tables), and store them.

    The jobs that change the pages, the suggestions or many decisions (ingest, rescore, learn, a bulk action)
    count them before they end; the Threshold page launches this job where they are missing (an older
    manifest, a score cutoff saved) and shows the figures it makes once it ends. Runs as a job of the manifest.
    """
    from ..views import cutoff_counts

    manifest = open_manifest(db)
    try:
        cutoff_counts.count_job(manifest)
    except JobRunning as exc:
        raise click.ClickException(str(exc)) from None
    if not quiet:
        click.echo("counted the pictures every rule keeps at every cutoff")


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


def _find_page(manifest: Manifest, line: int, name: str, number: int, always: bool = False) -> tuple[int, int]:
    """(doc_id, stored page index) of page `number` (from 1) of a live document named by path, unique file name
    or id; a clear error otherwise, saying the `line` past the first (every line: `always`)."""
    where = f"line {line}: " if line > 1 or always else ""
    doc = find_document(manifest, name, where)
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


@cli.command()
@db_option
@click.option("--from", "lines", type=click.File("rb"), required=True,
              help="JSON lines, one a page: {\"doc\": DOC, \"page\": N, \"pictures\": [{\"box\": [x0, y0, x1, y1], "
                   "\"counts\": true}]}. '-' reads standard input.")
def boxes(db, lines):
    """Set the pictures of pages as a curator would, from a file of boxes: each page's pictures become exactly
    the boxes its line gives.

    DOC names a document as `pages` lists it (its path), its file name when that is unique, or its id; the
    page counts from 1; a box is x0, y0, x1, y1 in fractions of the page (0 to 1, top left first). A picture
    the finder found whose box matches one keeps its number and decision and takes the box as the
    curator's redrawn box; pictures matching no box are deleted, boxes matching none are added. `counts`
    false excludes the picture (it is a picture, but not one to export); true, or left out, leaves the
    decision to the rule. An empty list deletes every picture of the page.

    The whole file is one action in the history, by you: `undo` takes it back. A line that cannot be read
    (not UTF-8, bad JSON or JSON nested too deep, no such document or page, a box off the page) is reported
    with its number and changes nothing; the other lines are set. The pages set are what `learn --boxes` learns from (a page given
    without a picture too), and it never finds their pictures again.

    \b
        python -m curation boxes --from boxes.jsonl
        {"doc": "1890-03.pdf", "page": 12, "pictures": [{"box": [0.1, 0.2, 0.6, 0.5], "counts": true}]}
    """
    manifest = open_manifest(db)
    totals, refused = {"pages": 0, "kept": 0, "added": 0, "deleted": 0}, 0
    with manifest.recording("picture"):  # one action: `undo` takes the whole file back
        for number, raw in enumerate(lines, start=1):
            if not raw.strip():
                continue
            try:
                doc_id, index, wanted = _page_boxes(manifest, number, _line_text(number, raw))
                manifest.conn.execute("SAVEPOINT boxes_line")  # a line is set whole or not at all
                try:
                    counts = manifest.set_page_pictures(doc_id, index, wanted)
                except BaseException:
                    manifest.conn.execute("ROLLBACK TO boxes_line")
                    raise
                finally:
                    manifest.conn.execute("RELEASE boxes_line")
            except (click.ClickException, PictureError) as exc:
                message = exc.format_message() if isinstance(exc, click.ClickException) else str(exc)
                click.echo(f"Error: {message if message.startswith('line ') else f'line {number}: {message}'}", err=True)
                refused += 1
                continue
            totals["pages"] += 1
            for name, count in counts.items():
                totals[name] += count
    click.echo(f"{totals['pages']} page(s) set: {totals['kept']} picture(s) kept, {totals['added']} added, "
               f"{totals['deleted']} deleted" + (f"; {refused} line(s) refused" if refused else ""))
    if refused:
        raise SystemExit(1)


def _line_text(line: int, raw: bytes) -> str:
    """A line of a boxes file as text (a byte-order mark before the first is dropped); a ClickException
    when it is not UTF-8, so that one bad line is refused alone."""
    try:
        return raw.decode("utf-8-sig" if line == 1 else "utf-8")
    except UnicodeDecodeError as exc:
        raise click.ClickException(f"line {line}: not UTF-8 text (byte {exc.start + 1} of the line)") from None


def _page_boxes(manifest: Manifest, line: int, text: str) -> tuple[int, int, list]:
    """(doc_id, stored page index, [(box in reference pixels, counts)]) of one line of a boxes file; a
    ClickException saying what is wrong with it otherwise."""
    try:
        item = json.loads(text)
    except json.JSONDecodeError as exc:
        raise click.ClickException(f"line {line}: not JSON ({exc.msg})") from None
    except RecursionError:  # Python's parser follows nesting on its own stack
        raise click.ClickException(f"line {line}: its JSON is nested too deeply to be read") from None
    except ValueError:  # a number of more digits than Python converts (4,300)
        raise click.ClickException(f"line {line}: not JSON that can be read (a number too long)") from None
    if not isinstance(item, dict) or not isinstance(item.get("doc"), (str, int)) or isinstance(item.get("doc"), bool):
        raise click.ClickException(f"line {line}: give an object with doc, page and pictures")
    page, pictures = item.get("page"), item.get("pictures")
    if not isinstance(page, int) or isinstance(page, bool) or not 1 <= page <= MAX_PAGE_NUMBER:
        shown = f"{page!r}"[:40]  # a number of a million digits is not printed whole
        raise click.ClickException(f"line {line}: page {shown} is not a page number (from 1)")
    if not isinstance(pictures, list):
        raise click.ClickException(f"line {line}: pictures must be a list of {{\"box\": [x0, y0, x1, y1], \"counts\": true}}")
    if len(pictures) > MAX_PICTURES_PER_PAGE:
        raise click.ClickException(f"line {line}: {len(pictures):,} pictures on one page, over the limit of "
                                   f"{MAX_PICTURES_PER_PAGE:,}")
    doc_id, index = _find_page(manifest, line, str(item["doc"]), page, always=True)
    width, height = manifest.conn.execute("SELECT width, height FROM pages WHERE doc_id = ? AND page = ?",
                                          (doc_id, index)).fetchone()
    wanted = []
    for n, picture in enumerate(pictures, start=1):
        box = picture.get("box") if isinstance(picture, dict) else None
        counts = picture.get("counts", True) if isinstance(picture, dict) else None
        if (not isinstance(box, list) or len(box) != 4 or not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                                                  and -0.01 <= v <= 1.01 for v in box)):
            raise click.ClickException(f"line {line}: picture {n}'s box is not [x0, y0, x1, y1] in fractions of the page")
        if not (box[0] < box[2] and box[1] < box[3]):
            raise click.ClickException(f"line {line}: picture {n}'s box has x0 >= x1 or y0 >= y1")
        if not isinstance(counts, bool):
            raise click.ClickException(f"line {line}: picture {n}'s counts is not true or false")
        if not width or not height:
            raise click.ClickException(f"line {line}: page {page} of {item['doc']} was not scored: it has no size")
        wanted.append(([box[0] * width, box[1] * height, box[2] * width, box[3] * height], counts))
    return doc_id, index, wanted


@cli.command()
@click.argument("action", type=click.Choice(["include", "exclude", "clear", "caption"]), required=False)
@db_option
@click.option("--pictures", is_flag=True, help="Act on the Pictures view's pictures, not on pages.")
@click.option("--view", "decision", default="all", show_default=True,
              help="The view's filter, as Review names it (all, kept, rejected, near, overridden, ...).")
@click.option("--doc", default=None, help="Only this document (its path, unique file name or id).")
@click.option("--text", default=None, help="The caption (caption only; blank removes captions).")
@click.option("--replace", is_flag=True, help="Caption: also overwrite the captions already written.")
@click.option("--spec", default=None, hidden=True, help="The whole bulk action as JSON (the dashboard's).")
@click.option("--chunk", type=click.IntRange(min=1), default=None, hidden=True, help="Rows a transaction.")
@click.option("--quiet", "-q", is_flag=True, help="Print only the result.")
def bulk(action, db, pictures, decision, doc, text, replace, spec, chunk, quiet):
    """Include, exclude, clear or caption every page (or picture) of a view, as a job of the manifest.

    What Review's bulk actions do to a large view: a chunk per short transaction, with its progress in the
    dashboard, stoppable; recorded as one action, so `undo` takes it all back. Stopped or killed, what was
    written stays recorded and the same command again goes on from there, in the same action.

    \b
        python -m curation bulk exclude --view near
        python -m curation bulk caption --view kept --text "fashion plate" --pictures
    """
    from ..views import bulk as bulk_actions

    manifest = open_manifest(db)
    if spec is not None:
        request = bulk_actions.Bulk.from_json(spec)
    elif action is None:
        raise click.UsageError("give ACTION: include, exclude, clear or caption")
    else:
        doc_id = find_document(manifest, doc, "")["id"] if doc is not None else None
        request = bulk_actions.Bulk(view="pictures" if pictures else "pages", do=action,
                                    filter={"decision": decision, "doc_id": doc_id}, text=text, replace=replace)
    try:
        written = bulk_actions.run_job(manifest, request, chunk=chunk)
    except JobRunning as exc:
        raise click.ClickException(str(exc)) from None
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    job = manifest.latest_job(bulk_actions.JOB)
    click.echo(f"{written:,} {request.unit} written; {job['message']}")
