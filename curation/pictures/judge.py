"""How a set of kept picture boxes is judged against hand-drawn boxes (../shared/realdata's README).

Boxes are fractions of the page (x0, y0, x1, y1, top-left origin). A kept box is **right** when at
least half of it lies inside a counted picture's box grown by 2 % of the page's shorter side,
**neither** when it lies mostly inside a box that does not count (an ornament, a stock cut), **wrong**
otherwise; a counted picture is **found** when kept boxes cover at least half of it. A right box is
also **clean** when at least 85 % of it lies in the counted box it matches grown by 1 % of the shorter
side, and it holds at least 90 % of that box.
"""

from __future__ import annotations

import numpy as np

GROW = 0.02
CLEAN_GROW = 0.01
CLEAN_INSIDE, CLEAN_HOLDS = 0.85, 0.90


def judge(kept: list, labelled: list[dict], aspect: float) -> dict:
    """Kept boxes against one page's labelled pictures ({"box", "counts"}); `aspect` is the page's width
    over its height. Returns each kept box's verdict (right, neither or wrong), whether it is clean,
    and which counted pictures were found."""
    counted = [p["box"] for p in labelled if p["counts"]]
    others = [p["box"] for p in labelled if not p["counts"]]
    grown = [grow(c, GROW, aspect) for c in counted]
    verdicts, clean = [], []
    for box in kept:
        a = area(box)
        if a and max((area(meet(box, g)) for g in grown), default=0.0) >= 0.5 * a:
            verdicts.append("right")
        elif a and max((area(meet(box, o)) for o in others), default=0.0) > 0.5 * a:
            verdicts.append("neither")
        else:
            verdicts.append("wrong")
        clean.append(verdicts[-1] == "right" and is_clean(box, counted, aspect))
    found = [covered(c, kept) >= 0.5 * area(c) for c in counted]
    return {"verdicts": verdicts, "clean": clean, "found": found, "counted": counted}


def is_clean(box, counted: list, aspect: float) -> bool:
    a = area(box)
    return bool(a) and any(area(meet(box, grow(c, CLEAN_GROW, aspect))) >= CLEAN_INSIDE * a
                           and area(meet(box, c)) >= CLEAN_HOLDS * area(c) for c in counted)


def grow(box, share: float, aspect: float):
    """`box` grown on every side by `share` of the page's shorter side."""
    gx, gy = share * min(1.0, 1 / aspect), share * min(1.0, aspect)
    return box[0] - gx, box[1] - gy, box[2] + gx, box[3] + gy


def area(box) -> float:
    return max(0.0, box[2] - box[0]) * max(0.0, box[3] - box[1])


def meet(a, b):
    return max(a[0], b[0]), max(a[1], b[1]), min(a[2], b[2]), min(a[3], b[3])


def covered(target, boxes, steps: int = 64) -> float:
    """The area of `target` the union of `boxes` covers (on a fine grid over the target)."""
    x0, y0, x1, y1 = target
    xs = np.linspace(x0, x1, steps, endpoint=False) + (x1 - x0) / steps / 2
    ys = np.linspace(y0, y1, steps, endpoint=False) + (y1 - y0) / steps / 2
    gx, gy = np.meshgrid(xs, ys)
    hit = np.zeros(gx.shape, bool)
    for b in boxes:
        hit |= (gx >= b[0]) & (gx < b[2]) & (gy >= b[1]) & (gy < b[3])
    return float(hit.mean()) * area(target)


class Tally:
    """Right, wrong, neither, clean, found and counted, added up over pages."""

    def __init__(self):
        self.right = self.wrong = self.neither = self.clean = self.found = self.counted = 0
        self.pages_kept = self.pages_kept_illustrated = self.pages_illustrated = 0

    def add(self, result: dict) -> None:
        verdicts = result["verdicts"]
        self.right += verdicts.count("right")
        self.wrong += verdicts.count("wrong")
        self.neither += verdicts.count("neither")
        self.clean += sum(result["clean"])
        self.found += sum(result["found"])
        self.counted += len(result["found"])

    def add_page(self, kept: bool, illustrated: bool) -> None:
        """A page's decision (kept: it holds a kept picture of the export's size) against its label."""
        self.pages_kept += kept
        self.pages_illustrated += illustrated
        self.pages_kept_illustrated += kept and illustrated

    @property
    def page_precision(self) -> float:
        return self.pages_kept_illustrated / self.pages_kept if self.pages_kept else float("nan")

    @property
    def page_recall(self) -> float:
        return self.pages_kept_illustrated / self.pages_illustrated if self.pages_illustrated else float("nan")

    def __iadd__(self, other: "Tally") -> "Tally":
        for name in vars(self):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        return self

    @property
    def precision(self) -> float:
        return self.right / (self.right + self.wrong) if self.right + self.wrong else float("nan")

    @property
    def recall(self) -> float:
        return self.found / self.counted if self.counted else float("nan")

    @property
    def clean_share(self) -> float:
        return self.clean / (self.right + self.wrong) if self.right + self.wrong else float("nan")

    def line(self) -> str:
        return (f"precision {self.precision:4.2f}  recall {self.recall:4.2f}  clean {self.clean_share:4.2f}  "
                f"(kept {self.right + self.wrong + self.neither}: {self.right} right, {self.neither} neither, "
                f"{self.wrong} wrong, {self.clean} clean; found {self.found} of {self.counted}); pages precision "
                f"{self.page_precision:4.2f} recall {self.page_recall:4.2f} ({self.pages_kept_illustrated} of "
                f"{self.pages_kept} kept illustrated, of {self.pages_illustrated})")
