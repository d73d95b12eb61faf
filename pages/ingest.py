"""Ingest: add archives (upload or a server path), start and stop scoring, watch it live."""

import math
import os
import pathlib

import streamlit as st

from curation.manifest import thumbnail_store, views
from curation.runs import jobs
from curation.sources import paths
from pages import _common as common

STATUS_LABELS = {"not-pdf": "not a PDF", "replaced": "replaced (file changed)"}


def main():
    st.title("Ingest")
    st.caption("Every page of every PDF gets σ and a thumbnail. Ingest runs in its own process: "
               "reloading, closing the tab or a second browser neither stops it nor starts another.")
    db = common.db_path()
    manifest = common.open_manifest()
    roots = paths.allowed_roots(db, manifest)
    running = manifest is not None and common.running_job(manifest) is not None
    known_sources = paths.sources(manifest) if manifest is not None else []
    if manifest is not None:
        manifest.close()

    add_archives(db, roots)
    show_sources(known_sources)
    if known_sources:
        page_timeout_input(running)
        thumbnails_input(running)
        cluster_input(running)
    start_button(db, roots, known_sources, running)
    common.job_panel(body=documents_table)


def add_archives(db: pathlib.Path, roots: list[pathlib.Path]):
    by_path, by_upload = st.tabs(["Folder or file on the server", "Upload PDFs"])
    with by_path:
        with st.form("add-path", clear_on_submit=False, border=False):
            text = st.text_input(
                "Path", placeholder=str(roots[0] / "archive"),
                help="A folder (searched recursively for PDFs) or one PDF. Relative paths start in "
                     f"{roots[0]}.",
            )
            added = st.form_submit_button("Add", icon=":material/add:")
        st.caption("Allowed folders: " + ", ".join(f"`{root}`" for root in roots) +
                   ". The server administrator adds more with `python -m curation.sources.paths add FOLDER` "
                   "or the CURATION_ROOTS environment variable.")
        if added:
            add_path(text, roots)
    with by_upload:
        limits = paths.UPLOAD_LIMITS
        uploads = st.file_uploader("PDFs", type=["pdf"], accept_multiple_files=True,
                                   max_upload_size=math.ceil(limits.file_bytes / 2**20), help=limits.help())
        uploads = common.within_upload_limits(uploads, limits)
        st.caption("Uploads travel through the browser and are held in the server's memory until saved, "
                   f"so big archives go by path: copy them under `{roots[0]}` on the server instead. "
                   f"Saved to `{paths.uploads_dir(db)}`.")
        if uploads and st.button(f"Save {len(uploads)} file(s) for ingest", icon=":material/save:"):
            save_uploads(db, uploads)


def add_path(text: str, roots: list[pathlib.Path]):
    try:
        path = paths.check_path(text, roots, base=roots[0])
    except paths.PathRefused as exc:
        st.error(str(exc), icon=":material/block:")
        return
    count, size = paths.pdf_stats(path)
    if count == 0:
        st.warning(f"No PDFs found in `{path}`.")
        return
    with common.open_manifest(create=True) as manifest:
        paths.add_source(manifest, path)
    st.session_state["ingest_notice"] = f"Added `{path}`: {count} PDF(s), {size / 1e6:,.1f} MB. Press Start."
    st.rerun()


def save_uploads(db: pathlib.Path, uploads):
    folder = paths.uploads_dir(db)
    saved = [paths.save_upload(folder, upload.name, upload) for upload in uploads]
    with common.open_manifest(create=True) as manifest:
        paths.add_source(manifest, folder)
    st.session_state["ingest_notice"] = f"Saved {len(saved)} file(s) to `{folder}`. Press Start."
    st.rerun()


def show_sources(known: list[str]):
    notice = st.session_state.pop("ingest_notice", None)
    if notice:
        st.success(notice, icon=":material/check:")
    if not known:
        st.caption("Add a folder or upload PDFs, then press Start.")
        return
    st.subheader("Sources")
    for source in known:
        count, size = source_stats(source)
        left, right = st.columns([6, 1], vertical_alignment="center")
        left.markdown(f"`{source}` · {count} PDF(s), {size / 1e6:,.1f} MB" if count else
                      f"`{source}` · :orange[no PDFs there now]")
        right.button("Remove", key=f"remove-{source}", on_click=remove_source, args=(source,),
                     help="Forget this source. Documents already ingested stay.")


@st.cache_data(ttl=10, show_spinner=False)
def source_stats(source: str) -> tuple[int, int]:
    return paths.pdf_stats(source)


def remove_source(source: str):
    with common.open_manifest() as manifest:
        paths.remove_source(manifest, source)


def page_timeout_input(running: bool):
    with common.open_manifest() as manifest:
        saved = manifest.page_timeout
    st.number_input(
        "Time limit per page (seconds)", min_value=0.0, max_value=3600.0, value=saved, step=10.0, format="%g",
        key="page_timeout", on_change=save_page_timeout, disabled=running,
        help="A page that takes longer to draw (a pathological pattern can take hours) is skipped and marked "
             "failed with the reason; its worker is replaced and the run goes on. 0: no limit. "
             "Used by ingest, rescore and export.",
    )


def save_page_timeout():
    with common.open_manifest() as manifest:
        manifest.page_timeout = st.session_state["page_timeout"]


def thumbnails_input(running: bool):
    with common.open_manifest() as manifest:
        saved, folder = manifest.thumbnail_store, manifest.thumbnail_folder
    stores = list(thumbnail_store.STORES)
    st.selectbox(
        "Thumbnails", stores, index=stores.index(saved), format_func=lambda s: f"{s}: {thumbnail_store.STORES[s]}",
        key="thumbnails", on_change=save_thumbnails, disabled=running,
        help=f"Where each page's thumbnail is kept. A thumbnail is about 10 kB, four fifths of a page's size in "
             f"the manifest: on millions of pages, folder or none keeps the manifest small. The folder is "
             f"`{folder}`. {thumbnail_store.CHANGE_NOTE}")


def save_thumbnails():
    with common.open_manifest() as manifest:
        manifest.thumbnail_store = st.session_state["thumbnails"]


def saved_cluster() -> str:
    """The Dask cluster the page's jobs run on: the manifest's setting, else $CURATION_CLUSTER ('': this server)."""
    with common.open_manifest() as manifest:
        return manifest.get_setting("cluster", os.environ.get("CURATION_CLUSTER", "")) or ""


def cluster_input(running: bool):
    address = st.text_input(
        "Dask cluster", value=saved_cluster(), key="cluster", on_change=save_cluster, disabled=running,
        placeholder="empty: worker processes on this server",
        help="Run ingest on a Dask cluster: a scheduler address (tcp://HOST:8786; `dask scheduler` on one "
             "machine, `dask worker tcp://HOST:8786 --nthreads 1` on each worker machine), or local:N for N "
             "worker processes here with Dask's dashboard. Every worker must see the sources at the same path.")
    if address:
        st.caption(cluster_status(address))


@st.cache_data(ttl=10, show_spinner=False)
def cluster_status(address: str) -> str:
    from curation.runs.cluster import ClusterError, probe  # Dask only for the pages that use a cluster

    try:
        return probe(address)
    except ClusterError as exc:
        return f":orange[{exc}]"


def save_cluster():
    with common.open_manifest() as manifest:
        manifest.set_setting("cluster", st.session_state["cluster"].strip())


def start_button(db: pathlib.Path, roots: list[pathlib.Path], known: list[str], running: bool):
    help_text = ("A job is running on this manifest." if running else
                 "Scores every page not in the manifest yet, from all sources; after Stop it resumes.")
    if not st.button("Start", type="primary", icon=":material/play_arrow:", disabled=running or not known,
                     help=help_text):
        return
    usable = []
    for source in known:
        try:
            usable.append(str(paths.check_path(source, roots, base=roots[0])))
        except paths.PathRefused as exc:
            st.warning(f"Skipped: {exc}")
    if not usable:
        st.error("None of the sources can be read now.")
        return
    cluster = saved_cluster()
    usable += ["--cluster", cluster] if cluster else []
    error = common.launch_and_wait("ingest", lambda: jobs.launch(db, "ingest", *usable))
    if error:
        st.error(error)
    else:
        st.rerun()


def documents_table(manifest):
    rows = views.document_rows(manifest)
    if not rows:
        return
    st.subheader("Documents")
    table = [
        {
            "document": pathlib.Path(row["path"]).name,
            "pages": row["pages"],
            "done": (row["scored"] + row["failed"]) / row["pages"] if row["pages"] else 0.0,
            "failed": row["failed"],
            "status": STATUS_LABELS.get(row["status"], row["status"]) + (" · file missing" if row["missing"] else ""),
            "reason": row["error"] or "",
            "folder": str(pathlib.Path(row["path"]).parent),
        }
        for row in rows
    ]
    st.dataframe(
        table, hide_index=True, width="stretch",
        column_config={
            "done": st.column_config.ProgressColumn("scored", format="percent", min_value=0.0, max_value=1.0),
            "reason": st.column_config.TextColumn("reason", width="large"),
        },
    )


common.run_page(main)
