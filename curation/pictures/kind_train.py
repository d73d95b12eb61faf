"""The kind suggestion's recipe: train the model (curation.pictures.kind) on boxed real pictures and measure it
leave one source out.

    python -m curation.pictures.kind_train ../shared/realdata --extra ../shared/boxed   # figures, then the model
    python -m curation.pictures.kind_train ../shared/realdata --no-save                 # figures only

FOLDER is laid out like ../shared/realdata: `labels.jsonl` (each page's `file`, `dpi` and `source`) and
`pictures.jsonl` (every picture boxed by hand with its `kind`). Each picture whose kind is one the app knows
(curation.pictures.kind.KINDS) is cut from its page at 144 dpi gray, as ingest cuts it, fitted to the
network's input and embedded (cached under --cache). `--extra` folders (../shared/boxed) are training material
only: always learned from, never measured.

Every figure is leave one source out: for each source of FOLDER, the model is trained on the other sources
(and the extra folders), its cutoff chosen on them (each of their pictures given probabilities by a model that
did not see its own source; the cutoff that makes the most right suggestions less wrong ones), and the counted
pictures of the held-out source are judged: right, wrong, or unsure (no suggestion). A kind found in one source
only cannot be suggested right when that source is held out: the figures say how many pictures each kind has
where. The shipped model is trained on every picture, its cutoff chosen the same way over every source.
Training is deterministic (lbfgs from zero, no sampling): the same pictures give the same model.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import pathlib
import sys
from dataclasses import dataclass, field

import cv2
import numpy as np

from .embedding import fit_on_paper
from .kind import INPUTS, KIND_FILE, KINDS, LOOKS, RECIPE_FILE, KindModel, look_measures
from .train import at_reference

REGULARISATION = {"look": 0.01, "look+embedding": 0.01}  # LogisticRegression's C: a few dozen pictures a source
SHIPPED_INPUTS = "look"  # leave one source out, the embedding made it worse (kind.json: every input's figures)
CUTOFFS = np.round(np.arange(0.3, 1.0, 0.05), 2)


@dataclass
class Example:
    file: str
    source: str
    kind: str
    counts: bool
    measured: bool  # from the measured folder (not an --extra one)
    pixels: np.ndarray  # the network's input (embedding.fit_on_paper of the crop)
    vector: np.ndarray | None = None  # its embedding
    looks: np.ndarray | None = field(init=False, default=None)  # its look measures (kind.look_measures)

    def __post_init__(self):
        self.looks = look_measures(self.pixels)
        if self.looks is None:  # a blank crop: at runtime never suggested; here its measures are its paper's
            self.looks = np.zeros(len(LOOKS))


def read_examples(folder: pathlib.Path, measured: bool = True) -> list[Example]:
    """Every boxed picture of `folder` whose kind is one of KINDS, cut as ingest cuts it."""
    labels = {json.loads(line)["file"]: json.loads(line)
              for line in (folder / "labels.jsonl").read_text().splitlines() if line.strip()}
    examples = []
    for line in (folder / "pictures.jsonl").read_text().splitlines():
        if not line.strip():
            continue
        page = json.loads(line)
        pictures = [p for p in page["pictures"] if p["kind"] in KINDS]
        if not pictures or page["file"] not in labels:
            continue
        label = labels[page["file"]]
        gray = at_reference(cv2.imread(str(folder / "pages" / page["file"]), cv2.IMREAD_GRAYSCALE), label["dpi"])
        height, width = gray.shape
        for picture in pictures:
            x0, y0, x1, y1 = picture["box"]
            crop = gray[round(y0 * height):max(round(y1 * height), round(y0 * height) + 1),
                        round(x0 * width):max(round(x1 * width), round(x0 * width) + 1)]
            examples.append(Example(page["file"], label["source"].split("@")[0], picture["kind"],
                                    bool(picture.get("counts")), measured, fit_on_paper(crop)))
    return examples


def embed_examples(examples: list[Example], cache: pathlib.Path | None) -> None:
    """Each example's embedding (embedding.embed_inputs), kept in `cache` under its input's pixels."""
    from . import embedding

    keys = [hashlib.sha256(e.pixels.tobytes()).hexdigest()[:20] for e in examples]
    stored = cache / "kind_embeddings.npz" if cache else None
    known = dict(np.load(stored)) if stored and stored.exists() else {}
    todo = [i for i, key in enumerate(keys) if key not in known]
    if todo:
        for i, vector in zip(todo, embedding.embed_inputs([examples[i].pixels for i in todo])):
            known[keys[i]] = vector
        if stored:
            cache.mkdir(parents=True, exist_ok=True)
            np.savez_compressed(stored, **known)
    for example, key in zip(examples, keys):
        example.vector = known[key]


def rows(examples: list[Example], inputs: str) -> np.ndarray:
    looks = np.array([e.looks for e in examples], np.float64).reshape(-1, len(LOOKS))
    if inputs == "look":
        return looks
    return np.hstack([looks, np.array([e.vector for e in examples], np.float64)])


def fit(examples: list[Example], inputs: str, cutoff: float = 0.0) -> KindModel:
    """A model of the kinds `examples` show (a kind none of them shows is never suggested)."""
    from sklearn.linear_model import LogisticRegression

    x, kinds = rows(examples, inputs), np.array([e.kind for e in examples])
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale < 1e-9] = 1.0
    classes = sorted(set(kinds))
    if len(classes) == 1:  # one kind to learn: always it, as sure as the cutoff allows
        zeros = np.zeros((1, x.shape[1]))
        return KindModel(tuple(classes), mean, scale, zeros, np.zeros(1), cutoff, inputs)
    model = LogisticRegression(C=REGULARISATION[inputs], class_weight="balanced", max_iter=5000)
    model.fit((x - mean) / scale, kinds)
    coef, intercept = model.coef_, model.intercept_
    if len(classes) == 2:  # scikit-learn keeps one row for two classes: the second's log-odds
        coef, intercept = np.vstack([-coef / 2, coef / 2]), np.array([-intercept[0] / 2, intercept[0] / 2])
    return KindModel(tuple(str(c) for c in model.classes_), mean, scale, coef, intercept, cutoff, inputs)


@dataclass
class Tally:
    right: int = 0
    wrong: int = 0
    unsure: int = 0
    top_right: int = 0  # right as the best kind, whatever its probability (no cutoff)
    mistakes: dict[str, int] = field(default_factory=dict)  # "kind as suggested": how often

    @property
    def counted(self) -> int:
        return self.right + self.wrong + self.unsure

    def add(self, other: "Tally") -> None:
        self.right, self.wrong, self.unsure = self.right + other.right, self.wrong + other.wrong, self.unsure + other.unsure
        self.top_right += other.top_right
        for what, n in other.mistakes.items():
            self.mistakes[what] = self.mistakes.get(what, 0) + n

    def share(self) -> float:
        return self.right / self.counted if self.counted else float("nan")

    def line(self) -> str:
        return (f"right {self.share():4.0%} ({self.right}/{self.counted}), wrong {self.wrong}, unsure {self.unsure}; "
                f"best kind without a cutoff right {self.top_right}/{self.counted}")


def judged(model: KindModel, examples: list[Example]) -> Tally:
    """The counted pictures of `examples` as `model` suggests their kinds."""
    counted = [e for e in examples if e.counts]
    tally = Tally()
    if not counted:
        return tally
    chances = model.probabilities(rows(counted, model.inputs))
    for example, row in zip(counted, chances):
        best = model.classes[int(row.argmax())]
        tally.top_right += best == example.kind
        if row.max() < model.cutoff:
            tally.unsure += 1
        elif best == example.kind:
            tally.right += 1
        else:
            tally.wrong += 1
            what = f"{example.kind} as {best}"
            tally.mistakes[what] = tally.mistakes.get(what, 0) + 1
    return tally


def sources(examples: list[Example]) -> list[str]:
    return sorted({e.source for e in examples if e.measured})


def best_cutoff(examples: list[Example], inputs: str) -> float:
    """The cutoff that makes the most right suggestions less wrong ones over the measured sources of
    `examples`, each source's pictures judged by a model trained without it; the lowest of equals."""
    held_out = []
    for source in sources(examples):
        model = fit([e for e in examples if e.source != source], inputs)
        mine = [e for e in examples if e.source == source and e.counts]
        if mine:
            chances = model.probabilities(rows(mine, inputs))
            held_out += [(float(row.max()), model.classes[int(row.argmax())] == e.kind) for e, row in zip(mine, chances)]
    if not held_out:
        return float(CUTOFFS[-1])
    return float(max(CUTOFFS, key=lambda c: (sum(1 if ok else -1 for p, ok in held_out if p >= c), -c)))


def leave_one_source_out(examples: list[Example], inputs: str) -> dict[str, tuple[Tally, float]]:
    """For each measured source: its counted pictures judged by a model trained, and its cutoff chosen, on the
    other sources (and the extra folders); with that cutoff."""
    results = {}
    for source in sources(examples):
        others = [e for e in examples if e.source != source]
        cutoff = best_cutoff(others, inputs)
        results[source] = (judged(fit(others, inputs, cutoff), [e for e in examples if e.source == source]), cutoff)
    return results


def table(results: dict[str, tuple[Tally, float]]) -> tuple[list[str], Tally, float]:
    """A line per source, the pooled line and the mean of the sources' right shares."""
    lines, pooled = [], Tally()
    shares = []
    for source, (tally, cutoff) in results.items():
        if not tally.counted:
            continue
        pooled.add(tally)
        shares.append(tally.share())
        lines.append(f"  {source[:44]:44s} cutoff {cutoff:4.2f}  {tally.line()}")
    mean = float(np.mean(shares)) if shares else float("nan")
    lines.append(f"  {'pooled':44s} {'':12s} {pooled.line()}")
    lines.append(f"  {'mean over sources':44s} {'':12s} right {mean:4.0%}")
    if pooled.mistakes:
        lines.append("  wrong suggestions: " + ", ".join(f"{what} {n}" for what, n in
                                                          sorted(pooled.mistakes.items(), key=lambda kv: -kv[1])))
    return lines, pooled, mean


def kinds_by_source(examples: list[Example]) -> dict[str, dict[str, int]]:
    """How many counted pictures of each kind each measured source holds (and the extra folders, together)."""
    counts: dict[str, dict[str, int]] = {}
    for e in examples:
        if e.counts:
            where = counts.setdefault(e.kind, {})
            name = e.source if e.measured else "(extra, training only)"
            where[name] = where.get(name, 0) + 1
    return counts


def read_all(folder: pathlib.Path, extra: list[pathlib.Path], cache: pathlib.Path | None,
             embed: bool = True) -> list[Example]:
    examples = read_examples(folder) + [e for f in extra for e in read_examples(f, measured=False)]
    if embed:
        embed_examples(examples, cache)
    return examples


def report(examples: list[Example], inputs_tried: tuple[str, ...] = INPUTS) -> dict[str, tuple]:
    """Print the kinds each source holds and every input's leave-one-source-out figures; return them."""
    print("counted pictures of each kind (training-only folders apart): " + "; ".join(
        f"{kind} " + ", ".join(f"{s.split('/')[-1][:24]} {n}" for s, n in where.items())
        for kind, where in sorted(kinds_by_source(examples).items())))
    print("kinds never seen: " + (", ".join(k for k in KINDS if k not in {e.kind for e in examples}) or "none"))
    figures = {}
    for inputs in inputs_tried:
        results = leave_one_source_out(examples, inputs)
        lines, pooled, mean = table(results)
        print(f"kinds suggested from {inputs}, leave one source out (trained and cut off on the other sources):")
        print("\n".join(lines))
        figures[inputs] = (results, pooled, mean)
    return figures


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m curation.pictures.kind_train", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder", type=pathlib.Path)
    parser.add_argument("--extra", type=pathlib.Path, action="append", default=[],
                        help="a folder laid out the same way, learned from but not measured (../shared/boxed)")
    parser.add_argument("--cache", type=pathlib.Path, default=pathlib.Path("bench/out/kinds"),
                        help="where the pictures' embeddings are kept between runs")
    parser.add_argument("--no-save", action="store_true", help="print the figures, write no model")
    args = parser.parse_args(argv)
    if not (args.folder / "pictures.jsonl").exists():
        sys.exit(f"no pictures.jsonl in {args.folder}: give a folder laid out like ../shared/realdata")
    examples = read_all(args.folder, args.extra, args.cache)
    figures = report(examples)
    if args.no_save:
        return
    cutoff = best_cutoff(examples, SHIPPED_INPUTS)
    model = fit(examples, SHIPPED_INPUTS, cutoff)
    model.save(KIND_FILE)
    RECIPE_FILE.write_text(json.dumps(_recipe(args, examples, figures, model), indent=1) + "\n")
    print(f"wrote {KIND_FILE} ({SHIPPED_INPUTS}, cutoff {cutoff:.2f}) and {RECIPE_FILE}")


def _recipe(args, examples: list[Example], figures: dict, model: KindModel) -> dict:
    def numbers(tally: Tally) -> dict:
        return {"right": tally.right, "wrong": tally.wrong, "unsure": tally.unsure, "counted": tally.counted,
                "right_share": round(tally.share(), 3), "best_kind_right": tally.top_right}

    return {
        "trained_on": {"measured": args.folder.name, "extra": [f.name for f in args.extra],
                       "pictures": len(examples), "sources": sources(examples),
                       "counted_by_kind_and_source": kinds_by_source(examples),
                       "kinds_never_seen": [k for k in KINDS if k not in {e.kind for e in examples}]},
        "model": {"inputs": model.inputs, "looks": LOOKS, "classes": model.classes,
                  "head": "multinomial logistic regression (scikit-learn, lbfgs), standardised inputs, balanced "
                          "classes, kept as arrays (curation.pictures.kind.KindModel)",
                  "C": REGULARISATION[model.inputs], "cutoff": model.cutoff,
                  "cutoff_chosen_by": "most right suggestions less wrong ones, leave one source out"},
        "leave_one_source_out": {
            inputs: {"per_source": {s: dict(numbers(t), cutoff=c) for s, (t, c) in results.items() if t.counted},
                     "pooled": numbers(pooled), "mean_right_share_over_sources": round(mean, 3)}
            for inputs, (results, pooled, mean) in figures.items()},
        "inputs_chosen": f"{SHIPPED_INPUTS}: chosen after seeing both inputs' figures above (the choice itself "
                         "is not held out)",
        "command": "python -m curation.pictures.kind_train ../shared/realdata --extra ../shared/boxed",
    }


if __name__ == "__main__":
    main()
