"""Learn from my boxes: the picture finder's heads fine-tuned on the pages whose boxes a curator corrected, kept
only where it finds their pictures better, then used to find again the pictures of the pages nobody touched.

1. The corrected pages: pages where a curator redrew, added or deleted a picture (in the app), or gave all its
   boxes (`boxes --from`, a page without a picture too), MAX_PAGES of them at most. Their truth is their pictures
   as the curator left them (an excluded picture is left out of the loss and judged "neither": it is a picture,
   but whether it counts is a choice). Each is read as ingest reads it.
2. A quarter of them (HELD_OUT, drawn from SEED) is held out: a quarter of those holding a picture that counts
   (at least one, so at least two such pages are needed) and a quarter of the others. The heads in use (the
   manifest's learned ones, else the shipped ones) are fine-tuned on the rest from their own weights, together
   (curation.pictures.finder_train: the same targets, features and training, STEPS steps from SEED, one thread).
3. Old and new head find the held-out pages' pictures, judged as the recipe judges (curation.pictures.judge).
   Only when the new one scores better there and finds every picture the old one found (`better`) is it kept
   (curation.manifest.finders) and put in use, and the pages no curator touched (no picture decided, redrawn,
   added, deleted, captioned; no override; not boxed) are found again with it as ingest finds them. A curator's
   decision and box always win: their pages are not found again, and elsewhere a picture found again keeps its
   number and decision (Manifest.set_pictures).
4. With `judge` (`learn --boxes --judge`, not the default), the archive's judge is learned from the curator's
   picture decisions too (curation.runs.learn_judge), kept only where it decides them better than the finder
   alone, each page judged by what it learned from the others; where kept, the untouched pages are found again
   with it (and with the new head where that was kept too).
5. All of it is one action in the history: undoing it puts the previous finder, judge and the pages' previous
   pictures and scores back (a page changed since keeps that change).

Runs as a job of the manifest, with its progress; stopped, it keeps nothing, unless it was already finding
pages again: those stay found, in the action, which undo takes back.
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..manifest import finders, history
from ..manifest.pictures import TOUCHED_SQL
from ..manifest.rules import LIVE_DOCUMENT_SQL
from ..manifest.store import Manifest
from ..scoring.features import REFERENCE_DPI
from ..sources.paths import document_roots
from ..sources.page_numbers import page_number
from ..sources.reader import DocumentError, error_text, open_document
from ..views import cutoff_counts
from . import learn_judge
from .jobs import DiskFull, JobProgress, Stopped, claim_manifest, is_disk_full, plural, stop_on_sigterm

KIND = "learn_boxes"
STEPS = 300  # about a minute on one core of this project's CPU: the 3-minute budget keeps room for the pages
LEARNING_RATE = 1e-3  # a third of the recipe's: the head is tuned, not learned again
SEED = 37
HELD_OUT = 0.25
MIN_PAGES = 2  # one to learn from, one to check on
# Fixed pages holding a picture that counts, from which the check on the held-out quarter rests on two pages or more:
# on one page a new finder seldom does better (it finds its one or two pictures as well as before), and is not kept.
ENOUGH_PAGES = 6
# Corrected pages read at most (drawn from SEED where there are more): reading, encoding and judging them stays
# within about a minute on one core, beside the training's steps.
MAX_PAGES = 120
REFIND_CHUNK = 8  # pages of a document found again per task (the PDF opened once)

CORRECTED_SQL = (
    "WITH corrected(doc_id, page) AS (SELECT doc_id, page FROM pictures WHERE fx0 IS NOT NULL OR added OR deleted "
    "UNION SELECT doc_id, page FROM pages WHERE boxed = 1) "
    f"SELECT c.doc_id, c.page, d.path FROM corrected c JOIN pages p ON p.doc_id = c.doc_id AND p.page = c.page "
    f"JOIN documents d ON d.id = c.doc_id WHERE {LIVE_DOCUMENT_SQL} AND p.status = 'ok' ORDER BY c.doc_id, c.page")
UNTOUCHED_SQL = (
    f"SELECT p.doc_id, p.page, d.path FROM pages p JOIN documents d ON d.id = p.doc_id "
    f"WHERE {LIVE_DOCUMENT_SQL} AND p.status = 'ok' AND COALESCE(p.boxed, 0) = 0 "
    f"AND NOT EXISTS (SELECT 1 FROM pictures x WHERE x.doc_id = p.doc_id AND x.page = p.page AND {TOUCHED_SQL}) "
    f"AND NOT EXISTS (SELECT 1 FROM overrides o WHERE o.doc_id = p.doc_id AND o.page = p.page) "
    f"AND NOT EXISTS (SELECT 1 FROM captions c WHERE c.doc_id = p.doc_id AND c.page = p.page) "
    f"ORDER BY p.doc_id, p.page")


@dataclass
class LearnReport:
    pages: int = 0  # corrected pages
    trained: int = 0
    held_out: int = 0
    before: dict = field(default_factory=dict)  # the held-out pages' figures, the head in use
    after: dict = field(default_factory=dict)  # ... and the fine-tuned head
    learned: bool = False  # the new head scored better and is in use
    version: int | None = None
    judge: dict = field(default_factory=dict)  # the judge's check, leave one page out (learn_judge.learned)
    judge_kept: bool = False  # the judge learned from the curator's decisions decided better and is in use
    judge_version: int | None = None
    refound: int = 0  # untouched pages found again
    untouched: int = 0
    seconds: float = 0.0
    stopped: bool = False
    message: str = ""
    unread: list[str] = field(default_factory=list)  # corrected pages that could not be read, and why


def score(figures: dict) -> int:
    """How well a head did on the held-out pages: clean boxes and counted pictures found, less wrong boxes."""
    return figures["clean"] + figures["found"] - figures["wrong"]


def better(after: dict, before: dict) -> bool:
    """The new head scores better on the held-out pages, and finds every counted picture the old one found: a head
    that keeps less than before scores better on pages of text by finding nothing."""
    return score(after) > score(before) and after["found"] >= before["found"]


def held_out_split(illustrated: np.ndarray, seed: int = SEED) -> np.ndarray:
    """Which pages are held out (a bool mask), drawn from `seed`: HELD_OUT of the pages holding a counted picture
    (`illustrated`), at least one where two do, and HELD_OUT of the others; at least one page in all."""
    rng = np.random.default_rng(seed)
    held = np.zeros(len(illustrated), bool)
    for group in (True, False):
        pages = np.flatnonzero(illustrated == group)
        least = 1 if group and len(pages) >= 2 else 0
        held[rng.permutation(pages)[:max(least, round(len(pages) * HELD_OUT))]] = True
    if not held.any():
        held[rng.integers(len(held))] = True
    return held


def truth(manifest: Manifest, doc_id: int, page: int) -> list[dict]:
    """A corrected page's pictures as the curator left them, as the judge reads boxes: fractions of the page,
    `counts` false where the curator excluded one."""
    width, height = manifest.conn.execute("SELECT width, height FROM pages WHERE doc_id = ? AND page = ?",
                                          (doc_id, page)).fetchone()
    rows = manifest.conn.execute(
        "SELECT COALESCE(fx0, x0), COALESCE(fy0, y0), COALESCE(fx1, x1), COALESCE(fy1, y1), keep FROM pictures "
        "WHERE doc_id = ? AND page = ? AND NOT deleted AND (rank IS NOT NULL OR added OR fx0 IS NOT NULL OR keep = 1)",
        (doc_id, page)).fetchall()
    return [{"box": [r[0] / width, r[1] / height, r[2] / width, r[3] / height], "counts": r[4] != 0} for r in rows]


@dataclass(frozen=True)
class Readiness:
    """What the job would learn from, said before it is started: the pages with corrected boxes (up to MAX_PAGES),
    those holding a picture that counts, how many it learns from and checks on, and why it cannot start yet."""

    pages: int
    illustrated: int
    trained: int
    held_out: int
    judge: learn_judge.Readiness | None = None  # what the archive's judge would learn from

    @property
    def blocked(self) -> bool:
        """Neither the finder nor the judge has enough to learn from: the button is off."""
        return self.why_not is not None and (self.judge is None or self.judge.why_not is not None)

    @property
    def why_not(self) -> str | None:
        """Why the finder's heads cannot learn yet (None: they can)."""
        if self.pages < MIN_PAGES:
            return (f"{plural(self.pages, 'page')} with boxes a curator corrected; at least {MIN_PAGES} are needed (one "
                    "to learn from, one to check on)")
        if self.illustrated < MIN_PAGES:
            return (f"{plural(self.illustrated, 'page')} of the {self.pages} corrected "
                    f"{'holds' if self.illustrated == 1 else 'hold'} a picture that counts; at least {MIN_PAGES} are "
                    "needed (one to learn from, one to check that it still finds pictures on)")
        return None

    @property
    def summary(self) -> str:
        """The pages in words, and what a curator can do to make the check surer."""
        judge = f" {self.judge.summary}" if self.judge is not None else ""
        if self.blocked:
            return (f"Nothing to learn from yet: {self.why_not}. Redraw, add or delete boxes on more pages first."
                    + judge)
        if self.why_not:
            return f"The finder has too little to learn from: {self.why_not}.{judge}"
        said = (f"Learns from your boxes on {plural(self.trained, 'page')} and checks on "
                f"{plural(self.held_out, 'page')} it did not learn from ({self.illustrated} of the {self.pages} "
                "hold a picture that counts); the new finder is kept only if it finds their pictures better.")
        if self.illustrated < ENOUGH_PAGES:
            said += (f" With fewer than {ENOUGH_PAGES} fixed pages holding pictures the check rests on a page or two, "
                     "and a finder that does no better there is not kept: fix a few more first.")
        return said + judge


def readiness(manifest: Manifest, judge: bool = False) -> Readiness:
    """What `learn --boxes` would learn from now (the pages it reads, as LearnBoxes chooses them); with `judge`,
    what `learn --boxes --judge` would learn the archive's judge from too."""
    corrected = _corrected(manifest, SEED)
    illustrated = np.array([any(p["counts"] for p in truth(manifest, doc_id, page)) for doc_id, page, _ in corrected],
                           bool)
    judge = learn_judge.readiness(manifest, SEED) if judge else None
    if len(corrected) < MIN_PAGES or illustrated.sum() < MIN_PAGES:
        return Readiness(len(corrected), int(illustrated.sum()), 0, 0, judge)
    held = held_out_split(illustrated, SEED)
    return Readiness(len(corrected), int(illustrated.sum()), int((~held).sum()), int(held.sum()), judge)


def _corrected(manifest: Manifest, seed: int) -> list[tuple]:
    """The corrected pages (doc_id, page, path) the job reads: all of them, or MAX_PAGES drawn from `seed`."""
    corrected = [tuple(row) for row in manifest.conn.execute(CORRECTED_SQL)]
    if len(corrected) > MAX_PAGES:
        chosen = np.sort(np.random.default_rng(seed).permutation(len(corrected))[:MAX_PAGES])
        corrected = [corrected[i] for i in chosen]
    return corrected


class LearnBoxes:
    """One "learn from my boxes" over a manifest. Use `run()`; progress goes to `on_progress(done, total)`."""

    def __init__(self, manifest: Manifest, *, steps: int = STEPS, seed: int = SEED, judge: bool = False,
                 on_progress=lambda done, total: None):
        self.manifest = manifest
        self.steps, self.seed = steps, seed
        self.judge = judge  # also learn the archive's judge (curation.runs.learn_judge): not the default
        self.on_progress = on_progress
        self.report = LearnReport()
        self.progress = JobProgress(manifest)
        self.roots = tuple(str(root) for root in document_roots(manifest.path, manifest))

    def run(self) -> LearnReport:
        with stop_on_sigterm():
            return self._run()

    def _run(self) -> LearnReport:
        import torch

        torch.set_num_threads(1)  # the same sums on every run, and the other core left to the app
        self.progress.start()
        self.progress.job_id = claim_manifest(self.manifest, KIND, {"steps": self.steps, "seed": self.seed})
        status, message = "failed", None
        try:
            self._learn()
            status, message = "done", self.report.message
        except (Stopped, KeyboardInterrupt):
            self.report.stopped = True
            kept = (f"; the {plural(self.report.refound, 'page')} found again stay, in the history's action, which undo "
                    "takes back" if self.report.refound else "; nothing was kept")
            status = "stopped"
            message = self.report.message = f"stopped{kept}"
        except Exception as exc:
            message = f"learning from the boxes failed: {error_text(exc)}"
            if is_disk_full(exc):
                raise DiskFull(self.manifest.path) from None
            raise
        finally:
            self.report.seconds = time.monotonic() - self.progress.started
            self.progress.finish(status, message, lambda: DiskFull(self.manifest.path))
        return self.report

    def _advance(self, count: int = 1) -> None:
        self.progress.done += count
        self.on_progress(self.progress.done, self.progress.total)
        self.progress.beat()

    def _say(self, message: str) -> None:
        self.manifest.update_job(self.progress.job_id, message=message)
        self.progress.beat()

    def _learn(self) -> None:
        """The finder's heads, then the archive's judge (curation.runs.learn_judge), each kept only where it does
        better on what it did not learn from; what is kept is one action, and the untouched pages found again."""
        report = self.report
        untouched = [tuple(row) for row in self.manifest.conn.execute(UNTOUCHED_SQL)]
        decided = learn_judge.decisions(self.manifest, self.seed) if self.judge else []
        weights = self._learn_finder(len({(d.doc_id, d.page) for d in decided}) + len(untouched))
        version = finders.current_version(self.manifest.conn)
        in_use = weights or finders.weights(self.manifest.conn, version)
        judged = self._learn_judge(decided, in_use) if self.judge else learn_judge.Outcome(None, "")
        said = [m for m in (report.message, judged.message) if m]
        report.message = "; ".join(said)
        if weights is None and judged.head is None:
            return
        with self.manifest.recording("finder") as action:
            if weights is not None:
                report.version = version = finders.add(self.manifest.conn, version, weights, {
                    "before": report.before, "after": report.after, "trained": report.trained,
                    "held_out": report.held_out, "steps": self.steps, "seed": self.seed})
                self.manifest.set_setting(finders.FINDER_SETTING, report.version)
                report.learned = True
            if judged.head is not None:
                report.judge_version = finders.add_judge(self.manifest.conn, judged.head.as_dict(), judged.figures)
                self.manifest.set_setting(finders.JUDGE_SETTING, report.judge_version)
                report.judge_kept = True
        report.untouched = len(untouched)
        self._say(f"finding the pictures of {plural(len(untouched), 'page')} nobody touched again")
        try:
            self._find_again(untouched, action, weights, finders.label(finders.SHIPPED, version),
                             finders.judge(self.manifest.conn))
        finally:
            with self.manifest.transaction():
                history.finish(self.manifest.conn, action)
        cutoff_counts.counted_after_job(self.manifest)  # Threshold's tables, for the pictures found again
        report.message += (f"; found the pictures of {plural(report.refound, 'page')} nobody touched again"
                           + (f" (finder {report.version})" if report.learned else ""))

    def _learn_finder(self, more_work: int) -> bytes | None:
        """The heads fine-tuned on the corrected pages, kept (their weights returned) only where they find the
        held-out pages' pictures better; report.message says what came of it. `more_work`: the pages the judge
        and the finding again will read, for the progress."""
        from ..pictures import finder, finder_train
        from ..pictures.compose import COUNTED, IGNORED, Composed, at_work_side
        from ..pictures.finder_network import head_bytes, head_from_bytes

        report = self.report
        corrected = _corrected(self.manifest, self.seed)
        report.pages = len(corrected)
        truths = [truth(self.manifest, doc_id, page) for doc_id, page, _ in corrected]
        illustrated = np.array([any(p["counts"] for p in labelled) for labelled in truths], bool)
        self.progress.total = more_work
        why_not = Readiness(report.pages, int(illustrated.sum()), 0, 0).why_not
        if why_not:
            report.message = f"kept the finder as it was: {why_not}"
            return None
        held = held_out_split(illustrated, self.seed)
        report.held_out, report.trained = int(held.sum()), int((~held).sum())
        self.progress.total += len(corrected) + self.steps + 2 * report.held_out
        self._say(f"reading {plural(report.pages, 'corrected page')}")
        training, measured, grays = [], [], {}
        for (doc_id, page, path), labelled, is_held in zip(corrected, truths, held):
            try:
                gray = self._page(path, page)[0]
            except DocumentError as exc:  # its file is gone or unreadable now: learnt without it, and said
                report.unread.append(f"{Path(path).name} p. {page_number(page)}: {exc}")
                self._advance()
                continue
            if is_held:
                key = Path(f"{doc_id}/{page}")
                grays[key] = gray
                measured.append(finder_train.Measured(key, REFERENCE_DPI, "manifest", gray.shape[1] / gray.shape[0],
                                                      labelled, any(p["counts"] for p in labelled)))
            else:
                boxes = [(tuple(p["box"]), COUNTED if p["counts"] else IGNORED) for p in labelled]
                training.append(Composed(at_work_side(gray), boxes, {"manifest"}))
            self._advance()
        if not training or not measured:
            report.message = (f"kept the finder as it was: {plural(len(report.unread), 'corrected page')} could not be "
                              "read, and too few were left to learn from and check on")
            return None
        version = finders.current_version(self.manifest.conn)
        current = finder.Finder.with_head(head_from_bytes(finders.weights(self.manifest.conn, version)
                                                          or finder.shipped_weights()))
        with tempfile.TemporaryDirectory(prefix="learn-boxes-") as cache:
            pages = finder_train.encode(training, Path(cache), "boxes")
            self._say(f"learning from {plural(report.trained, 'page')}")
            head = finder_train.train_head(pages, np.arange(len(training)), self.steps, self.seed, start=current.network.head,
                                           learning_rate=LEARNING_RATE, each_step=lambda step: self._advance())
            del pages
        self._say(f"checking on {plural(report.held_out, 'page')} it did not learn from")
        learned = finder.Finder.with_head(head)
        before, after = self._judged(current, measured, grays), self._judged(learned, measured, grays)
        report.before, report.after = finder_train.figures(before), finder_train.figures(after)
        if not better(report.after, report.before):
            report.message = (f"kept the finder as it was: the one learned from {plural(report.trained, 'page')} did no "
                              f"better on the {plural(report.held_out, 'page')} it did not learn from ({_figures(report)})")
            if int(illustrated.sum()) < ENOUGH_PAGES:
                report.message += (f"; with {plural(int(illustrated.sum()), 'fixed page')} holding pictures the check is "
                                   f"narrow: fix the boxes of {ENOUGH_PAGES} or more and learn again")
            return None
        report.message = (f"learned from {plural(report.trained, 'page')}: {_figures(report)} on the "
                          f"{plural(report.held_out, 'page')} it did not learn from")
        return head_bytes(head)

    def _learn_judge(self, decided: list, weights: bytes | None) -> learn_judge.Outcome:
        """The archive's judge learned from the curator's decisions, measured with the finder `weights` in use
        (None: the shipped one); its outcome, kept or not, with why."""
        from ..pictures import finder

        ready = learn_judge.readiness_of(decided)
        if ready.why_not:
            return learn_judge.Outcome(None, f"kept no judge: {ready.why_not}")
        found = finder.finder_for(weights)
        by_page: dict[tuple, list] = {}
        for d in decided:
            by_page.setdefault((d.doc_id, d.page, d.path), []).append(d)
        self._say(f"measuring your decisions on {plural(len(by_page), 'page')}")
        examples = learn_judge.Examples()
        for index, ((doc_id, page, path), page_decisions) in enumerate(by_page.items()):
            try:
                gray, factor = self._page(path, page)
            except DocumentError as exc:
                self.report.unread.append(f"{Path(path).name} p. {page_number(page)}: {exc}")
                self._advance()
                continue
            dpi = REFERENCE_DPI / factor
            learn_judge.measure_page(examples, index, page_decisions, gray, factor, found.cells(gray, dpi), dpi)
            self._advance()
        outcome = learn_judge.learned(examples, self.manifest.picture_score_min)
        self.report.judge = outcome.figures
        return outcome

    def _judged(self, found, measured: list, grays: dict):
        """The pictures `found` finds on the held-out pages, judged as the recipe judges, with its settings."""
        from ..pictures import finder_train

        held_out = []
        for page in measured:
            gray = grays[page.file]
            held_out.append(finder_train.HeldOut(page, gray, found.cells(gray)))
            self._advance()
        return finder_train.judged(held_out, found.settings)

    def _page(self, path: str, page: int) -> tuple[np.ndarray, float]:
        """The page as ingest reads it, and the factor from its pixels to the manifest's reference pixels."""
        from ..scoring.scorer import page_at_reference

        doc = open_document(path, self.roots)
        try:
            return page_at_reference(doc, page)
        finally:
            doc.close()

    def _find_again(self, untouched: list, action: int, weights: bytes | None, label: str, judge: dict | None) -> None:
        """Each untouched page found again as ingest finds it, with the head `weights` (None: the one in use) and
        the `judge` in use, a document's pages a few at a time, each page's pictures before and after recorded in
        `action`."""
        from ..captions.legend import check_languages, installed_languages
        from .ingest_task import Task, run_task

        languages = check_languages(self.manifest.legend_languages) if installed_languages() else None
        by_doc: dict[tuple[int, str], list[int]] = {}
        for doc_id, page, path in untouched:
            by_doc.setdefault((doc_id, path), []).append(page)
        conn = self.manifest.conn
        for (doc_id, path), numbers in by_doc.items():
            for at in range(0, len(numbers), REFIND_CHUNK):
                chunk = tuple(numbers[at:at + REFIND_CHUNK])
                results = run_task(Task(doc_id, path, chunk, roots=self.roots, legend_languages=languages,
                                        picture_finder=finders.SHIPPED, picture_judge=judge,
                                        finder_weights=weights or finders.weights(conn, finders.current_version(conn))))
                if isinstance(results, Exception):
                    self._advance(len(chunk))
                    continue
                with self.manifest.transaction():
                    still = {row[1] for row in conn.execute(UNTOUCHED_SQL.replace(
                        "ORDER BY", f"AND p.doc_id = {int(doc_id)} ORDER BY"))}  # a curator may have touched one since
                    found = [r for r in results if r.status == "ok" and r.page in still]
                    old = {r.page: history.found_state(conn, doc_id, r.page) for r in found}
                    self.manifest.save_pages(doc_id, found, label)
                    for r in found:
                        history.record(conn, action, history.FOUND_FIELD, old[r.page],
                                       history.found_state(conn, doc_id, r.page), doc_id=doc_id, page=r.page)
                self.report.refound += len(found)
                self._advance(len(chunk))


def _figures(report: LearnReport) -> str:
    b, a = report.before, report.after
    return (f"clean {b['clean']} → {a['clean']}, found {b['found']} → {a['found']} of {a['counted']}, "
            f"wrong {b['wrong']} → {a['wrong']}")


def undo_last(manifest: Manifest) -> dict:
    """Undo the latest "learn from my boxes" not undone yet: the previous finder and pictures back. Returns the undo
    action; raises history.UndoError when there is none."""
    last = history.last_undoable(manifest.conn, None, kinds=("finder",))
    if last is None:
        raise history.UndoError("there is no learned finder to undo")
    return manifest.undo(last["id"])[0]
