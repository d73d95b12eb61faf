"""Kinds learned per archive (curation.decisions.picture_kinds): a kind a curator sets on pictures is suggested for
the pictures of the archive that look like them, before the shipped model's suggestion, and Review says where a
suggestion came from; marks that disagree suggest nothing, and a kind set back or undone teaches nothing any more;
the export's {kind} follows the learned kind."""

import numpy as np
import pytest

from curation import Manifest
from curation.captions.best import kind_of, kind_source
from curation.decisions import picture_kinds
from curation.decisions.picture_kinds import KIND_LIKE, KindRule, learned_kinds, suggested_like
from curation.decisions.picture_similarity import EmbeddingKeeper
from curation.manifest import history, picture_embeddings
from curation.manifest.pictures import store_suggested_kinds
from curation.views import picture_rows
from curation.views import picture_views as pv
from test_export_pictures import manifest as exported_manifest, pages, scored_db  # noqa: F401 (fixtures)
from test_picture_embeddings import scored
from test_picture_kinds import kinds_in

# Two looks of one archive: six halftones (pages 0-2) and four engravings (page 3), each a small step from its
# look's own direction: alike within a look (cosine about 0.95), far apart across (about 0).
HALFTONES, ENGRAVINGS = 6, 4
BOXES = [(40, 30, 400, 330, 5.2), (420, 500, 520, 600, 0.48)]


def look(direction: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    base = np.random.default_rng(direction).normal(size=picture_embeddings.DIMENSIONS)
    return (base + 0.3 * rng.normal(size=picture_embeddings.DIMENSIONS)).astype(np.float32)


@pytest.fixture
def archive(tmp_path, monkeypatch):
    """A manifest of ten pictures, embedded, every one suggested "engraving" by the shipped model; with the ids of
    the halftones and of the engravings."""
    monkeypatch.setenv(history.USER_VARIABLE, "ana")
    with Manifest(tmp_path / "m.sqlite") as m:
        doc_id = m.register_document(sha256="a" * 64, path="/archive/a.pdf", size=1)["id"]
        for page in range(5):
            scored(m, doc_id, page, BOXES)
        m.set_document(doc_id, status="ok", pages=5)
        rows = sorted(picture_embeddings.missing(m.conn), key=lambda row: row["id"])
        halftones, engravings = [r["id"] for r in rows[:HALFTONES]], [r["id"] for r in rows[HALFTONES:][:ENGRAVINGS]]
        with m.transaction():
            picture_embeddings.store(m.conn, [(row["id"], (row["bx0"], row["by0"], row["bx1"], row["by1"]),
                                               look(1 if row["id"] in halftones else 2, row["id"])) for row in rows])
            store_suggested_kinds(m.conn, [(row["id"], "engraving") for row in rows])
        yield m, halftones, engravings


def test_a_kind_set_on_three_pictures_is_suggested_for_the_like_ones_before_the_shipped_models(archive):
    m, halftones, engravings = archive
    m.set_picture_kinds([(i, "halftone") for i in halftones[:3]])
    learned = learned_kinds(m, halftones + engravings)
    assert set(learned) == set(halftones[3:])  # the marked ones keep their own, the engravings look otherwise
    assert {(k.kind, k.like) for k in learned.values()} == {("halftone", 3)}

    shown = {row["id"]: row for row in pv.screen(m, None, limit=20).rows}
    assert kind_of(shown[halftones[4]]) == "halftone"
    assert kind_source(shown[halftones[4]]) == "suggested: halftone, like 3 you marked"
    assert kind_source(shown[halftones[0]]) == "halftone, set by a curator"
    assert kind_of(shown[engravings[0]]) == "engraving"
    assert kind_source(shown[engravings[0]]) == "suggested: engraving, from its look"

    listed = list(picture_rows(m))
    assert [row["kind_by"] for row in listed] == ["curator"] * 3 + ["learned"] * 3 + ["suggested"] * 4
    assert [row["kind"] for row in listed] == ["halftone"] * 6 + ["engraving"] * 4


def test_five_pictures_marked_halftone_teach_the_like_ones_and_not_the_other_look(archive):
    """A curator who sets "halftone" on five pictures gets it suggested on the like ones (the issue's example)."""
    m, halftones, engravings = archive
    m.set_picture_kinds([(i, "halftone") for i in halftones[:5]])
    learned = learned_kinds(m, halftones + engravings)
    assert {i: (k.kind, k.like) for i, k in learned.items()} == {halftones[5]: ("halftone", 5)}


def test_a_mark_of_another_kind_nearly_as_close_leaves_the_picture_unsuggested_under_a_margin():
    """The rule's margin: the suggested kind's nearest mark must be that much nearer than any other kind's."""
    kinds = np.array(["woodcut", "woodcut", "engraving"], object)
    near_pair = np.array([0.80, 0.74, 0.78])  # two woodcuts close, an engraving nearly as close
    assert KindRule(0.725, 0.0).learned(near_pair, kinds).kind == "woodcut"  # two of three close agree
    assert KindRule(0.725, 0.05).learned(near_pair, kinds) is None  # 0.80 against 0.78: not 0.05 apart
    assert KindRule(0.725, 0.05).learned(np.array([0.80, 0.74, 0.70]), kinds).kind == "woodcut"
    assert KindRule(0.725, 0.0).learned(np.array([0.72, 0.70, 0.10]), kinds) is None  # none close enough


def test_marking_one_picture_says_how_many_like_it_it_taught(archive, monkeypatch):
    m, halftones, engravings = archive
    monkeypatch.setattr("curation.decisions.picture_kinds.KEEPER", EmbeddingKeeper())
    m.set_picture_kinds([(halftones[0], "halftone")])
    assert sorted(suggested_like(m, halftones[0])) == sorted(halftones[1:])
    assert suggested_like(m, engravings[0]) == []  # not marked: it taught nothing


def test_close_marks_that_disagree_suggest_nothing_and_a_kind_set_back_or_undone_teaches_nothing(archive):
    m, halftones, _ = archive
    m.set_picture_kinds([(halftones[0], "halftone")])
    m.set_picture_kinds([(halftones[1], "woodcut")])
    assert learned_kinds(m, halftones[2:]) == {}  # one each: the curator's marks do not agree
    m.set_picture_kinds([(halftones[2], "halftone")])
    assert {k.kind for k in learned_kinds(m, halftones[3:]).values()} == {"halftone"}  # two against one
    m.undo()
    m.set_picture_kinds([(halftones[1], None)])  # the woodcut mark back to the suggestion
    assert {(k.kind, k.like) for k in learned_kinds(m, halftones[1:]).values()} == {("halftone", 1)}
    m.undo()  # the woodcut comes back: a tie again
    assert learned_kinds(m, halftones[2:]) == {}


def test_a_picture_only_somewhat_like_a_marked_one_keeps_the_shipped_suggestion(archive):
    m, halftones, engravings = archive
    marked, other = halftones[0], engravings[0]
    vector = look(1, marked)
    halfway = vector / np.linalg.norm(vector) + look(2, other) / np.linalg.norm(look(2, other))  # cosine about 0.7
    row = m.picture(other)
    with m.transaction():
        picture_embeddings.store(m.conn, [(other, (row["bx0"], row["by0"], row["bx1"], row["by1"]), halfway)])
    m.set_picture_kinds([(marked, "halftone")])
    cosine = float(halfway @ vector / np.linalg.norm(halfway) / np.linalg.norm(vector))
    assert cosine < KIND_LIKE
    assert learned_kinds(m, [other]) == {}


def test_the_export_captions_a_picture_with_the_kind_learned_from_the_like_one(exported_manifest, tmp_path):
    m = exported_manifest
    first, second = m.picture_rows(order="x.number")
    with m.transaction():
        picture_embeddings.store(m.conn, [(row["id"], (row["bx0"], row["by0"], row["bx1"], row["by1"]), look(1, n))
                                          for n, row in enumerate((first, second))])
    store_suggested_kinds(m.conn, [(first["id"], "halftone"), (second["id"], "halftone")])
    assert kinds_in(m, tmp_path / "a.zip") == ["halftone", "halftone"]
    m.set_picture_kinds([(first["id"], "woodcut")])
    assert kinds_in(m, tmp_path / "b.zip") == ["woodcut", "woodcut"]  # the curator's, and learned from it


def test_many_pictures_learn_from_the_embeddings_held_in_memory_alike_and_a_new_mark_counts_at_once(
        archive, monkeypatch):
    """Past a screen's worth (FEW) the pictures are compared with the manifest's embeddings held in memory, and
    what they learned is kept: the same kinds as read by id, and a mark set since is not missed."""
    m, halftones, engravings = archive
    monkeypatch.setattr(picture_kinds, "FEW", 0)
    monkeypatch.setattr(picture_kinds, "KEEPER", EmbeddingKeeper())
    m.set_picture_kinds([(i, "halftone") for i in halftones[:2]])
    assert {i: (k.kind, k.like) for i, k in learned_kinds(m, halftones + engravings).items()} == {
        i: ("halftone", 2) for i in halftones[2:]}
    m.set_picture_kinds([(engravings[0], "woodcut")])
    learned = learned_kinds(m, halftones + engravings)
    assert {i: k.kind for i, k in learned.items()} == {**{i: "halftone" for i in halftones[2:]},
                                                       **{i: "woodcut" for i in engravings[1:]}}
    m.set_picture_kinds([(engravings[0], None)])
    assert set(learned_kinds(m, halftones + engravings)) == set(halftones[2:])
