"""The picture finder's recipe: compose pages from real material, train its heads, measure it leave one source out.

    python -m curation.pictures.finder_train ../shared/realdata ../shared/boxed            # figures, then the heads
    python -m curation.pictures.finder_train ../shared/realdata ../shared/boxed --no-save  # figures only
    python -m curation.pictures.finder_train ... --folds none                              # the heads only

The first FOLDER is the measure (laid out like ../shared/realdata: `labels.jsonl` with each page's `file`, `dpi`
and `source`, `pictures.jsonl` with every picture boxed by hand); every FOLDER is material. Pages are grouped by
the repository in `source`, across folders (a collection of ../shared/boxed from the same repository as a
source of the measure is the same source).

1. Material: every page at 1024 px on its longer side, its counted boxes pictures and its other boxes left out of
   the loss; the counted pictures cut out at full resolution; photographs beside the measure (`cattle/`) as
   halftones; GENERATED_PICTURES of the generator's engravings (curation.pictures.compose).
2. Pages, for each of the --seeds: every real page as it is and once worn, and as many pages composed from the
   material as the --heads learn from (curation.pictures.compose), each remembering every source it holds
   material of.
3. Lite0's features of every page are computed once (the encoder is frozen) and kept under --cache.
4. For each source of the measure, each seed's heads (HEADS: trained briefly on the real pages and the first
   composed ones, briefly on all of them, and long on all of them) are trained on that seed's pages holding none of
   its material, and all of them together give the cells of that source's pages. The settings that make pictures
   of cells (finder.Settings: SETTINGS_GRID) are chosen for each source on the other sources' cells, and the
   pictures an export writes at the default size from its own cells are judged (curation.pictures.judge): per
   source and pooled, with the mean over sources beside the pooled figure, and each seed's heads alone measured
   the same way. The shipped settings are chosen the same way over every source's cells; the shipped heads are
   trained on every page, and `finder.json` records the data, the recipe, the settings and the figures.

Training is deterministic on a machine: each seed's pages are composed from it, the batches drawn from (seed, step),
torch seeded and on one thread; a run stopped and started again resumes from its last checkpoint (every
CHECKPOINT_EVERY steps) and ends with the same weights as one that was never stopped. The heads are trained --workers
at a time, each in a process of its own on one thread: the same weights for any number of workers, and on two cores
about half the time. Another CPU's kernels round differently, and over thousands of steps the heads drift apart:
compare weights made on one machine.
"""

from __future__ import annotations

import argparse
import copy
import functools
import hashlib
import json
import os
import pathlib
import sys
import time
from dataclasses import asdict, dataclass, field, replace

import cv2
import numpy as np

from ..scoring.pictures import DEFAULT_PICTURE_AREA_MIN
from ..scoring.features import REFERENCE_DPI
from . import compose, finder
from .judge import Tally, judge

# Each seed composes its own pages and trains its own heads; the finder is all of them. One seed: leave one source
# out, three seeds' heads alone and their pairs and all three together (docs/picture-finder.md) gave the same
# figures on average (precision 0.88 / 0.86 / 0.87, recall 0.64 / 0.67 / 0.66), at twice or three times the
# training and a head's cost a page each: joining seeds did not steady what one run's chance moves.
SEEDS = (37,)
MATERIAL_SEED = 37  # the halftones' screens: the same material for every seed
COMPOSED = 1200
STEPS = 1500
# The heads the finder is made of: the composed pages each learns from (the first so many, beside every real page)
# and its steps. Trained apart, they go wrong in different places: a head trained briefly on few composed pages
# marks little beyond what it is sure of, one trained long on many finds more pictures but spills onto the type
# beside them. Their cells are combined (their mean or their least, chosen leave one source out with the other
# settings), so a picture stands where the heads agree.
HEADS = ((200, 400), (COMPOSED, 400), (COMPOSED, STEPS))
BATCH = 16
LEARNING_RATE = 3e-3
POSITIVE_WEIGHT = 2.0  # a picture's cells are the fewer: each counts twice
PADDING_WEIGHT = 0.25  # the paper padding the page to a square teaches little
# The cells a picture's edge runs through, their centres outside it, are taught as paper at this weight. Left out of
# the loss (as they were), the heads' cells spilled past the picture; taught, they stop at its edge. Leave one source
# out, on each of two machines, the finder kept as few or fewer wrong boxes (5 to 5, 8 to 4) and as many or more
# clean ones (19 to 19, 17 to 19); the pictures it found moved with the machine (46 to 49, 45 to 38 of 59).
EDGE_WEIGHT = 1.0
GENERATED_PICTURES = 24
CHECKPOINT_EVERY = 100
GRID = finder.SIDE // finder.STRIDE
# The settings the recipe chooses among, leave one source out: the cells' cutoff, the gutter that parts pictures
# (inches; None: one picture per region of cells) with a part's least size, and the score a picture counts at.
SETTINGS_GRID = [finder.Settings(cell, gutter, part, score, combine)
                 for cell in (0.4, 0.5, 0.6)
                 for gutter, part in ((None, 0.2), (0.05, 0.2), (0.08, 0.2), (0.08, 0.5), (0.12, 0.2))
                 for score in (0.5, 0.9, 0.97)
                 for combine in ("mean", "min")]
ROOT = pathlib.Path(__file__).resolve().parents[2]
DEFAULT_CACHE = ROOT / "bench" / "out" / "finder"


@dataclass
class Measured:
    """A page of the measure: its file, source, width over height, hand-drawn boxes and label."""

    file: pathlib.Path
    dpi: float
    source: str
    aspect: float
    labelled: list[dict]
    illustrated: bool


@dataclass
class Pages:
    """The training pages as the head reads them: Lite0's features, each cell's target and weight, and the
    sources each page holds material of."""

    fine: np.ndarray  # (N, 40, 64, 64) float16
    deep: np.ndarray  # (N, 112, 32, 32) float16
    target: np.ndarray  # (N, 64, 64) uint8
    weight: np.ndarray  # (N, 64, 64) float16
    sources: list[list[str]]


def repository(source: str) -> str:
    return source.split("@")[0]


def read_labels(folder: pathlib.Path) -> list[tuple[dict, list[dict]]]:
    labels = [json.loads(line) for line in (folder / "labels.jsonl").read_text().splitlines() if line.strip()]
    boxed = {json.loads(line)["file"]: json.loads(line)["pictures"]
             for line in (folder / "pictures.jsonl").read_text().splitlines() if line.strip()}
    return [(label, boxed[label["file"]]) for label in labels if label["file"] in boxed]


def material(folders: list[pathlib.Path], progress=None) -> tuple[list[compose.Sheet], list[compose.Material]]:
    """Every boxed page of `folders` as a sheet, and every counted picture on them as material, with the
    photographs beside the measure as halftones and the generator's engravings."""
    sheets, pictures = [], []
    rng = np.random.default_rng(MATERIAL_SEED)
    for folder in folders:
        for label, labelled in read_labels(folder):
            gray = cv2.imread(str(folder / "pages" / label["file"]), cv2.IMREAD_GRAYSCALE)
            boxes = [(tuple(p["box"]), compose.COUNTED if p["counts"] else compose.IGNORED) for p in labelled]
            source = repository(label["source"])
            sheets.append(compose.Sheet(compose.at_work_side(gray), boxes, source, label["file"]))
            pictures += compose.cut_pictures(gray, boxes, source)
            if progress:
                progress(f"material: {len(sheets)} pages, {len(pictures)} pictures")
        for photo in sorted((folder / "cattle").glob("*.jpg")) if (folder / "cattle").is_dir() else []:
            gray = cv2.imread(str(photo), cv2.IMREAD_GRAYSCALE)
            if gray is not None:
                pictures.append(compose.Material(compose.halftone(gray, rng), "photographs"))
    pictures += [compose.Material(compose.engraving(90_000 + i), "generated") for i in range(GENERATED_PICTURES)]
    return sheets, pictures


def training_pages(sheets: list[compose.Sheet], pictures: list[compose.Material], composed: int,
                   seed: int) -> list[compose.Composed]:
    """Every sheet as it is and once worn, then `composed` composed pages: all made from `seed`."""
    rng = np.random.default_rng(seed)
    pages = [compose.Composed(s.gray, list(s.boxes), {s.source}) for s in sheets]
    for sheet in sheets:
        gray, boxes = compose._worn(sheet.gray.copy(), list(sheet.boxes), sheets, rng)
        pages.append(compose.Composed(gray, boxes, {sheet.source}))
    pages += [compose.compose(rng, sheets, pictures) for _ in range(composed)]
    return pages


def targets(page: compose.Composed) -> tuple[np.ndarray, np.ndarray]:
    """Each cell's target (1 on a picture) and weight (0 where it teaches nothing: on a box left out) over the
    square the page is padded to. The cells around a picture's are its edge: paper, at EDGE_WEIGHT."""
    h, w = page.gray.shape
    scale = finder.SIDE / max(h, w)
    cols, rows = w * scale / finder.STRIDE, h * scale / finder.STRIDE  # the page's extent in cells
    target = np.zeros((GRID, GRID), np.uint8)
    weight = np.full((GRID, GRID), PADDING_WEIGHT, np.float32)
    weight[:int(np.ceil(rows)), :int(np.ceil(cols))] = 1.0
    centre = np.arange(GRID) + 0.5
    for (x0, y0, x1, y1), kind in page.boxes:
        cx0, cx1, cy0, cy1 = x0 * cols, x1 * cols, y0 * rows, y1 * rows
        touched = np.s_[max(0, int(cy0)):min(GRID, int(np.ceil(cy1))), max(0, int(cx0)):min(GRID, int(np.ceil(cx1)))]
        if kind == compose.IGNORED:
            weight[touched] = 0.0
            continue
        inside = ((centre[:, None] > cy0) & (centre[:, None] < cy1)) & ((centre[None, :] > cx0) & (centre[None, :] < cx1))
        weight[touched] = 0.0
        weight[inside] = 1.0
        target[inside] = 1
    # Found on the cells, not the boxes: a cell beside a picture's, in a box left out, is taught as paper too.
    edge = (cv2.dilate(target, np.ones((3, 3), np.uint8)) > 0) & (target == 0) & (weight == 0)
    weight[edge] = EDGE_WEIGHT
    return target, weight


def encode(pages: list[compose.Composed], cache: pathlib.Path, key: str, progress=None) -> Pages:
    """Lite0's features of every page, computed once and kept in `cache` under `key`."""
    import torch

    from .finder_network import encoder

    folder = cache / key
    names = ("fine", "deep", "target", "weight")
    if (folder / "sources.json").exists():
        arrays = [np.load(folder / f"{name}.npy", mmap_mode="r") for name in names]
        return Pages(*arrays, json.loads((folder / "sources.json").read_text()))
    folder.mkdir(parents=True, exist_ok=True)
    n = len(pages)
    fine = np.lib.format.open_memmap(folder / "fine.npy.part", "w+", np.float16, (n, 40, GRID, GRID))
    deep = np.lib.format.open_memmap(folder / "deep.npy.part", "w+", np.float16, (n, 112, GRID // 2, GRID // 2))
    target, weight = np.zeros((n, GRID, GRID), np.uint8), np.zeros((n, GRID, GRID), np.float16)
    network = encoder()
    with torch.inference_mode():
        for i, page in enumerate(pages):
            pixels = np.full((finder.SIDE, finder.SIDE), (finder.PAPER - 127.0) / 128.0, np.float32)
            x = finder.network_input(page.gray)
            pixels[:x.shape[0], :x.shape[1]] = x[:finder.SIDE, :finder.SIDE]
            f, d = network(torch.from_numpy(pixels)[None, None])
            fine[i], deep[i] = f[0].numpy(), d[0].numpy()
            target[i], weight[i] = targets(page)
            if progress and (i % 50 == 0 or i == n - 1):
                progress(f"features: {i + 1} of {n} pages")
    fine.flush(), deep.flush()
    del fine, deep
    for name in ("fine", "deep"):
        (folder / f"{name}.npy.part").rename(folder / f"{name}.npy")
    np.save(folder / "target.npy", target)
    np.save(folder / "weight.npy", weight)
    (folder / "sources.json").write_text(json.dumps([sorted(p.sources) for p in pages]))
    return encode(pages, cache, key)


def train_head(pages: Pages, chosen: np.ndarray, steps: int = STEPS, seed: int = SEEDS[0],
               checkpoint: pathlib.Path | None = None, progress=None, stop_after: int | None = None,
               checkpoint_every: int = CHECKPOINT_EVERY, start=None, learning_rate: float = LEARNING_RATE,
               each_step=None):
    """A head trained on the pages `chosen` (indices): deterministic from `seed`; resumed from `checkpoint`
    where one was left. `stop_after`: stop (as a kill would) after that many steps of this call. `start`: a head
    to fine-tune (left as it is; default: a new one). `each_step(steps done)` hears every step end."""
    import torch

    from .finder_network import Head

    torch.manual_seed(seed)
    head = Head() if start is None else copy.deepcopy(start).cpu()
    optimiser = torch.optim.Adam(head.parameters(), lr=learning_rate)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimiser, steps)
    start = 0
    if checkpoint is not None and checkpoint.exists():
        saved = torch.load(checkpoint, weights_only=True)
        head.load_state_dict(saved["head"])
        optimiser.load_state_dict(saved["optimiser"])
        schedule.load_state_dict(saved["schedule"])
        start = int(saved["step"])
    positive = torch.tensor(POSITIVE_WEIGHT)
    head.train()
    for step in range(start, steps):
        if stop_after is not None and step - start >= stop_after:
            return head
        batch = np.sort(np.random.default_rng((seed, step)).choice(chosen, min(BATCH, len(chosen)), replace=False))
        fine = torch.from_numpy(np.asarray(pages.fine[batch], np.float32))
        deep = torch.from_numpy(np.asarray(pages.deep[batch], np.float32))
        target = torch.from_numpy(np.asarray(pages.target[batch], np.float32))
        weight = torch.from_numpy(np.asarray(pages.weight[batch], np.float32))
        logits = head(fine, deep)
        if logits.ndim == 4:  # several heads, each learning the same targets
            target, weight = (t[:, None].expand_as(logits) for t in (target, weight))
        loss = torch.nn.functional.binary_cross_entropy_with_logits(
            logits, target, weight=weight * (1 + (positive - 1) * target), reduction="sum") / weight.sum().clamp(min=1)
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        schedule.step()
        if checkpoint is not None and ((step + 1) % checkpoint_every == 0 or step + 1 == steps):
            torch.save({"head": head.state_dict(), "optimiser": optimiser.state_dict(),
                        "schedule": schedule.state_dict(), "step": step + 1}, checkpoint.with_suffix(".part"))
            checkpoint.with_suffix(".part").replace(checkpoint)
        if each_step:
            each_step(step + 1)
        if progress and (step + 1) % 250 == 0:
            progress(f"step {step + 1} of {steps}: loss {loss.item():.4f}")
    head.eval()
    return head


def measured_pages(folder: pathlib.Path) -> list[Measured]:
    pages = []
    for label, labelled in read_labels(folder):
        with open(folder / "pages" / label["file"], "rb") as f:
            from PIL import Image

            width, height = Image.open(f).size
        pages.append(Measured(folder / "pages" / label["file"], float(label["dpi"]), repository(label["source"]),
                              width / height, labelled, bool(label["has_illustration"])))
    return pages


def at_reference(page: Measured) -> np.ndarray:
    """The page at 144 dpi, as ingest reads it."""
    from .train import at_reference as brought

    return brought(cv2.imread(str(page.file), cv2.IMREAD_GRAYSCALE), page.dpi)


@dataclass
class HeldOut:
    """A page of the measure as the finder saw it: at ingest's resolution, with the cells of a head trained on
    pages holding none of its source's material."""

    page: Measured
    gray: np.ndarray
    cells: np.ndarray
    found: dict = field(default_factory=dict)  # the pictures by the settings that make them (the score aside)

    def pictures(self, settings: finder.Settings) -> list[finder.FoundPicture]:
        making = replace(settings, score_cutoff=0.0)
        if making not in self.found:
            self.found[making] = finder.pictures_from_cells(self.cells, self.gray, REFERENCE_DPI, settings)
        return self.found[making]


def judged(held_out: list[HeldOut], settings: finder.Settings) -> Tally:
    """The pictures an export writes at the picture rule's default size (those of at least that size, scored at
    least the settings' score cutoff) made from each page's cells with `settings`, judged; each page kept when it
    holds one."""
    total = Tally()
    for seen in held_out:
        h, w = seen.gray.shape
        pictures = [p for p in seen.pictures(settings)
                    if p.score >= settings.score_cutoff and p.area >= DEFAULT_PICTURE_AREA_MIN]
        boxes = [(p.box[0] / w, p.box[1] / h, p.box[2] / w, p.box[3] / h) for p in pictures]
        total.add(judge(boxes, seen.page.labelled, seen.page.aspect))
        total.add_page(bool(pictures), seen.page.illustrated)
    return total


def choose_settings(held_out: list[HeldOut]) -> finder.Settings:
    """The settings (SETTINGS_GRID) with the best mean of picture precision, recall and clean share on these pages
    (the issue's three figures, weighed alike); the first of equals is kept."""
    def merit(settings: finder.Settings) -> float:
        t = judged(held_out, settings)
        return float(np.mean([np.nan_to_num(v) for v in (t.precision, t.recall, t.clean_share)]))

    return max(SETTINGS_GRID, key=merit)


@dataclass
class Run:
    """One seed's training pages, kept (features, targets, sources) in `folder`, its heads checkpointed under it."""

    seed: int
    folder: pathlib.Path
    pages: Pages

    @property
    def checkpoints(self) -> pathlib.Path:
        return self.folder / "heads"


def runs_of(folders: list[pathlib.Path], seeds: tuple[int, ...], composed: int, cache: pathlib.Path = DEFAULT_CACHE,
            made_of: tuple | None = None, progress=None) -> list[Run]:
    """For each seed, the pages it composes from `folders` (every real page, then `composed` composed ones) with
    their features, from `cache` where they were made before. `made_of`: the folders' material, where it was read."""
    runs = []
    for seed in seeds:
        key = data_key(folders, composed, seed)
        if progress:
            progress(f"seed {seed}: cache {cache / key}")
        made = []
        if not (cache / key / "sources.json").exists():
            made_of = made_of or material(folders)
            made = training_pages(*made_of, composed, seed)
        pages = encode(made, cache, key, progress)
        del made
        (cache / key / "heads").mkdir(parents=True, exist_ok=True)
        runs.append(Run(seed, cache / key, pages))
    return runs


@dataclass
class HeadJob:
    """A head to train: from `seed`, `steps` steps on the pages `chosen` of the run kept in `folder`."""

    folder: pathlib.Path
    chosen: np.ndarray
    steps: int
    seed: int
    checkpoint: pathlib.Path


def head_jobs(runs: list[Run], heads: tuple, composed: int, name: str, leaving_out: str | None = None) -> list[HeadJob]:
    """The finder's heads as jobs: for each run, `heads` (each one's composed pages and steps, as HEADS) from its seed
    on its pages holding none of `leaving_out`'s material (all of them where None), checkpointed as `name`."""
    jobs = []
    for run in runs:
        chosen = np.array([i for i, held in enumerate(run.pages.sources) if leaving_out not in held])
        real = len(run.pages.sources) - composed
        jobs += [HeadJob(run.folder, chosen[chosen < real + within], steps, run.seed,
                         run.checkpoints / f"{name}-{within}x{steps}.pt") for within, steps in heads]
    return jobs


def trained_heads(runs: list[Run], heads: tuple, composed: int, name: str, leaving_out: str | None = None,
                  progress=None):
    """The finder's heads (head_jobs) together, trained here where train_all has not trained them already."""
    from .finder_network import heads_of

    pages = {run.folder: run.pages for run in runs}
    return heads_of([train_head(pages[job.folder], job.chosen, job.steps, job.seed, job.checkpoint, progress)
                     for job in head_jobs(runs, heads, composed, name, leaving_out)])


def train_all(jobs: list[HeadJob], workers: int, progress=None) -> None:
    """Train every job's head to its checkpoint, `workers` at a time, each in a process of its own on one thread:
    the same weights as one after the other here, in about 1 / `workers` of the time where there are as many cores.
    The longest first, so that the last to finish is short."""
    from concurrent.futures import ProcessPoolExecutor, as_completed
    from multiprocessing import get_context

    from guards.lifeline import die_with_parent

    if workers <= 1:
        return  # trained_heads trains each where it is needed
    order = sorted(jobs, key=lambda job: -job.steps)
    started = time.perf_counter()
    with ProcessPoolExecutor(workers, mp_context=get_context("spawn"), initializer=die_with_parent) as pool:
        futures = {pool.submit(_train_job, job): job for job in order}
        for done, future in enumerate(as_completed(futures), 1):
            future.result()
            if progress:
                job = futures[future]
                progress(f"seed {job.seed}, {job.checkpoint.stem}: {done} of {len(order)} heads trained, {workers} at "
                         f"a time, {time.perf_counter() - started:.0f} s")


def _train_job(job: HeadJob) -> None:
    import torch

    torch.set_num_threads(1)
    train_head(_pages_in(job.folder), job.chosen, job.steps, job.seed, job.checkpoint)


@functools.cache
def _pages_in(folder: pathlib.Path) -> Pages:
    return encode([], folder.parent, folder.name)


def fold_jobs(runs: list[Run], measure: list[Measured], heads: tuple, composed: int) -> list[HeadJob]:
    """The heads of every fold: for each source of the measure, trained on the pages holding none of its material."""
    return [job for source in sorted({p.source for p in measure})
            for job in head_jobs(runs, heads, composed, _slug(source), leaving_out=source)]


def held_out_cells(runs: list[Run], measure: list[Measured], heads: tuple, composed: int,
                   progress=None, workers: int = 1) -> list[HeldOut]:
    """Every page of the measure with the cells of heads trained on the pages holding none of its source's
    material (each run's heads in turn), `workers` heads trained at a time."""
    train_all(fold_jobs(runs, measure, heads, composed), workers, progress)
    seen, found = [], None
    for source in sorted({p.source for p in measure}):
        started = time.perf_counter()
        head = trained_heads(runs, heads, composed, _slug(source), leaving_out=source)
        if found is None:
            found = finder.Finder.with_head(head)
        found.network.head = head.to(found.network.device)
        for page in (p for p in measure if p.source == source):
            gray = at_reference(page)
            seen.append(HeldOut(page, gray, found.cells(gray)))
        if progress:
            progress(f"{source}: {len(head.members)} heads, {time.perf_counter() - started:.0f} s")
    return seen


def heads_of_run(held_out: list[HeldOut], run: int, count: int) -> list[HeldOut]:
    """The held-out pages with the cells of one run's heads alone (the `run`th of runs of `count` heads each)."""
    return [HeldOut(seen.page, seen.gray, seen.cells[run * count:(run + 1) * count]) for seen in held_out]


def leave_one_source_out(held_out: list[HeldOut]) -> dict[str, tuple[Tally, finder.Settings]]:
    """For each source: its pictures judged, found with the settings chosen on the other sources' held-out cells,
    and those settings."""
    results = {}
    for source in sorted({s.page.source for s in held_out}):
        settings = choose_settings([s for s in held_out if s.page.source != source])
        results[source] = (judged([s for s in held_out if s.page.source == source], settings), settings)
    return results


def table(results: dict[str, tuple[Tally, finder.Settings]]) -> tuple[list[str], Tally, dict]:
    lines, pooled = [], Tally()
    for source, (t, settings) in results.items():
        pooled += t
        lines.append(f"  {source[:46]:46s} {t.line()}\n  {'':46s} with {settings_text(settings)}")
    mean = {name: float(np.nanmean([getattr(t, name) for t, _ in results.values()]))
            for name in ("precision", "recall", "clean_share", "page_precision", "page_recall")}
    lines.append(f"  {'pooled':46s} {pooled.line()}")
    lines.append(f"  {'mean over sources':46s} precision {mean['precision']:.2f} recall {mean['recall']:.2f} "
                 f"clean {mean['clean_share']:.2f} pages {mean['page_precision']:.2f} / {mean['page_recall']:.2f}")
    return lines, pooled, mean


def settings_text(settings: finder.Settings) -> str:
    gutter = f"gutter {settings.gutter:g} in, parts of {settings.part_min:g} sq in" if settings.gutter else "no gutter"
    return (f"cells at {settings.cell_cutoff:g} (the heads' {settings.combine}), {gutter}, pictures scored at least "
            f"{settings.score_cutoff:g}")


def figures(t: Tally) -> dict:
    return {"precision": _round(t.precision), "recall": _round(t.recall), "clean_share": _round(t.clean_share),
            "right": t.right, "wrong": t.wrong, "neither": t.neither, "clean": t.clean, "found": t.found,
            "counted": t.counted, "page_precision": _round(t.page_precision), "page_recall": _round(t.page_recall)}


def on_average(pooled: list[dict]) -> dict:
    """The mean of several seeds' pooled figures (as `figures` gives them), with their least and most: what one run
    of the recipe is to be expected to give, and how far its chance moves it."""
    names = ("precision", "recall", "clean_share", "page_precision", "page_recall")
    return {name: {"mean": _round(np.nanmean([np.nan if p[name] is None else p[name] for p in pooled])),
                   "least": min((p[name] for p in pooled if p[name] is not None), default=None),
                   "most": max((p[name] for p in pooled if p[name] is not None), default=None)}
            for name in names}


def average_text(average: dict) -> str:
    def one(name: str) -> str:
        figure = average[name]
        return "-" if figure["mean"] is None else f"{figure['mean']:.2f} ({figure['least']:.2f} - {figure['most']:.2f})"

    return (f"precision {one('precision')}  recall {one('recall')}  clean {one('clean_share')}; pages precision "
            f"{one('page_precision')} recall {one('page_recall')}")


def _round(value: float) -> float | None:
    return None if value is None or np.isnan(value) else round(float(value), 3)


def _slug(source: str) -> str:
    return source.replace("/", "__")


def data_key(folders: list[pathlib.Path], composed: int, seed: int) -> str:
    """What the cached features were made of: the folders' labels, the composition's code and its settings."""
    digest = hashlib.sha256()
    for folder in folders:
        digest.update((folder / "labels.jsonl").read_bytes() + (folder / "pictures.jsonl").read_bytes())
    import inspect

    from . import finder_network

    digest.update((pathlib.Path(__file__).parent / "compose.py").read_bytes())
    digest.update(inspect.getsource(finder.network_input).encode() + inspect.getsource(finder_network.encoder).encode()
                  + inspect.getsource(targets).encode())
    digest.update(f"{composed} {seed} {GENERATED_PICTURES} {finder.SIDE} {finder_network.TAPS} {EDGE_WEIGHT}".encode())
    return digest.hexdigest()[:16]


def heads_option(text: str) -> tuple[tuple[int, int], ...]:
    """--heads: "200:400,1200:1500"."""
    try:
        heads = tuple(tuple(int(n) for n in head.split(":")) for head in text.split(","))
    except ValueError:
        heads = ()
    if not heads or any(len(head) != 2 or min(head) < 0 for head in heads):
        raise argparse.ArgumentTypeError(f"heads are N:STEPS,N:STEPS (composed pages and steps), not {text!r}")
    return heads


def seeds_option(text: str) -> tuple[int, ...]:
    """--seeds: "37,38"."""
    try:
        seeds = tuple(int(seed) for seed in text.split(","))
    except ValueError:
        seeds = ()
    if not seeds or len(set(seeds)) != len(seeds):
        raise argparse.ArgumentTypeError(f"seeds are SEED,SEED (different whole numbers), not {text!r}")
    return seeds


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m curation.pictures.finder_train", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folders", nargs="+", type=pathlib.Path, help="the measure first, then more material")
    parser.add_argument("--heads", type=heads_option, default=HEADS, metavar="N:STEPS,...",
                        help="the heads: the composed pages each learns from (the first N) and its training steps "
                             f"(default {','.join(f'{n}:{k}' for n, k in HEADS)})")
    parser.add_argument("--seeds", type=seeds_option, default=SEEDS, metavar="SEED,...",
                        help="each seed composes its pages and trains its heads; the finder is all of them "
                             f"(default {','.join(map(str, SEEDS))})")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1,
                        help="heads trained at a time, each in a process of its own on one thread (the same weights "
                             "for any number; default: one a core)")
    parser.add_argument("--folds", choices=("all", "none"), default="all", help="none: train the shipped heads only")
    parser.add_argument("--cache", type=pathlib.Path, default=DEFAULT_CACHE, help="features and checkpoints")
    parser.add_argument("--no-save", action="store_true", help="figures only; the shipped head is left as it is")
    args = parser.parse_args(argv)

    import torch

    # One thread: the same sums in the same order on every run of a machine, and no threads spinning against each
    # other on a busy two-core machine (a second thread made the features four times slower there).
    torch.set_num_threads(1)

    def say(message: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)

    started = time.perf_counter()
    composed = max(within for within, _ in args.heads)
    made_of = material(args.folders)
    say(f"material: {len(made_of[0])} pages, {len(made_of[1])} pictures")
    cached = all((args.cache / data_key(args.folders, composed, seed) / "sources.json").exists() for seed in args.seeds)
    runs = runs_of(args.folders, args.seeds, composed, args.cache, made_of, say)
    say(f"{len(runs[0].pages.sources)} training pages a seed")
    measure = measured_pages(args.folders[0])
    record = {"seeds": list(args.seeds), "heads": [{"composed": n, "steps": k} for n, k in args.heads],
              "batch": BATCH, "composed": composed, "training_pages": len(runs[0].pages.sources),
              "material_pages": len(made_of[0]), "pictures": len(made_of[1]),
              "folders": [str(f) for f in args.folders], "input_side": finder.SIDE}
    jobs = fold_jobs(runs, measure, args.heads, composed) if args.folds == "all" else []
    train_all(jobs + ([] if args.no_save else head_jobs(runs, args.heads, composed, "all")), args.workers, say)
    if args.folds == "all":
        held_out = held_out_cells(runs, measure, args.heads, composed, say)
        results = leave_one_source_out(held_out)
        lines, pooled, mean = table(results)
        print("pictures found by the finder at the default size, leave one source out (trained on pages holding none "
              "of the source's material, settings chosen on the other sources):")
        print("\n".join(lines))
        record["leave_one_source_out"] = {source: dict(figures(t), settings=asdict(chosen))
                                          for source, (t, chosen) in results.items()}
        record["pooled"], record["mean_over_sources"] = figures(pooled), {k: round(v, 3) for k, v in mean.items()}
        if len(runs) > 1:  # what each seed's heads do alone, measured the same way
            record["each_seed"] = {}
            for n, run in enumerate(runs):
                _, alone, alone_mean = table(leave_one_source_out(heads_of_run(held_out, n, len(args.heads))))
                record["each_seed"][str(run.seed)] = {
                    "pooled": figures(alone), "mean_over_sources": {k: round(v, 3) for k, v in alone_mean.items()}}
                print(f"  {'seed ' + str(run.seed) + ' alone, pooled':46s} {alone.line()}")
            record["one_seed_on_average"] = on_average([seed["pooled"] for seed in record["each_seed"].values()])
            print(f"  {'one seed, on average (least - most)':46s} {average_text(record['one_seed_on_average'])}")
        settings = choose_settings(held_out)
        record["settings"] = asdict(settings)
        record["settings_chosen_by"] = ("the best mean of picture precision, recall and clean share over every "
                                        "source's held-out cells")
        say(f"settings: {settings_text(settings)}")
    else:
        record["settings"] = asdict(finder.shipped_settings())  # the heads alone: the settings stay as chosen
    if not args.no_save:
        head = trained_heads(runs, args.heads, composed, "all", progress=say)
        from .finder_network import save_head

        save_head(head, finder.WEIGHTS_FILE)
        record["seconds"], record["features_from_cache"] = round(time.perf_counter() - started), cached
        finder.RECORD_FILE.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
        say(f"wrote {finder.WEIGHTS_FILE.name} ({finder.WEIGHTS_FILE.stat().st_size // 1024} kB) and {finder.RECORD_FILE.name}")


if __name__ == "__main__":
    main()
