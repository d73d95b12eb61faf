"""Ingest: add archives (upload or a server path), start and stop scoring, watch it live."""

import math
import pathlib

import streamlit as st

from guards import uploads as uploads_guard

from curation import views
from curation.captions import legend
from curation.manifest import thumbnail_store
from curation.runs import cluster_config, jobs
from curation.sources import paths
from pages.components import auth, common, picture_job

STATUS_LABELS = {"not-pdf": "not a PDF", "replaced": "replaced (file changed)", "too-long": "too many pages"}


def main():
    st.title("Ingest")
    st.caption("Every page of every PDF gets its scores and a thumbnail.",
               help="Ingest runs in its own process: reloading, closing the tab or a second browser neither stops "
                    "it nor starts another.")
    db = common.db_path()
    manifest = common.open_manifest()
    roots = paths.allowed_roots(db, manifest)
    running = manifest is not None and common.running_job(manifest) is not None
    known_sources = paths.sources(manifest) if manifest is not None else []
    if manifest is not None:
        manifest.close()

    chosen = add_archives(db, roots)
    show_sources(known_sources)
    start_button(db, roots, known_sources, running, chosen)
    if known_sources:  # what the server decides, and where thumbnails go: rarely needed, folded away
        with st.expander("Advanced: thumbnails, legend languages, picture finder, picture job, time limit per "
                         "page, Dask cluster", icon=":material/settings:", key="ingest_advanced"):
            thumbnails_input(running)
            legend_languages_input(running)
            picture_finder_input(running)
            picture_job.picture_job_input(running)
            page_timeout_setting()
            cluster_setting()
    common.job_panel(body=documents_table)
    if manifest is not None:
        picture_job.picture_job_panel(running)


UPLOADER = "ingest_uploader"  # a new key after Start saved the chosen files empties the uploader


def add_archives(db: pathlib.Path, roots: list[pathlib.Path]) -> list:
    """The path form and the uploader; returns the uploaded files chosen (within the limits), which Start saves."""
    by_path, by_upload = st.tabs(["Folder or file on the server", "Upload PDFs"])
    with by_path:
        with st.form("add-path", clear_on_submit=False, border=False):
            text = st.text_input(
                "Path", placeholder=common.pictured(roots[0] / "archive"), max_chars=common.MAX_PATH_CHARS,
                help="A folder (searched recursively for PDFs) or one PDF. Relative paths start in "
                     f"{common.code_span(roots[0])}.",
            )
            added = st.form_submit_button("Add", icon=":material/add:", disabled=auth.locked(),
                                          help=auth.help_for())
        st.caption("Allowed folders: " + ", ".join(common.code_span(root) for root in roots) +
                   f". The server's administrator adds more with `{ALLOW_COMMAND}` "
                   "or the CURATION_ROOTS environment variable.")
        if added and auth.require_curator():
            add_path(text, roots)
        offer_to_allow()
    with by_upload:
        limits = paths.UPLOAD_LIMITS
        uploads = st.file_uploader("PDFs", type=["pdf"], accept_multiple_files=True, disabled=auth.locked(),
                                   key=f"{UPLOADER}-{st.session_state.get(UPLOADER, 0)}",
                                   max_upload_size=math.ceil(limits.file_bytes / uploads_guard.MB),
                                   help=auth.help_for(limits.help()))
        uploads = common.within_upload_limits(uploads, limits)
        st.caption("Uploads travel through the browser and are held in the server's memory until saved, "
                   f"so big archives go by path: copy them under {common.code_span(roots[0])} on the server instead. "
                   f"Start saves the chosen files to {common.code_span(paths.uploads_dir(db))} and ingests them.")
        if uploads:
            st.markdown(f"{len(uploads)} file(s) chosen, {uploads_guard.megabytes(sum(map(uploads_guard.upload_size, uploads)))}: "
                        "**Start** saves and ingests them.")
    return uploads


ALLOW_COMMAND = "python -m curation folders add FOLDER"
OUTSIDE = "ingest_outside"  # a path typed outside the allowed folders, which the person at the server may allow


def add_path(text: str, roots: list[pathlib.Path]):
    st.session_state.pop(OUTSIDE, None)
    try:
        path = paths.check_path(text, roots, base=roots[0])
    except paths.OutsideRoots as exc:
        st.error(f"{common.escape_markdown(exc)} The server's administrator allows a folder with "
                 f"`{ALLOW_COMMAND}` (see `python -m curation folders --help`).", icon=":material/block:")
        if auth.can_curate() and common.not_at_server() is None:
            st.session_state[OUTSIDE] = str(exc.path)
        return
    except paths.PathRefused as exc:
        st.error(common.escape_markdown(exc), icon=":material/block:")
        return
    count, size = paths.pdf_stats(path)
    if count == 0:
        st.warning(f"No PDFs found in {common.code_span(path)}.")
        return
    with common.open_manifest(create=True) as manifest:
        paths.add_source(manifest, path)
    st.session_state["ingest_notice"] = (f"Added {common.code_span(path)}: {count} PDF(s), {size / 1e6:,.1f} MB. "
                                         "Press Start.")
    st.rerun()


def folder_to_allow(path: pathlib.Path) -> pathlib.Path:
    """The folder allowing `path` allows: itself, or the folder of a file."""
    return path.parent if path.is_file() else path


def offer_to_allow():
    """For the person at the server only (sign-in off, loopback, no proxy): allow the folder of a path
    refused as outside the allowed folders, as `python -m curation folders add` would, and add it."""
    pending = st.session_state.get(OUTSIDE)
    if not pending:
        return
    if not auth.can_curate() or common.not_at_server() is not None:
        st.session_state.pop(OUTSIDE, None)
        return
    folder = folder_to_allow(pathlib.Path(pending))
    with st.container(border=True, key="allow-folder"):
        st.markdown(f"Sign-in is off and the server listens on this machine only, so you are the person at the "
                    f"server: you may allow {common.code_span(folder)} here, as `python -m curation folders add` "
                    "would. Every PDF under it can then be ingested from this page; "
                    "`python -m curation folders remove` takes it back.")
        left, right = st.columns(2)
        allow = left.button("Allow this folder and add it", icon=":material/create_new_folder:", key="allow-folder-yes")
        if right.button("Cancel", key="allow-folder-no"):
            st.session_state.pop(OUTSIDE, None)
            st.rerun()
    if allow:
        allow_and_add(pending)


def allow_and_add(pending: str):
    st.session_state.pop(OUTSIDE, None)
    reason = common.not_at_server()
    if reason is not None or not auth.require_curator():  # checked again on the click itself
        st.error(f"Not allowed from this page: {common.escape_markdown(reason or auth.LOCKED_HELP)}. "
                 f"Run `{ALLOW_COMMAND}` on the server.", icon=":material/block:")
        return
    try:
        with common.open_manifest(create=True) as manifest:
            paths.add_root(manifest, folder_to_allow(pathlib.Path(pending)))
            roots = paths.allowed_roots(common.db_path(), manifest)
    except paths.PathRefused as exc:
        st.error(common.escape_markdown(exc), icon=":material/block:")
        return
    add_path(pending, roots)


def save_uploads(db: pathlib.Path, uploads) -> pathlib.Path:
    """Store the chosen files in the uploads folder, a source from now on, and empty the uploader."""
    folder = paths.uploads_dir(db)
    for upload in uploads:
        upload.seek(0)
        paths.save_upload(folder, upload.name, upload)
    with common.open_manifest(create=True) as manifest:
        paths.add_source(manifest, folder)
    st.session_state[UPLOADER] = st.session_state.get(UPLOADER, 0) + 1
    return folder


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
        left.markdown(f"{common.code_span(source)} · {count} PDF(s), {size / 1e6:,.1f} MB" if count else
                      f"{common.code_span(source)} · :orange[no PDFs there now]")
        right.button("Remove", key=f"remove-{source}", on_click=remove_source, args=(source,),
                     disabled=auth.locked(),
                     help=auth.help_for("Forget this source. Documents already ingested stay."))


@st.cache_data(ttl=10, show_spinner=False)
def source_stats(source: str) -> tuple[int, int]:
    return paths.pdf_stats(source)


def remove_source(source: str):
    if not auth.require_curator():
        return
    with common.open_manifest() as manifest:
        paths.remove_source(manifest, source)


def page_timeout_setting():
    """The time limit, read-only: it bounds what a hostile PDF may cost the server, so it is the server's."""
    with common.open_manifest() as manifest:
        limit = manifest.page_timeout
    st.markdown(f"**Time limit per page:** {f'{limit:g} s' if limit else 'none'}",
                help="A page that takes longer to draw (a pathological pattern can take hours) is skipped and "
                     "marked failed with the reason; its worker is replaced and the run goes on. Used by ingest, "
                     "rescore and export. The server's administrator changes it with "
                     "`python -m curation settings --page-timeout SECONDS`.")


def thumbnails_input(running: bool):
    with common.open_manifest() as manifest:
        saved, folder = manifest.thumbnail_store, manifest.thumbnail_folder
    stores = list(thumbnail_store.STORES)
    st.selectbox(
        "Thumbnails", stores, index=stores.index(saved), format_func=lambda s: f"{s}: {thumbnail_store.STORES[s]}",
        key="thumbnails", on_change=save_setting, args=("thumbnails", "thumbnail_store"), disabled=running or auth.locked(),
        help=auth.help_for(f"Where each page's thumbnail is kept. A thumbnail is about 10 kB, four fifths of a "
                           f"page's size in the manifest: on millions of pages, folder or none keeps the manifest "
                           f"small. The folder is {common.code_span(folder)}. {thumbnail_store.CHANGE_NOTE}"))


def legend_languages_input(running: bool):
    """The languages pictures' printed legends are read in; without the OCR engine, how to get it."""
    note = legend.engine_note()
    if note:
        st.caption(common.escape_markdown(note))
        return
    with common.open_manifest() as manifest:
        saved = manifest.legend_languages.split("+")
    installed = sorted(legend.installed_languages())
    st.multiselect(
        "Legend languages", installed, default=[code for code in saved if code in installed],
        format_func=lambda code: legend.LANGUAGE_NAMES.get(code, code), key="legend_languages",
        on_change=save_legend_languages, disabled=running or auth.locked(),
        help=auth.help_for("The languages the printed legend under (or over) each picture is read in, by OCR, "
                           "as pages are scored. Fewer languages read faster and confuse fewer letters."))


PICTURE_FINDERS = {
    "network": "The picture network (learned where pictures are; boxes fitted to their ink)",
    "rules": "The page analysis (faster, finds fewer)",
    "learned": "Checked by the learned verdict (about a second a page on a CPU; not yet better)",
}


def picture_finder_input(running: bool):
    """Who finds the pictures as pages are scored: the rules, the picture network, or candidates checked by the
    learned verdict."""
    with common.open_manifest() as manifest:
        saved = manifest.picture_finder
    st.radio("Pictures found by", list(PICTURE_FINDERS), index=list(PICTURE_FINDERS).index(saved),
             format_func=PICTURE_FINDERS.get, key="picture_finder", on_change=save_setting,
             args=("picture_finder", "picture_finder"),
             disabled=running or auth.locked(),
             help=auth.help_for("Pages scored from now on. Their figures and cost: docs/picture-finder.md "
                                "(the network) and docs/learned-pictures.md (the verdict). Pages scored before keep their pictures until "
                                "`python -m curation rescore --all`."))


def save_legend_languages():
    chosen = st.session_state.get("legend_languages") or []
    if not auth.require_curator() or not chosen:  # at least one: an empty choice keeps the saved one
        st.session_state.pop("legend_languages", None)
        return
    with common.open_manifest() as manifest:
        manifest.legend_languages = legend.check_languages("+".join(chosen))


def save_setting(key: str, setting: str):
    """A widget's value (`key`) saved as the manifest's `setting`, by a curator only."""
    if not auth.require_curator():
        st.session_state.pop(key, None)
        return
    with common.open_manifest() as manifest:
        setattr(manifest, setting, st.session_state[key])


def cluster_setting():
    """The Dask cluster, read-only and never dialled here: a Dask client runs what its scheduler sends, so
    only the server's configuration names one, and only the ingest job connects (its panel says how it went)."""
    address = cluster_config.configured_address()
    st.markdown(f"**Dask cluster:** {common.code_span(address)}" if address else "**Dask cluster:** none, worker processes on this server")
    if address:
        try:
            st.caption(cluster_config.describe(address))
        except cluster_config.ClusterError as exc:
            st.caption(f":orange[{common.escape_markdown(exc)}]")
    st.caption(cluster_config.HOW_TO_CHANGE)


def start_button(db: pathlib.Path, roots: list[pathlib.Path], known: list[str], running: bool, chosen: list):
    help_text = ("A job is running on this manifest." if running else
                 "Saves the chosen uploads, then scores every page not in the manifest yet, from all sources; "
                 "after Stop it resumes.")
    if not st.button("Start", type="primary", icon=":material/play_arrow:",
                     disabled=running or not (known or chosen) or auth.locked(), help=auth.help_for(help_text)):
        return
    if not auth.require_curator():
        return
    if chosen:
        folder = str(save_uploads(db, chosen))
        known = known + [folder] if folder not in known else known
    usable = []
    for source in known:
        try:
            usable.append(str(paths.check_path(source, roots, base=roots[0])))
        except paths.PathRefused as exc:
            st.warning(f"Skipped: {common.escape_markdown(exc)}")
    if not usable:
        st.error("None of the sources can be read now.")
        return
    cluster = cluster_config.configured_address()
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
            "pages": row["pages"] or 0,  # a document that could not be read has none (the manifest's NULL)
            "done": (row["scored"] + row["failed"]) / row["pages"] if row["pages"] else 0.0,
            "failed": row["failed"],
            "status": STATUS_LABELS.get(row["status"], row["status"]) + (" · file missing" if row["missing"] else ""),
            "folder": views.folder_words(row["path"]),
            "reason": row["error"] or "",
        }
        for row in rows
    ]
    st.dataframe(
        common.pictured_table(table), hide_index=True, width="stretch",
        column_config={
            "done": st.column_config.ProgressColumn("scored", format="percent", min_value=0.0, max_value=1.0),
            # The folder before the reason, wide, and its head cut where it is long: last, at the table's edge, it
            # was cut ("…/uploac"); a long one was cut at the column's edge, where its end is what tells it apart.
            "folder": st.column_config.TextColumn("folder", width="large"),
            "reason": st.column_config.TextColumn("reason", width="large"),
        },
    )


common.run_page(main)
