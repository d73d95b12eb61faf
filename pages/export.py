"""Export: the kept pages as a LoRA training ZIP for kohya_ss, ai-toolkit or diffusers.

Options beside a preview of every image exactly as it will be written (same reader, crop, shaping
and encoder as the export), a screen of four at a time, and how many near-duplicates are left out. The export itself runs in its
own process (`python -m curation export`) and writes its progress to the manifest; this page only
launches it and polls, so a rerun, a reload or a closed tab neither stops it nor starts a second one.
Then a download button, or the path on the server for a ZIP too large to pass through a browser.
"""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib
import shlex
import threading
from concurrent.futures import Future, ThreadPoolExecutor

import streamlit as st

from curation.export import (Counted, ExportSettings, Preview, SettingsError, count_export, estimate_export,
                             image_folder, preview, safe_zip_name, screen_items, screens, select, thumbnail_sizes)
from curation.export.preview import ESTIMATE_SAMPLE
from curation import Manifest, views
from curation.export.captions import MAX_TEMPLATE_CHARS
from curation.export.job import ENLARGED
from curation.export.selection import Item, Selection, quick_to_select, selection_stamp
from curation.export.source import scans_decoded_once
from curation.export.settings import DEFAULT_TEMPLATE, MASKED_LAYOUTS, MAX_WORD_CHARS
from curation.runs import jobs
from curation.sources.page_numbers import page_number
from curation.sources.paths import data_dir
from pages.components import auth, common

# A download passes through the server's memory: beyond this the ZIP is fetched from the server's disk.
DOWNLOAD_LIMIT = 500_000_000
PREVIEW_COUNT = 12  # images a preview screen shows
PREVIEW_COLUMNS = 3
PREVIEW_SCREEN_KEY = "export_preview_screen"
POLL_SECONDS = 1.0
RUNNING_KEY = "export_job_was_running"
ONE_PER_GROUP_KEY = "export_one_per_group"
CROP_KEY = "export_crop"
# Up to this many images the figures are counted on every one (about a millisecond each, no pixel decoded);
# past it they are estimated from ESTIMATE_SAMPLE images and say "about".
COUNTED_LIMIT = 5_000
LISTINGS_KEPT = 8  # selections kept between runs, every session's
LIST_WAITED = "export_list_waited"
LIST_RERUN_SECONDS = 0.1

LAYOUT_LABELS = {
    "kohya": "kohya_ss / sd-scripts",
    "folder": "Folder (ai-toolkit, OneTrainer)",
    "diffusers": "diffusers imagefolder",
}
LAYOUT_HELP = {
    "kohya": "`img/<repeats>_<trigger> <class>/` with images and `.txt` captions, and `dataset.toml`.",
    "folder": "`images/` with images and same-stem `.txt` captions.",
    "diffusers": "`train/` with images and `metadata.jsonl` (`file_name`, `text`).",
}
SHAPES = {  # label: (mode, fit, the trade-off in one line)
    "Square, padded": ("square", "pad", "The whole page on a margin of its own paper colour. Nothing is lost "
                       "or distorted; the margin becomes part of what the model sees."),
    "Square, cropped": ("square", "crop", "The centre square fills the frame; the top and bottom of a tall "
                        "page are cut off."),
    "Square, stretched": ("square", "stretch", "The original method: the whole page squashed into a square, "
                          "so figures come out wider than drawn."),
    "SDXL buckets": ("bucket", "pad", "Proportions kept: each page snapped to the nearest SDXL bucket (area "
                     "about size², sides multiples of 64). The trainer needs bucketing on; kohya's "
                     "`dataset.toml` turns it on."),
}
CROPS = {  # label: (crop, the trade-off in one line); the first is the default
    "Each picture apart": ("pictures", "Every picture of a page its own image, cut with a small margin, so a page "
                           "of several cuts gives several training images and no text columns. Pictures smaller than "
                           "the picture rule's minimum size are left out; pages without a picture export whole."),
    "The picture only": ("picture", "Each page cut to its largest picture as you left it on Review (with a "
                         "small margin), so the text around a plate is left out; then shaped as above. Pages without "
                         "a picture export whole."),
    "The whole page": ("page", "Text, margins and all, as scanned."),
}


def main():
    st.title("Export")
    st.caption("The kept pictures (your decisions, else the rule), each cut apart as its own image, or whole pages "
               "(under Crop), as a training set: RGB JPEGs with same-stem captions, in the layout your trainer reads, "
               "with a provenance table.")
    db = common.db_path()
    # The near-duplicate and crop choices decide which pages and pictures go, so they are read before their
    # widgets are drawn.
    duplicates = "one" if st.session_state.get(ONE_PER_GROUP_KEY, True) else "all"
    crop = CROPS.get(st.session_state.get(CROP_KEY), next(iter(CROPS.values())))[0]
    with common.require_manifest() as manifest:
        threshold = manifest.threshold
        rule = manifest.rule
        listed = (str(db), selection_stamp(manifest, threshold), threshold, duplicates, crop)  # names the selection
        listed_now = listing(listed)  # in the background, while the page is drawn
        quick = listed_now.done() or quick_to_select(manifest)
        running = manifest.running_job("export") is not None
        scoring = common.running_job(manifest) is not None
    if not quick and not common.waited(LIST_WAITED):  # a large manifest not listed as it is now: drawn first
        list_after(listed, duplicates, running)
        return
    selection = kept_selection(listed)
    items = selection.items
    if not items:
        st.info(f"No page is kept by the {rule} rule: there is nothing to export yet. Change the rule or its "
                "cutoffs on the Threshold page, or keep pages one by one on the Review page.")
        common.link("pages/threshold.py", "Threshold", ":material/tune:")
        common.link("pages/review.py", "Review", ":material/grid_view:")
        export_panel(running)
        return

    options_column, preview_column = st.columns([2, 3], gap="large")
    with options_column:
        settings, problem = options(duplicates)
        out = data_dir(db) / "exports" / safe_zip_name(file_name())
    with preview_column:
        written, counted = show_figures(selection, listed, settings, rule)
        if settings:  # counted: the images written alone; estimated, every one, those left out saying so
            show_preview(counted.written(items) if counted else items, settings)
            if counted:
                show_left_out(items, counted)
    if problem:
        st.error(problem)
    elif not running:
        if scoring:
            st.caption(":material/info: Pages are being scored right now; an export takes the pages kept when it "
                       "starts.")
        args = ["--out", str(out), *settings.cli_args(), "--threshold", repr(float(threshold))]
        launch_button(db, args, out, written)
        with st.expander("The same export from the command line"):
            st.code(shlex.join(["python", "-m", "curation", "export", "--db", str(db), *args]), language="bash")
    export_panel(running)


@st.cache_resource
def listings() -> tuple[dict[tuple, Future], threading.Lock, ThreadPoolExecutor]:
    """The export's selections, listed or being listed, every session's, by what names each (`listed`: the
    manifest, its selection_stamp, the cutoff, the duplicates and crop chosen), the newest LISTINGS_KEPT; the
    lock they are changed under, and the threads that list them."""
    return {}, threading.Lock(), ThreadPoolExecutor(max_workers=2, thread_name_prefix="export-listing")


def listing(listed: tuple) -> Future:
    """The listing of the selection `listed` names (`select` as the manifest is now): begun now, in the
    background, unless a session began it before; one that failed is begun again. Kept for every session and
    run until the manifest changes: a widget moved on this page does not list 100,000 pictures again."""
    futures, lock, lister = listings()
    with lock:
        future = futures.get(listed)
        if future is None or (future.done() and future.exception() is not None):
            future = futures[listed] = lister.submit(select_listed, listed)
            while len(futures) > LISTINGS_KEPT:
                futures.pop(next(iter(futures)))
        return future


def select_listed(listed: tuple) -> Selection:
    db, _, threshold, duplicates, crop = listed
    with Manifest(pathlib.Path(db)) as manifest:
        return select(manifest, threshold, duplicates, crop)


def kept_selection(listed: tuple) -> Selection:
    """The selection `listed` names, waited for where it is being listed. Never changed by its readers."""
    future = listing(listed)
    if future.done():
        return future.result()
    with st.spinner("Listing the pictures the export takes…"):
        return future.result()


def list_after(listed: tuple, duplicates: str, running: bool) -> None:
    """A large manifest's selection not yet listed as the manifest is now (a second or more at 100,000 pictures,
    a new one while the picture job runs): the options are drawn at once, and the figures and preview a moment
    later (common.after_this_run: the listing, begun before the page was drawn, is waited for), the page saying
    what it waits for."""
    options_column, preview_column = st.columns([2, 3], gap="large")
    with options_column:
        _, problem = options(duplicates)
        file_name()
    with preview_column:
        st.info("Listing the pictures the export takes… Its figures and preview follow in a moment.",
                icon=":material/hourglass_top:")
    if problem:
        st.error(problem)
    common.after_this_run(LIST_WAITED, LIST_RERUN_SECONDS, lambda: kept_selection(listed))
    export_panel(running)


def file_name() -> str:
    return st.text_input("File name", value="lora.zip", max_chars=common.MAX_NAME_CHARS,
                         help="Written to the exports folder beside the manifest.")


# -- options ----------------------------------------------------------------------------------

MASK_HELP = {  # where each layout's masks go and what its trainer needs (docs/export.md)
    "kohya": "White where the picture is, black on the paper, legend and type round it and on the padding: "
             "mask/ is dataset.toml's conditioning_data_dir; train with --config_file training.toml (masked loss).",
    "folder": "OneTrainer: <name>-masklabel.png beside each image (turn on Masked Training). Leave it off for "
              "ai-toolkit, which would take them for training images.",
    "diffusers": "masks/<name>.png beside train/, for a training script that reads masks (diffusers' own do not).",
}


def options(duplicates: str) -> tuple[ExportSettings | None, str | None]:
    """The chosen settings, or None and the reason they cannot work."""
    layout = st.radio("Trainer", list(LAYOUT_LABELS), format_func=LAYOUT_LABELS.get, key="export_layout",
                      captions=[LAYOUT_HELP[k] for k in LAYOUT_LABELS])
    crop_label = st.radio("Crop", list(CROPS), key=CROP_KEY, captions=[c[1] for c in CROPS.values()],
                          horizontal=False)
    crop = CROPS[crop_label][0]
    shape = st.radio("Shape", list(SHAPES), key="export_shape", captions=[s[2] for s in SHAPES.values()])
    mode, fit, _ = SHAPES[shape]
    left, right = st.columns(2)
    size = left.number_input("Size (pixels)", 256, 4096, 1024, step=64, key="export_size",
                             help="Side of the square, or of the bucket's area. SDXL trains at 1024.")
    quality = right.slider("JPEG quality", 60, 100, 92, key="export_quality")
    pad_colour = "paper"
    if fit == "pad" and mode == "square":
        if not st.checkbox("Margin in each page's paper colour", value=True, key="export_paper"):
            pad_colour = st.color_picker("Margin colour", "#ffffff", key="export_pad_colour")
    left, right = st.columns(2)
    trigger = left.text_input("Trigger word", "ohwx", key="export_trigger", max_chars=MAX_WORD_CHARS,
                              help="A rare token prompts use to call the style, e.g. 'a teapot, ohwx'.")
    class_word = right.text_input("Class", "engraving", key="export_class", max_chars=MAX_WORD_CHARS,
                                  help="What the images show.")
    template = st.text_input(
        "Caption template", DEFAULT_TEMPLATE, key="export_template", max_chars=MAX_TEMPLATE_CHARS,
        help="{trigger}, {class}, {best_caption} (your caption, else the printed legend, else the model's), "
             "{caption} (your caption from Review: the picture's, else its page's), {legend} (the legend printed "
             "with the picture, read by OCR), {auto_caption} (the captioning model's), {doc} (file name), "
             "{page} (from 1, as a PDF viewer counts), {picture} (with each picture apart: its number on the page, "
             "empty for a whole page). A whole page takes the legend and the model's caption of its largest kept "
             "picture. Empty parts drop out with their comma.",
    )
    min_source = st.number_input(
        "Minimum source size (pixels, short side)", 0, 16384, 0, step=64, key="export_min_source",
        help="Leave out images whose source has fewer pixels than this on its short side (0: none). A small cut "
             "enlarged 2.5-3.5 times comes out soft; 512 keeps what a 1024 px export enlarges at most 2x.")
    st.checkbox("One page per group of near-duplicates", value=True, key=ONE_PER_GROUP_KEY,
                help="The same plate reprinted across issues is one picture: the trainer would see it several "
                     "times as often as the others. Kept: the page where the picture covers most of the page. "
                     "The others are listed in the ZIP's export.json.")
    masks = st.checkbox("A mask with each image, for masked loss", value=layout in MASKED_LAYOUTS,
                        key=f"export_masks_{layout}", help=MASK_HELP[layout])
    repeats = 10
    if layout == "kohya":
        repeats = st.number_input("Repeats per epoch", 1, 10_000, 10, key="export_repeats",
                                  help="kohya: how often each image is seen per epoch (the folder's number).")
    try:
        return ExportSettings(mode=mode, fit=fit, size=int(size), quality=int(quality), layout=layout,
                              trigger=trigger.strip(), class_word=class_word.strip(), template=template,
                              repeats=int(repeats), pad_colour=pad_colour, crop=crop, duplicates=duplicates,
                              min_source_side=int(min_source), masks=masks), None
    except SettingsError as exc:
        return None, f"These settings cannot be exported: {common.escape_markdown(exc)}."


# -- preview and figures -----------------------------------------------------------------------


@st.cache_data(max_entries=128, show_spinner=False)
def cached_preview(item: tuple, settings_json: str, roots: tuple[str, ...]) -> Preview:
    """One image as exported; cached per image and settings."""
    return preview(Item(*item), ExportSettings.from_dict(json.loads(settings_json)), roots)


def previews_of(items: list[Item], settings: ExportSettings) -> list[Preview]:
    """These images exactly as the export makes them (read only inside the allowed folders)."""
    key = settings_key(settings)  # which pages go does not change how one looks
    roots = tuple(str(root) for root in common.allowed_roots([item.doc for item in items]))
    with scans_decoded_once():  # a page's pictures, side by side on a screen, decode its scan once
        return [cached_preview(dataclasses.astuple(item), key, roots) for item in items]


PREVIEW_WAITED = "export_preview_waited"
PREVIEW_DRAWN = "export_preview_drawn"  # this session has seen a preview: later screens are made in the run


def show_preview(items: list[Item], settings: ExportSettings) -> None:
    """Every image the export writes, a screen at a time, in the order written: each with its file name,
    size, source, enlargement and caption. Only the screen shown is drawn. On the session's first visit its
    images, each cut and shaped as exported (about 50 ms each on a busy server), are made a moment after the
    page is drawn, which says so meanwhile: the first open waits for the options and figures alone."""
    waited = common.waited(PREVIEW_WAITED)
    count = screens(items, PREVIEW_COUNT)
    if st.session_state.get(PREVIEW_SCREEN_KEY, 1) > count:  # the selection shrank (a setting, a decision)
        st.session_state[PREVIEW_SCREEN_KEY] = count
    heading = st.empty()
    screen = st.pagination(count, key=PREVIEW_SCREEN_KEY, max_visible_pages=7) if count > 1 else 1
    shown_items = screen_items(items, screen, PREVIEW_COUNT)
    first = (screen - 1) * PREVIEW_COUNT
    heading.caption(f"Images {first + 1:,}–{first + len(shown_items):,} of {len(items):,}, exactly as exported and "
                    f"in the order written: the size, margins and crops the trainer will see, each file's name and "
                    f"caption. Files go to {common.code_span(f'{image_folder(settings)}/')}.")
    if not waited and not st.session_state.get(PREVIEW_DRAWN):  # the first visit: the page drawn first
        st.info("Preparing the preview… Its images follow in a moment, each made exactly as exported.",
                icon=":material/hourglass_top:")
        common.after_this_run(PREVIEW_WAITED, ESTIMATE_RERUN_SECONDS, lambda: previews_of(shown_items, settings))
        return
    with st.spinner("Preparing the preview…"):
        results = previews_of(shown_items, settings)
    st.session_state[PREVIEW_DRAWN] = True
    for row_start in range(0, len(shown_items), PREVIEW_COLUMNS):
        for column, result in zip(st.columns(PREVIEW_COLUMNS), results[row_start:row_start + PREVIEW_COLUMNS]):
            with column:
                preview_card(result)


LEFT_OUT_SHOWN = 20  # images left out named under the preview; the ZIP's export.json lists every one


def show_left_out(items: list[Item], counted: Counted) -> None:
    """The images the export leaves out (a source under the minimum size, a page that cannot be read, a caption
    too long), each named with why: they are not in the preview."""
    if not counted.left_out:
        return
    with st.expander(f"{views.count(len(counted.left_out), 'image')} left out of the ZIP, and why"):
        for n, why in counted.left_out[:LEFT_OUT_SHOWN]:
            item = items[n]
            st.caption(f"{common.code_span(item.name + '.jpg')} ({common.escape_markdown(pathlib.Path(item.doc).name)}, "
                       f"page {page_number(item.page)}): {common.escape_markdown(why)}")
        if len(counted.left_out) > LEFT_OUT_SHOWN:
            st.caption(f"and {len(counted.left_out) - LEFT_OUT_SHOWN:,} more (the ZIP's export.json lists them all).")


def preview_card(result: Preview) -> None:
    item = result.item
    name = common.escape_markdown(pathlib.Path(item.doc).name)
    st.caption(common.code_span(f"{item.name}.jpg"))
    if result.too_small is not None:
        st.info(f"Left out: {name} page {page_number(item.page)}'s source is {result.too_small} px on its short "
                "side, under the minimum source size.", icon=":material/photo_size_select_small:")
        return
    if result.image is None:
        st.warning(f"{name} page {page_number(item.page)} cannot be read: {common.escape_markdown(result.problem)}")
        return
    image = result.image
    cropped = f" · picture {item.picture}" if item.picture is not None else " · cut to the picture" if result.crop else ""
    st.image(image.jpeg, caption=f"{image.width}×{image.height} · {name}, page {page_number(item.page)}{cropped}")
    if image.upscale >= ENLARGED:  # soft: the curator decides whether to keep such sources
        st.caption(f":orange[Enlarged {image.upscale:.1f}x from {image.source_side} px on the short side]")
    st.code(result.caption, language=None, wrap_lines=True)


@st.cache_data(max_entries=32, show_spinner=False)
def cached_counts(listed: tuple, _items: list[Item], settings_json: str, roots: tuple[str, ...]) -> Counted:
    """The export's figures counted on every image of the selection `listed` names (see `listings`; its
    `_items`, not hashed on every run: 5,000 items took a fifth of a second): what its ZIP will say."""
    return count_export(_items, ExportSettings.from_dict(json.loads(settings_json)), roots)


def counts_of(items: list[Item], listed: tuple, settings: ExportSettings) -> Counted | None:
    """Exact figures for the selection the export writes (`items`, named by `listed`); None past COUNTED_LIMIT
    images (then estimated)."""
    if len(items) > COUNTED_LIMIT:
        return None
    key = settings_key(settings)
    roots = tuple(str(root) for root in common.allowed_roots([item.doc for item in items]))
    with st.spinner("Counting the images…"):
        return cached_counts(listed, items, key, roots)


def show_figures(selection: Selection, listed: tuple, settings: ExportSettings | None,
                 rule: str) -> tuple[int, Counted | None]:
    """The figures of the export these settings write, each counted on the same selection the export takes;
    returns how many images it writes, and the figures where they were counted on every image."""
    items = selection.items
    overrides = len({(item.doc_id, item.page) for item in items if item.decided_by == "override"})  # pages
    counted = counts_of(items, listed, settings) if settings else None
    estimated = (listed, settings_key(settings)) if settings else None  # names the estimate
    guess = st.session_state.get(ESTIMATES, {}).get(estimated) if settings else None
    if settings and guess is None and common.waited(ESTIMATE_WAITED):  # drawn once without it: made now
        guess = make_estimate(estimated, items, counted, settings)
    about = "" if counted or (guess and guess.exact) else "about "
    written = counted.images if counted else guess.images if guess else len(items)
    too_small = counted.too_small if counted else guess.too_small if guess else 0
    # Two a row: four to a row cut "Near-duplicates left out" short in the preview's column at 1440 px.
    first, second = st.columns(2)
    third, fourth = st.columns(2)
    unit = "pictures" if settings and settings.crop == "pictures" else "pages"
    source = (f" They are the pictures of {selection.pages:,} kept pages, one image per picture."
              if settings and settings.crop == "pictures" else f" One image per kept page.")
    left = (f" Left out: {views.count(too_small, 'image')} under the minimum source size"
            + (f", {views.count(counted.unreadable, 'image')} that cannot be read or whose caption is too long"
               if counted and counted.unreadable else "") + "." if too_small or (counted and counted.unreadable) else "")
    first.metric("Images", f"{about}{written:,}",
                 help=f"The images the export writes: of {len(items):,} {unit} kept by the {rule} rule (with "
                      f"{overrides:,} pages decided by you on the Review page).{source}{left}")
    if selection.left_out or not selection.duplicates:
        third.metric("Near-duplicates left out", f"{len(selection.left_out):,}",
                     help="Kept pages whose picture is a near-identical copy of another exported page's; one page "
                          "per group is exported. See the groups on the Review page (filter Near-duplicates).")
    else:
        third.metric("Near-duplicates kept", f"{selection.duplicates:,}",
                     help="Copies of another exported page's picture, exported too: one page per group is off.")
    if settings is None:
        return written, counted
    if guess is None:  # made a moment after this run: the page is drawn first
        second.metric("Estimated size", "estimating…", help=f"{ESTIMATE_SAMPLE} of the images are being encoded "
                      "exactly as exported, spread over all of them; the size follows in a moment.")
        if counted:
            fourth.metric("Enlarged", f"{counted.enlarged:,}", help=enlarged_help(counted))
        estimate_after(estimated, items, counted, settings)
        return written, counted
    second.metric("Estimated size", human_size(guess.bytes) if guess.bytes else "—",
                  help=f"From {guess.sampled:,} of the images encoded exactly as exported, spread over all of them, "
                       f"each image of the {written:,} written weighed by its thumbnail where the manifest keeps "
                       f"them: a sample, so it can miss (by 3 % at most on eight exports of real pages; over random "
                       f"samples of real pictures, by 3.6 % at the median and 8 % in one in ten).")
    if counted:
        fourth.metric("Enlarged", f"{counted.enlarged:,}", help=enlarged_help(counted))
    else:
        fourth.metric("Enlarged", f"≈{guess.enlarged:,}",
                      help=f"Estimated from {guess.sampled:,} images (past {COUNTED_LIMIT:,} images they are not "
                           f"counted one by one): up to {guess.largest:.1f}x" + (f", about {guess.twice:,} more "
                           "than 2x" if guess.twice else "") + ". Set a minimum source size to leave them out.")
    if too_small:
        st.caption(f"{about.capitalize()}{views.count(too_small, 'image')} left out: their source is under the "
                   f"minimum source size. {views.count(written, 'image')} written.")
    if guess.bytes and guess.bytes > DOWNLOAD_LIMIT:
        st.caption(f"Larger than {human_size(DOWNLOAD_LIMIT)}: it will be on the server's disk rather than offered "
                   "as a browser download.")
    return written, counted


def settings_key(settings: ExportSettings) -> str:
    """The settings as the previews' cache knows them: which pages go does not change how one looks."""
    return json.dumps({k: v for k, v in settings.as_dict().items() if k != "duplicates"}, sort_keys=True)


ESTIMATES = "export_estimates"  # this session's size estimates, by selection and settings
ESTIMATES_KEPT = 8
ESTIMATE_WAITED = "export_estimate_waited"
ESTIMATE_RERUN_SECONDS = 0.1


def estimate_after(estimated: tuple, items: list[Item], counted: Counted | None, settings: ExportSettings) -> None:
    """The size estimate encodes ESTIMATE_SAMPLE images spread over the export, besides the preview's screen (a
    second on real scans, more on a loaded server): it is made a moment after the page is drawn, which says so,
    and the page is drawn again with it."""
    common.after_this_run(ESTIMATE_WAITED, ESTIMATE_RERUN_SECONDS,
                          lambda: make_estimate(estimated, items, counted, settings))


def make_estimate(estimated: tuple, items: list[Item], counted: Counted | None, settings: ExportSettings):
    """The estimate, kept for the session under `estimated` (the selection and settings)."""
    estimates = st.session_state.setdefault(ESTIMATES, {})
    with common.require_manifest() as manifest:  # the thumbnails the estimate weighs the images by
        estimates[estimated] = estimate_export(items, counted, lambda chosen: previews_of(chosen, settings),
                                               lambda chosen: thumbnail_sizes(manifest, chosen))
    while len(estimates) > ESTIMATES_KEPT:
        estimates.pop(next(iter(estimates)))
    return estimates[estimated]


def enlarged_help(counted: Counted) -> str:
    if not counted.enlarged:
        return "No image is enlarged from a smaller source: each is as sharp as its scan."
    spread = (f"{counted.smallest:.1f}x" if f"{counted.smallest:.1f}" == f"{counted.largest:.1f}"
              else f"{counted.smallest:.1f}-{counted.largest:.1f}x")
    return (f"Images whose source has fewer pixels than the export, counted on every image written: {spread}"
            + (f", {counted.twice:,} more than 2x, which come out soft" if counted.twice else "")
            + ". Set a minimum source size to leave them out.")


def human_size(size: int) -> str:
    for unit in ("bytes", "KB", "MB", "GB"):
        if size < 1000 or unit == "GB":
            return f"{size:,.0f} {unit}" if unit == "bytes" else f"{size:,.1f} {unit}"
        size /= 1000
    return ""


# -- the job ------------------------------------------------------------------------------------


def launch_button(db: pathlib.Path, args: list[str], out: pathlib.Path, count: int):
    label = f"Export {views.count(count, 'image')}" + (f" (replaces {common.escape_markdown(out.name)})" if out.exists() else "")
    if not st.button(label, type="primary", icon=":material/archive:", disabled=auth.locked(), help=auth.help_for()):
        return
    if not auth.require_curator():
        return
    with common.open_manifest() as manifest:
        process = jobs.launch(pathlib.Path(os.path.abspath(db)), "export", *args)
        job = jobs.wait_for_job(manifest, "export", process, timeout=30)
        latest = manifest.latest_job("export")
    if job is None and (latest is None or latest["pid"] != process.pid):
        st.error(f"The export process ended before it began (exit code {process.poll()}). "
                 f"Its log is in {common.code_span(db.parent / 'logs')}.")
        return
    st.session_state[RUNNING_KEY] = True
    st.rerun()


def export_panel(running: bool) -> None:
    """The running export's progress, refreshing itself, or the last export's outcome."""
    if running:
        st.session_state[RUNNING_KEY] = True

    @st.fragment(run_every=POLL_SECONDS if running else None)
    def panel():
        # A fragment's own reruns happen outside run_page: it shows its problems itself.
        try:
            with common.open_manifest() as manifest:
                job = manifest.latest_job("export")
        except Exception as exc:
            common.log.exception("reading the export job failed")
            st.error(f"Reading the export's progress failed: {common.escape_markdown(exc)}. The export itself goes "
                     "on; reload to retry.")
            return
        if job is None:
            return
        if job["status"] != "running" and st.session_state.pop(RUNNING_KEY, False):
            st.rerun()  # it just ended: redraw the whole page (button, figures)
        show_job(job)

    panel()


def show_job(job) -> None:
    args = json.loads(job["args"] or "{}")
    out = pathlib.Path(args.get("out", ""))
    name = common.escape_markdown(out.name)
    if job["status"] == "running":
        progress = views.job_progress(job)
        rate = f"{job['rate']:.1f} images/s" if job["rate"] else "measuring speed…"
        with st.container(border=True):
            common.job_progress_bar(job, f"Exporting {name}: {progress['done']:,} of {progress['total']:,} images · {rate}",
                               "Stopping… nothing will be written.")
        return
    finished = (job["finished_at"] or "")[:19].replace("T", " ")
    message = common.escape_markdown(job["message"] or "")  # it may quote a document's name or error
    if job["status"] == "done":
        st.success(f"Export finished {finished} UTC: {message}", icon=":material/check_circle:")
        offer_download(out)
    elif job["status"] == "stopped":
        st.info(f"Export stopped {finished} UTC; nothing was written.", icon=":material/pause_circle:")
    elif job["status"] == "interrupted":
        st.warning(f"The export did not finish: {message}. Nothing was written; export again.",
                   icon=":material/warning:")
    else:
        st.error(f"The export failed: {message or 'no reason was recorded'}. Nothing was written. The log is in "
                 f"{common.code_span(common.db_path().parent / 'logs')}.", icon=":material/error:")


def offer_download(out: pathlib.Path) -> None:
    if not out.is_file():
        st.warning(f"{common.code_span(out)} is no longer there; export again.")
        return
    size = out.stat().st_size
    if size <= DOWNLOAD_LIMIT:
        # A callable: the file is read only when someone clicks, not on every rerun.
        st.download_button(f"Download {common.escape_markdown(out.name)} ({human_size(size)})",
                           data=lambda: out.read_bytes(),
                           file_name=out.name, mime="application/zip", icon=":material/download:",
                           type="primary", on_click="ignore")
        st.caption(f"On the server: {common.code_span(out)}")
    else:
        st.info(f"{common.escape_markdown(out.name)} is {human_size(size)}, too large to pass through a browser "
                f"download. It is on the server at {common.code_span(out)}: copy it from there (scp, rsync, or your "
                "host's file browser).",
                icon=":material/folder_zip:")


common.run_page(main)
