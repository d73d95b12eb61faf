"""A manifest keeps each picture's embedding with the box it was computed for: read back as it was stored, asked
for again when the box is redrawn or moved by a rescore, kept when a rescore finds the same box, gone with its
picture."""

import json

import numpy as np
import pytest

from curation import Manifest
from curation.manifest import history, picture_embeddings
from curation.scoring.result import PageResult

ENGRAVING = (40, 30, 400, 330, 5.2)   # reference pixels and square inches
STOCK_CUT = (420, 500, 520, 600, 0.48)


def scored(manifest, doc_id, page, boxes):
    features = {"ink_tone": 0.6, "picture_area": max((b[4] for b in boxes), default=0.0),
                "picture_count": len(boxes), "pictures": json.dumps([list(b) for b in boxes])}
    manifest.save_pages(doc_id, [PageResult(page=page, status="ok", sigma=60.0, width=1000, height=1400,
                                            features=features)])


def vector(seed):
    return np.random.default_rng(seed).normal(size=picture_embeddings.DIMENSIONS).astype(np.float32)


@pytest.fixture
def manifest(tmp_path, monkeypatch):
    monkeypatch.setenv(history.USER_VARIABLE, "ana")
    with Manifest(tmp_path / "m.sqlite") as m:
        doc_id = m.register_document(sha256="a" * 64, path="/archive/a.pdf", size=1)["id"]
        scored(m, doc_id, 0, [ENGRAVING, STOCK_CUT])
        m.set_document(doc_id, status="ok", pages=1)
        yield m


def embed_all(manifest):
    todo = picture_embeddings.missing(manifest.conn)
    with manifest.transaction():
        picture_embeddings.store(manifest.conn, [(row["id"], (row["bx0"], row["by0"], row["bx1"], row["by1"]),
                                                  vector(row["id"])) for row in todo])
    return todo


def test_embeddings_read_back_in_half_precision_and_only_missing_ones_are_asked_for(manifest):
    todo = embed_all(manifest)
    assert [row["number"] for row in todo] == [1, 2]
    ids, rows = picture_embeddings.read(manifest.conn)
    assert list(ids) == [row["id"] for row in todo] and rows.dtype == np.float32
    assert np.allclose(rows[0], vector(todo[0]["id"]), atol=1e-2)
    assert picture_embeddings.missing(manifest.conn) == []
    assert list(picture_embeddings.read(manifest.conn, [todo[1]["id"]])[0]) == [todo[1]["id"]]


def test_a_redrawn_box_asks_again_and_undoing_it_finds_the_old_embedding(manifest):
    first, _ = embed_all(manifest)
    manifest.set_picture_box(first["id"], (50, 40, 300, 300))
    assert [row["id"] for row in picture_embeddings.missing(manifest.conn)] == [first["id"]]
    assert first["id"] not in picture_embeddings.read(manifest.conn)[0]
    manifest.set_picture_box(first["id"], None)
    assert picture_embeddings.missing(manifest.conn) == []


def test_a_rescore_keeps_embeddings_of_the_same_boxes_and_drops_them_with_their_picture(manifest):
    embed_all(manifest)
    doc_id = manifest.documents()[0]["id"]
    scored(manifest, doc_id, 0, [ENGRAVING, STOCK_CUT])
    assert picture_embeddings.missing(manifest.conn) == []
    moved = (40, 30, 420, 350, 5.9)
    scored(manifest, doc_id, 0, [moved])  # the engraving's box moved; the stock cut is no longer found
    assert len(picture_embeddings.missing(manifest.conn)) == 1
    left = manifest.conn.execute("SELECT COUNT(*) FROM picture_embeddings").fetchone()[0]
    assert left == manifest.conn.execute("SELECT COUNT(*) FROM pictures").fetchone()[0]


def test_a_vector_of_the_wrong_length_is_refused(manifest):
    with pytest.raises(ValueError, match="1280"):
        picture_embeddings.store(manifest.conn, [(1, (0, 0, 1, 1), np.zeros(10))])
