"""python -m inference: the vet scanner from the command line.

A thin layer over the library: each command parses its options, calls one
function of `inference`, and prints the result.
"""

import json
import sys

import click

from . import (
    InferenceError,
    classify,
    classify_folder,
    list_models,
    models_dir,
    read_model_info,
    rows_to_csv,
    write_demo_model,
)

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
    weights are read from disk only, never downloaded.
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
    model, label_1, score_1, ..., infer_seconds, error.

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
            f"No models in {folder}. Create the demo one: "
            f"python -m inference demo-model {folder}/demo-vit"
        )
    for model in models:
        if model.problem:
            click.echo(f"{model.name}: unusable: {model.problem}")
        else:
            demo = " (untrained demo)" if model.is_demo else ""
            click.echo(f"{model.name}{demo}: {len(model.labels)} labels: {', '.join(model.labels)}")


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
    for prediction in result["top"]:
        click.echo(f"  {prediction['score']:6.1%}  {prediction['label']}")
    seconds = result["seconds"]
    demo = " · untrained demo model: predictions mean nothing" if result["is_demo"] else ""
    click.echo(
        f"  {result['device']} · load {seconds['load']:.2f} s · infer {seconds['infer']:.2f} s"
        f" · unload {seconds['unload']:.2f} s{demo}"
    )
