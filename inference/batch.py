"""Batch mode: a folder of photos in, one CSV row per photo out."""

import io
import time
from pathlib import Path

from guards.csv_cells import SafeDictWriter

from .classify import check_top_k, has_gate, predict
from .errors import BadImageError
from .images import PHOTO_SUFFIXES, find_photos, open_image
from .loader import loaded_model


def classify_folder(
    folder, model_dir, top_k=3, recursive=False, device=None, on_wait=None, on_progress=None,
    roots=None,
):
    """Classify every photo in `folder` with one load of the model; return CSV rows.

    A batch is one request: the model is loaded once, used for every photo,
    and unloaded at the end (other requests wait meanwhile). A photo that
    cannot be read gets a row with its `error` filled in; the rest go on.
    `on_progress(done, total)` is called after each photo. With `roots` (the
    allowed folders), the folder is listed and each photo read only if it
    really lies under them when opened; a photo that does not gets a row with
    the reason.

    Rows are dicts with the same keys, in order: file (relative to `folder`),
    model, [cattle, cattle_score,] label_1, score_1, ... label_k, score_k,
    infer_seconds, error. cattle ("yes"/"no") and cattle_score (the summed
    probability of the bovine classes) are there for a model that has those
    classes (ImageNet), and come first because triage means nothing on "no".
    """
    check_top_k(top_k)
    folder = Path(folder).expanduser()
    paths = find_photos(folder, recursive, roots)
    if not paths:
        raise BadImageError(
            f"{folder}: no photos found ({', '.join(PHOTO_SUFFIXES)})"
            + ("." if recursive else "; subfolders were not searched.")
        )
    rows = []
    with loaded_model(model_dir, device, on_wait) as loaded:
        top_k = min(top_k, len(loaded.info.labels))
        for done, path in enumerate(paths, start=1):
            rows.append(_row(loaded, folder, path, top_k, roots))
            if on_progress:
                on_progress(done, len(paths))
    return rows


def rows_to_csv(rows):
    """The rows from classify_folder as CSV text, header first."""
    if not rows:
        return ""
    out = io.StringIO()
    writer = SafeDictWriter(out, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()


def _row(loaded, folder, path, top_k, roots):
    row = {"file": path.relative_to(folder).as_posix(), "model": loaded.info.name}
    try:
        photo = open_image(path, name=row["file"], roots=roots)
    except BadImageError as error:
        top, gate, seconds, problem = [], None, None, str(error)
    else:
        started = time.perf_counter()
        prediction = predict(loaded, photo, top_k)
        top, gate = prediction["top"], prediction["cattle"]
        seconds, problem = round(time.perf_counter() - started, 4), ""
    if has_gate(loaded):
        row["cattle"] = "" if gate is None else ("yes" if gate["is_cattle"] else "no")
        row["cattle_score"] = None if gate is None else gate["score"]
    for rank in range(1, top_k + 1):
        prediction = top[rank - 1] if top else {"label": "", "score": None}
        row[f"label_{rank}"] = prediction["label"]
        row[f"score_{rank}"] = prediction["score"]
    row["infer_seconds"] = seconds
    row["error"] = problem
    return row
