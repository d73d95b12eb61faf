"""A picture's kind suggested from its look (curation.pictures.kind): a model learned from generated crops tells a
halftone screen from a line drawing; where it is unsure it suggests nothing and the caption's {kind} is the class
word; the picture job stores each picture's suggestion; the curator's kind always wins; the shipped model and its
record agree with the recipe run on the real pages (skipped where they are absent)."""

import pathlib

import cv2
import numpy as np
import pymupdf
import pytest

from conftest import line_drawing
from curation.export import ExportSettings
from curation.export.captions import render_caption
from curation.manifest.pictures import store_suggested_kinds
from curation.pictures.kind import KINDS
from curation.pictures import kind_train
from curation.pictures.embedding import fit_on_paper
from curation.pictures.kind import KIND_FILE, LOOKS, RECIPE_FILE, KindModel, look_measures, shipped_model
from curation.runs import embed as picture_job
from test_export_pictures import exported, manifest, pages, scored_db  # noqa: F401 (fixtures)
from test_picture_job import with_pictures

REALDATA = pathlib.Path(__file__).resolve().parents[2] / "shared" / "realdata"
SIDE = 216  # a 1.5-inch picture at the reference 144 dpi


def halftone_screen(side: int, rng, period: int = 6) -> np.ndarray:
    """A photograph's tones printed through a dot screen: ink dots whose size follows the tone."""
    tone = cv2.GaussianBlur(rng.random((side, side)).astype(np.float32), (0, 0), side / 12)
    tone = 0.15 + 0.7 * (tone - tone.min()) / max(float(tone.max() - tone.min()), 1e-6)
    y, x = np.mgrid[0:side, 0:side]
    screen = (np.cos(2 * np.pi * x / period) * np.cos(2 * np.pi * y / period) + 1) / 2
    return np.where(tone > screen, 255, 0).astype(np.uint8)


def as_input(image: np.ndarray) -> np.ndarray:
    """A picture as the picture job holds it: shrunk to the reference resolution, fitted to the network's input."""
    return fit_on_paper(cv2.resize(image, (SIDE, SIDE), interpolation=cv2.INTER_AREA))


def generated(kind: str, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return halftone_screen(4 * SIDE, rng, period=6 + seed % 3) if kind == "halftone" else line_drawing(4 * SIDE, rng)


@pytest.fixture(scope="module")
def learned() -> KindModel:
    """A model learned from generated halftones and line drawings, each seed a source of its own."""
    examples = [kind_train.Example(f"{kind}-{seed}", f"generated-{seed}", kind, True, True, as_input(generated(kind, seed)))
                for kind in ("halftone", "drawing") for seed in range(6)]
    cutoff = kind_train.best_cutoff(examples, "look")
    model = kind_train.fit(examples, "look", cutoff)
    assert np.array_equal(kind_train.fit(examples, "look", cutoff).coef, model.coef)  # deterministic
    return model


def test_a_model_learned_from_generated_crops_tells_a_halftone_screen_from_a_line_drawing(learned):
    fresh = [as_input(generated(kind, seed)) for kind in ("halftone", "drawing") for seed in (100, 101, 102)]
    assert learned.suggest(fresh) == ["halftone"] * 3 + ["drawing"] * 3
    screen, drawing = look_measures(fresh[0]), look_measures(fresh[3])
    mid_tones = LOOKS.index("mid_tones")
    assert screen[mid_tones] > drawing[mid_tones]  # a screen reads as its tone, a drawing as ink on paper


def test_where_the_model_is_unsure_or_the_crop_is_blank_nothing_is_suggested(learned):
    unsure = KindModel(learned.classes, learned.mean, learned.scale, learned.coef, learned.intercept, 1.01)
    assert unsure.suggest([as_input(generated("halftone", 7))]) == [None]
    assert look_measures(np.full((224, 224), 250, np.uint8)) is None
    assert learned.suggest([np.full((224, 224), 250, np.uint8), as_input(generated("drawing", 7))]) == [None, "drawing"]
    assert learned.suggest([]) == []


def test_unsure_leaves_the_class_word_in_the_caption():
    assert render_caption("{trigger}, {kind}", trigger="ohwx", class_word="illustration", kind=None) == "ohwx, illustration"
    assert render_caption("{trigger}, {kind}", trigger="ohwx", class_word="illustration", kind="woodcut") == "ohwx, woodcut"


def kinds_in(manifest, path) -> list[str]:
    settings = ExportSettings(crop="pictures", size=64, class_word="illustration", template="{trigger}, {kind}")
    rows, _, _ = exported(manifest, path, settings)
    return [row["caption"].removeprefix("ohwx, ") for row in rows if row["picture"]]


def test_the_curators_kind_always_wins_over_the_suggestion(manifest, tmp_path):
    first, second = manifest.picture_rows(order="x.number")
    assert kinds_in(manifest, tmp_path / "a.zip") == ["illustration", "illustration"]  # nothing suggested yet
    store_suggested_kinds(manifest.conn, [(first["id"], "halftone"), (second["id"], None)])
    assert kinds_in(manifest, tmp_path / "b.zip") == ["halftone", "illustration"]
    manifest.set_picture_kinds([(first["id"], "woodcut"), (second["id"], "map")])
    store_suggested_kinds(manifest.conn, [(first["id"], "engraving"), (second["id"], "diagram")])  # a later job
    assert kinds_in(manifest, tmp_path / "c.zip") == ["woodcut", "map"]
    manifest.set_picture_kinds([(first["id"], None)])  # back to the suggestion
    assert kinds_in(manifest, tmp_path / "d.zip") == ["engraving", "map"]


def test_the_picture_job_stores_each_pictures_suggestion_from_the_input_it_embeds(tmp_path, monkeypatch, learned):
    pdf = tmp_path / "plates.pdf"
    with pymupdf.open() as doc:  # 3 x 4 inches: 432 x 576 reference pixels
        page = doc.new_page(width=216, height=288)
        for (x, y), kind in (((18, 18), "halftone"), ((18, 150), "drawing")):
            ok, png = cv2.imencode(".png", generated(kind, 50))
            page.insert_image(pymupdf.Rect(x, y, x + 108, y + 108), stream=png.tobytes())
        doc.save(pdf)
    db = tmp_path / "manifest.sqlite"
    with_pictures(db, pdf, {0: [(36, 36, 252, 252), (36, 300, 252, 516)]}).close()
    monkeypatch.setattr(picture_job, "missing_parts", lambda: None)
    monkeypatch.setattr(picture_job.embedding, "device", lambda: "cpu")
    monkeypatch.setattr(picture_job.embedding, "embed_inputs", lambda inputs: np.ones((len(inputs), 1280), np.float32))
    monkeypatch.setattr(picture_job, "suggest_kinds", learned.suggest)
    with picture_job.Manifest(db) as m:
        report = picture_job.embed_pictures(m, workers=1, make_executor=picture_job.cf.ThreadPoolExecutor,
                                            network=picture_job.InProcessNetwork)
        assert report.embedded == 2
        stored = [row["kind_suggested"] for row in m.conn.execute("SELECT kind_suggested FROM pictures ORDER BY number")]
    assert stored == ["halftone", "drawing"]


def test_the_shipped_model_suggests_only_known_kinds_and_its_record_says_how_it_was_made():
    model = shipped_model()
    assert set(model.classes) <= set(KINDS) and 0 < model.cutoff < 1
    assert KIND_FILE.stat().st_size < 20_000
    for kind in model.suggest([as_input(generated("halftone", 3)), as_input(generated("drawing", 3))]):
        assert kind is None or kind in KINDS
    record = __import__("json").loads(RECIPE_FILE.read_text())
    assert record["model"]["cutoff"] == model.cutoff and tuple(record["model"]["classes"]) == model.classes


@pytest.mark.skipif(not (REALDATA / "pictures.jsonl").exists(), reason=f"no labelled real pages at {REALDATA}")
def test_the_record_holds_the_recipes_figures_leave_one_source_out():
    examples = kind_train.read_all(REALDATA, [p for p in [REALDATA.parent / "boxed"] if p.exists()], None, embed=False)
    record = __import__("json").loads(RECIPE_FILE.read_text())["leave_one_source_out"]["look"]
    results = kind_train.leave_one_source_out(examples, "look")
    _, pooled, mean = kind_train.table(results)
    assert (pooled.right, pooled.wrong, pooled.unsure) == tuple(record["pooled"][k] for k in ("right", "wrong", "unsure"))
    assert round(mean, 3) == record["mean_right_share_over_sources"]
