"""The one definition of a decision, for a page and for a picture, as SQL over the manifest's tables.

Decisions are never stored: a page's decision is the curator's override where one exists, else what its
pictures say where a curator decided one of them (included, excluded, added, deleted or redrew one), else
the rule at the current cutoffs. The rule is a setting (RULES); every query binds Manifest.decision_params().

Aliases: p pages, o the page's override, x a picture. A page whose pictures a curator touched carries two
figures kept by the writer (curation.manifest.pictures): `pictures_included`, how many of its pictures are
included by a curator, and `pictures_auto_area`, the largest picture left to the rule; on other pages both
are NULL and the rule reads the scorer's own figures, so a manifest without picture edits decides as before.
"""

# Pages scored before features existed fall back to sigma; the model rule falls back to the picture rule
# where it has no suggestion.
PICTURE_RULE_SQL = (
    "COALESCE(p.picture_area >= :picture_area_min AND p.ink_tone >= :ink_tone_min, p.sigma > :threshold)"
)
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
EDITED_PAGE_SQL = f"(p.pictures_included > 0 OR COALESCE({_rule_with_area('p.pictures_auto_area')}, 0))"
KEEP_SQL = (
    f"COALESCE(o.keep, CASE WHEN p.pictures_included IS NOT NULL THEN {EDITED_PAGE_SQL} "
    f"WHEN :rule = 'model' THEN COALESCE({MODEL_SQL}, {PICTURE_RULE_SQL}) "
    f"ELSE {BASE_RULE_SQL} END, 0)"
)
# Pages where the learned model and the rule differ: the curator reviews these first.
DISAGREES_SQL = f"{MODEL_SQL} != COALESCE({BASE_RULE_SQL}, 0)"
DECIDED_BY_SQL = ("CASE WHEN o.keep IS NOT NULL THEN 'override' "
                  "WHEN p.pictures_included IS NOT NULL THEN 'pictures' ELSE 'threshold' END")

# A picture's box and size as the curator left them: the redrawn box where there is one.
PICTURE_BOX_SQL = ("COALESCE(x.fx0, x.x0) AS bx0, COALESCE(x.fy0, x.y0) AS by0, COALESCE(x.fx1, x.x1) AS bx1, "
                   "COALESCE(x.fy1, x.y1) AS by1")
PICTURE_AREA_SQL = "COALESCE(x.fixed_area, x.area)"
# The rule's decision for one picture: an added picture is one; under σ or the model, a picture follows
# its page's rule; under the picture rule, its own size.
PICTURE_RULE_KEEP_SQL = (
    f"CASE WHEN x.added THEN 1 ELSE COALESCE({_rule_with_area(PICTURE_AREA_SQL)}, 0) END"
)
# A picture is exported when this holds (and its page is kept): never when deleted or its page excluded
# by a curator; else the curator's decision on it, else the rule's.
PICTURE_KEEP_SQL = (
    f"CASE WHEN x.deleted OR o.keep = 0 THEN 0 ELSE COALESCE(x.keep, {PICTURE_RULE_KEEP_SQL}) END"
)
# What the export writes: the picture is kept and so is its page. Stored per picture under the saved
# settings (curation.manifest.picture_decisions).
EXPORTED_SQL = f"(({KEEP_SQL}) AND ({PICTURE_KEEP_SQL}))"
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
DEFAULT_PICTURE_AREA_MIN = 2.0  # square inches: a cartoon or plate covers 10 and more, a stock cut about 1
INK_TONE_MIN = 0.15  # below this a page holds no ink at all, only paper grain
# Documents whose file was replaced by new content no longer take part in decisions.
LIVE_DOCUMENT_SQL = "d.status != 'replaced'"
