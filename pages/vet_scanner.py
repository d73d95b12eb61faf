"""Vet scanner: photos of an animal in, triage predictions out.

A thin screen over inference/: every request loads the model, classifies and
unloads it, so this page holds no model between requests (no cache_resource,
no model at module level). Results, not models, are kept per session so that
a rerun does not classify the same photo again.
"""

import logging
from pathlib import Path

import altair as alt
import pandas as pd
import streamlit as st

import inference
from pages import _common

_common.use_entry_script()  # a direct URL (/vet_scanner) runs under streamlit_app.py's navigation

log = logging.getLogger(__name__)

RESULTS_KEY = "vet_scanner_results"  # {(file_id, model path, top_k): result}
BATCH_KEY = "vet_scanner_batch"  # The last folder run: rows and CSV, or error.
MAX_PHOTO_MB = 50
MiB = 2**20


def main():
    st.title("Vet scanner")
    st.caption(
        "Upload photos of an animal: an image classifier ranks the likely conditions. "
        "The model is loaded for each request and unloaded right after it, so the "
        "server holds no model between requests."
    )
    model = choose_model()
    if model is None:
        return
    top_k = st.slider(
        "Predictions per photo", 1, len(model.labels), min(5, len(model.labels))
    )
    show_queue()
    photos_tab, folder_tab = st.tabs(["Photos", "Folder on the server (batch)"])
    with photos_tab:
        photos_mode(model, top_k)
    with folder_tab:
        folder_mode(model, top_k)


def choose_model():
    """The selected usable model, or None after saying how to add one."""
    folder = inference.models_dir()
    models = inference.list_models(folder)
    for broken in (model for model in models if model.problem):
        st.warning(f"**{broken.name}** cannot be used: {broken.problem}")
    usable = {model.name: model for model in models if not model.problem}
    if not usable:
        show_how_to_add_a_model(folder)
        return None
    name = st.selectbox(
        "Model",
        list(usable),
        format_func=lambda name: f"{name} (untrained demo)" if usable[name].is_demo else name,
        help=f"Each subfolder of {folder} is one model.",
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
    st.info(
        f"No model yet. Each subfolder of `{folder}` is one model.\n\n"
        "- **To try the page**, create the untrained demo model with the button "
        f"below, or run `python -m inference demo-model {folder / 'demo-vit'}`.\n"
        "- **For real triage**, copy a fine-tuned Hugging Face image-classification "
        "checkpoint (`config.json`, `model.safetensors`, `preprocessor_config.json`) "
        "into a subfolder: `models/README.md` says how."
    )
    if st.button("Create the demo model"):
        try:
            inference.write_demo_model(folder / "demo-vit")
        except (inference.InferenceError, OSError) as error:
            st.error(f"Could not write the demo model: {error}")
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
    photos = st.file_uploader(
        "Photos (JPEG, PNG, WebP)",
        type=["jpg", "jpeg", "png", "webp"],
        accept_multiple_files=True,
        max_upload_size=MAX_PHOTO_MB,
    )
    results = st.session_state.setdefault(RESULTS_KEY, {})
    current = set()
    for photo in photos or []:
        key = (photo.file_id, str(model.path), top_k)
        current.add(key)
        if key not in results:
            results[key] = run_request(
                photo.name,
                lambda on_wait, photo=photo: inference.classify(
                    photo, model.path, top_k, on_wait=on_wait
                ),
            )
        show_photo(photo, results[key])
    for stale in set(results) - current:  # Removed photos, other models.
        del results[stale]


def show_photo(photo, result):
    with st.container(border=True):
        if "error" in result:
            st.error(result["error"])
            return
        image_column, chart_column = st.columns([1, 2])
        image_column.image(photo, caption=photo.name, width="stretch")
        chart_column.altair_chart(prediction_chart(result["top"]), width="stretch")
        chart_column.caption(timing_line(result))


def folder_mode(model, top_k):
    st.write(
        "Classify every photo in a folder on the server into a table and a CSV. "
        "The model is loaded once for the whole folder; other requests wait meanwhile."
    )
    folder = st.text_input("Folder", placeholder="/data/photos/herd-2024-05").strip()
    recursive = st.checkbox("Include subfolders")
    if st.button("Classify the folder", disabled=not folder):
        progress = st.progress(0.0, text="Loading the model…")

        def on_progress(done, total):
            progress.progress(done / total, text=f"{done} of {total} photos")

        outcome = run_request(
            folder,
            lambda on_wait: {
                "rows": inference.classify_folder(
                    folder, model.path, top_k, recursive,
                    on_wait=on_wait, on_progress=on_progress,
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
        st.error(batch["error"])
        return
    rows = batch["rows"]
    failed = sum(1 for row in rows if row["error"])
    unreadable = f"; {failed} could not be read (see the error column)" if failed else ""
    st.success(f"{len(rows)} photos from {batch['folder']}{unreadable}.")
    table = pd.DataFrame(rows)
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


def run_request(what, request):
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
        with st.spinner(f"Classifying {what}…"):
            return request(on_wait)
    except inference.InferenceError as error:
        return {"error": str(error)}
    except Exception as error:  # noqa: BLE001 - a person gets a message, the log the traceback
        log.exception("Vet scanner request failed")
        return {"error": f"The scanner failed unexpectedly: {error}"}
    finally:
        waiting.empty()


def prediction_chart(top):
    data = pd.DataFrame(top)
    bars = alt.Chart(data).mark_bar().encode(
        x=alt.X(
            "score:Q",
            title="Probability",
            scale=alt.Scale(domain=[0, 1]),
            axis=alt.Axis(format="%"),
        ),
        y=alt.Y("label:N", title=None, sort="-x", axis=alt.Axis(labelLimit=240)),
        tooltip=[
            alt.Tooltip("label:N", title="Condition"),
            alt.Tooltip("score:Q", title="Probability", format=".1%"),
        ],
    )
    values = bars.mark_text(align="left", dx=4).encode(text=alt.Text("score:Q", format=".0%"))
    return (bars + values).properties(height=32 * len(data) + 40)


def timing_line(result):
    seconds = result["seconds"]
    memory = result["memory"]
    parts = [result["device"]]
    if seconds["wait"] >= 0.05:
        parts.append(f"waited {seconds['wait']:.1f} s for another request")
    parts += [
        f"load {seconds['load']:.2f} s",
        f"infer {seconds['infer']:.2f} s",
        f"unload {seconds['unload']:.2f} s",
        f"RSS {memory['rss_before_bytes'] / MiB:.0f} → {memory['rss_after_bytes'] / MiB:.0f} MiB",
    ]
    return " · ".join(parts)


main()
