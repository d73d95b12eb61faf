"""The one definition of a decision, for a page and for a picture, as SQL over the manifest's tables.

Decisions are never stored: a page's decision is the curator's override where one exists, else what its
pictures say where a curator decided one of them (included, excluded, added, deleted or redrew one), else
the rule at the current cutoffs. The rule is a setting (RULES); every query binds Manifest.decision_params().

Aliases: p pages, o the page's override, x a picture. A page whose pictures a curator touched carries two
figures kept by the writer (curation.manifest.pictures): `pictures_included`, how many of its pictures are
included by a curator, and `pictures_auto_area`, the largest picture left to the rule; on other pages both
are NULL and the rule reads the scorer's own figures, so a manifest without picture edits decides as before.

A picture the learned verdict scored (`x.score`) counts only at or above the score cutoff (`picture_score_min`),
under every rule: ingest keeps the candidates it scored below its own cutoff too, so that a lower cutoff shows
what it would add. A page's figures (`p.picture_area`, its largest picture) are those of the pictures the saved
score cutoff admits; a score cutoff being tried reads the page's largest admitted picture from its pictures.
"""

DEFAULT_PICTURE_SCORE_MIN = 0.2  # the shipped verdict's own cutoff (curation/pictures/verdict.npz)
SAVED_SCORE_MIN_SQL = ("COALESCE((SELECT CAST(value AS REAL) FROM settings WHERE key = 'picture_score_min'), "
                       f"{DEFAULT_PICTURE_SCORE_MIN!r})")


def score_admits(alias: str = "x", cutoff: str = ":picture_score_min") -> str:
    """Whether the score cutoff lets picture `alias` count: unscored (the rule-based finder's, a curator's),
    at or above the cutoff, or its box redrawn by a curator (who said there is a picture there)."""
    return f"({alias}.score IS NULL OR {alias}.score >= {cutoff} OR {alias}.fx0 IS NOT NULL)"


# The pictures a page shows outlined: any but a candidate under the saved score cutoff that no curator included.
OUTLINED_SQL = f"(x.keep = 1 OR {score_admits('x', SAVED_SCORE_MIN_SQL)})"

# The page's largest picture the score cutoff admits: the stored figure at the saved cutoff (and on pages
# scored before features, NULL); at another cutoff, read from its pictures.
PAGE_AREA_SQL = (
    "CASE WHEN :picture_score_min = :picture_score_saved OR p.picture_area IS NULL THEN p.picture_area "
    "ELSE COALESCE((SELECT MAX(y.area) FROM pictures y WHERE y.doc_id = p.doc_id AND y.page = p.page "
    f"AND y.rank IS NOT NULL AND NOT y.added AND {score_admits('y')}), 0) END"
)

# Pages scored before features existed fall back to sigma; the model rule falls back to the picture rule
# where it has no suggestion.
UNSCORED_PICTURE_RULE_SQL = (  # the decision before scores counted (the schema's released migrations)
    "COALESCE(p.picture_area >= :picture_area_min AND p.ink_tone >= :ink_tone_min, p.sigma > :threshold)"
)
PICTURE_RULE_SQL = UNSCORED_PICTURE_RULE_SQL.replace("p.picture_area", f"({PAGE_AREA_SQL})")
MODEL_SQL = "(SELECT sg.keep FROM suggestions sg WHERE sg.doc_id = p.doc_id AND sg.page = p.page)"
# The rule's own decision, sigma or picture (the model is compared against it, never against itself).
BASE_RULE_SQL = f"CASE :rule WHEN 'sigma' THEN p.sigma > :threshold ELSE {PICTURE_RULE_SQL} END"


def _area_rule(area: str) -> str:
    return f"({area} >= :picture_area_min AND p.ink_tone >= :ink_tone_min)"


def _rule_with_area(area: str) -> str:
    """The rule, with the picture rule reading `area` as the page's largest picture."""
    return (f"CASE :rule WHEN 'sigma' THEN p.sigma > :threshold "
            f"WHEN 'model' THEN COALESCE({MODEL_SQL}, {_area_rule(area)}) ELSE {_area_rule(area)} END")


# A page whose pictures a curator touched is kept when one of them is included, or when the rule keeps
# the pictures left to it; a page with every picture excluded or deleted is not.
# Its largest picture left to the rule is the stored figure at the saved score cutoff; at another, read from
# its pictures as the writer reads them (page_figures.refresh_edited_sql).
PAGE_AUTO_AREA_SQL = (
    "CASE WHEN :picture_score_min = :picture_score_saved THEN p.pictures_auto_area "
    "ELSE (SELECT MAX(CASE WHEN NOT y.deleted AND NOT y.added AND y.keep IS NULL "
    f"AND {score_admits('y')} THEN COALESCE(y.fixed_area, y.area) END) FROM pictures y "
    "WHERE y.doc_id = p.doc_id AND y.page = p.page) END"
)
UNSCORED_EDITED_PAGE_SQL = f"(p.pictures_included > 0 OR COALESCE({_rule_with_area('p.pictures_auto_area')}, 0))"
EDITED_PAGE_SQL = UNSCORED_EDITED_PAGE_SQL.replace("p.pictures_auto_area", f"({PAGE_AUTO_AREA_SQL})")


def _keep(picture_rule: str, edited_page: str = EDITED_PAGE_SQL) -> str:
    return (f"COALESCE(o.keep, CASE WHEN p.pictures_included IS NOT NULL THEN {edited_page} "
            f"WHEN :rule = 'model' THEN COALESCE({MODEL_SQL}, {picture_rule}) "
            f"ELSE CASE :rule WHEN 'sigma' THEN p.sigma > :threshold ELSE {picture_rule} END END, 0)")


KEEP_SQL = _keep(PICTURE_RULE_SQL)
# Pages where the learned model and the rule differ: the curator reviews these first.
DISAGREES_SQL = f"{MODEL_SQL} != COALESCE({BASE_RULE_SQL}, 0)"
DECIDED_BY_SQL = ("CASE WHEN o.keep IS NOT NULL THEN 'override' "
                  "WHEN p.pictures_included IS NOT NULL THEN 'pictures' ELSE 'threshold' END")

# A picture's box and size as the curator left them: the redrawn box where there is one.
PICTURE_BOX_SQL = ("COALESCE(x.fx0, x.x0) AS bx0, COALESCE(x.fy0, x.y0) AS by0, COALESCE(x.fx1, x.x1) AS bx1, "
                   "COALESCE(x.fy1, x.y1) AS by1")
PICTURE_AREA_SQL = "COALESCE(x.fixed_area, x.area)"
# The rule's decision for one picture: an added picture is one, a scored one under the score cutoff is not;
# under σ or the model, a picture follows its page's rule; under the picture rule, its own size.
PICTURE_RULE_KEEP_SQL = (
    f"CASE WHEN x.added THEN 1 WHEN NOT {score_admits()} THEN 0 "
    f"ELSE COALESCE({_rule_with_area(PICTURE_AREA_SQL)}, 0) END"
)


def _picture_keep(picture_rule_keep: str) -> str:
    """A picture is exported when this holds (and its page is kept): never when deleted or its page excluded
    by a curator; else the curator's decision on it, else the rule's."""
    return f"CASE WHEN x.deleted OR o.keep = 0 THEN 0 ELSE COALESCE(x.keep, {picture_rule_keep}) END"


PICTURE_KEEP_SQL = _picture_keep(PICTURE_RULE_KEEP_SQL)
# What the export writes: the picture is kept and so is its page. Stored per picture under the saved
# settings (curation.manifest.picture_decisions).
EXPORTED_SQL = f"(({KEEP_SQL}) AND ({PICTURE_KEEP_SQL}))"
# The same before the score cutoff existed, as the schema's released migrations made their triggers with it.
UNSCORED_EXPORTED_SQL = (
    f"(({_keep(UNSCORED_PICTURE_RULE_SQL, UNSCORED_EDITED_PAGE_SQL)}) AND "
    f"({_picture_keep(f'CASE WHEN x.added THEN 1 ELSE COALESCE({_rule_with_area(PICTURE_AREA_SQL)}, 0) END')}))"
)
PICTURE_DECIDED_BY_SQL = (
    "CASE WHEN x.deleted THEN 'deleted' WHEN o.keep = 0 THEN 'page' WHEN x.keep IS NOT NULL THEN 'override' "
    "WHEN x.added THEN 'added' ELSE 'threshold' END"
)

RULES = {
    "picture": "Picture rule: keep pages holding a picture (ink that is not text, rules or frames) of a real size",
    "sigma": "σ only: keep pages whose σ is above the cutoff (the original method)",
    "model": "Learned: the model fitted on your overrides, where it has a suggestion",
}
DEFAULT_RULE = "picture"
DEFAULT_THRESHOLD = 45.0  # σ: the cutoff curators learned on the original method
INK_TONE_MIN = 0.15  # below this a page holds no ink at all, only paper grain
# Documents whose file was replaced by new content no longer take part in decisions.
LIVE_DOCUMENT_SQL = "d.status != 'replaced'"
