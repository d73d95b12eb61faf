"""What the dashboard shows, computed where it is cheap: in SQL and NumPy, never per page in Python.

Every function takes a Manifest and the decision being looked at, and returns plain data (dicts,
lists, arrays), so the pages stay thin and this module is tested without Streamlit. A decision is
the σ `threshold` plus, as keywords, the `rule` (picture, sigma or model) and `picture_area_min` (square inches);
left out, they are the saved ones (Manifest.decision_params). All of it must stay fast on a
100,000-page manifest: counts and histograms are single aggregate queries, lists are SQL pages of
at most a screenful, and nothing loads a thumbnail that is not on screen.

One module per thing it serves; the names of the first six, and `figures`, read as `views.<name>`:
`filters` (the decision being looked at, Review's page filters and their counts), `review` (Review's grid,
captions and bulk actions), `images` (thumbnails, picture boxes, the pictures listing, a page drawn large),
`model` (the learned model), `threshold` (histograms, the suggested cutoff, the pages at the edge, the rule
in words) and `jobs` (documents, jobs and Home's next steps). Beside them: `cutoff_counts` (what every rule
keeps at every cutoff, Threshold's and Home's figures; its keys in SQL: `cutoff_keys`), `picture_views`
(Review's Pictures view), `picture_bulk` (its bulk actions), `picture_images` (its crops and boxes),
`review_orders` (its orders that read embeddings) and `bulk` (a bulk action as a job).
"""

from .filters import (DECISION_SQL, DECISIONS, DISAGREES_FILTER_SQL, DUPLICATE_SQL, NEAR_SQL, PAGES_FROM, RULE_LABELS,
                      base_rule, decision_params, filter_counts, has_features, near_measure, override_count,
                      page_count, PageFilter, picture_override_count, unfeatured_count)
from .review import (CAPTIONED_SQL, SORTS, bulk_caption, bulk_caption_effect, bulk_override, bulk_override_effect,
                     caption_counts, captions_for, documents_for_filter, last_undoable, latest_change, latest_changes,
                     page_changes, page_rows, reversed_order, view_note)
from .images import (DRAWN_KEPT, OUTLINE_COLOUR, PICTURE_OVERRIDES, RENDER_LONG_SIDE, RENDER_MAX_ZOOM, draw_page,
                     edge_thumbnails, outline_pictures, PageUnavailable, picture_rows, pictures_for, render_page, thumbnails)
from .model import (LEARN_JOB, learn_blocker, learn_from_overrides, learn_job, learned, LearnOutcome, model_state, ModelState,
                    override_labels, stop_using_model, use_model)
from .threshold import (BORDERLINE_SQL, PICTURE_CEILING, PICTURE_FLOOR, Borderline, borderline, edge_measure,
                        Histogram, histogram, otsu, picture_histogram, rule_explanation, rule_summary,
                        has_scores, score_histogram, ScoreHistogram, sigma_range,
                        sigma_beside, square_inches, suggest_threshold, Suggestion)
from .cutoff_counts import figures
from .jobs import (count, document_rows, duration, elapsed, folder_words, job_outcome, job_progress, missing_sources,
                   next_steps, Step, unreadable_documents)

__all__ = [
    "BORDERLINE_SQL", "Borderline", "CAPTIONED_SQL", "DECISIONS", "DECISION_SQL", "DISAGREES_FILTER_SQL",
    "DRAWN_KEPT", "DUPLICATE_SQL", "Histogram", "LearnOutcome", "ModelState", "NEAR_SQL", "OUTLINE_COLOUR",
    "PAGES_FROM", "PICTURE_CEILING", "PICTURE_FLOOR", "PICTURE_OVERRIDES", "PageFilter", "PageUnavailable",
    "RENDER_LONG_SIDE", "RENDER_MAX_ZOOM", "RULE_LABELS", "SORTS", "Step", "Suggestion", "base_rule", "borderline",
    "bulk_caption", "bulk_caption_effect", "bulk_override", "bulk_override_effect", "caption_counts",
    "captions_for", "count", "decision_params", "document_rows", "documents_for_filter", "draw_page", "duration", "folder_words",
    "edge_measure", "elapsed", "has_scores", "score_histogram", "ScoreHistogram", "figures", "filter_counts", "has_features", "histogram", "job_outcome", "job_progress", "unreadable_documents",
    "LEARN_JOB", "last_undoable", "latest_change", "latest_changes", "learn_blocker", "learn_from_overrides", "learn_job", "learned", "missing_sources",
    "model_state", "near_measure", "next_steps", "otsu", "outline_pictures", "edge_thumbnails", "override_count", "override_labels",
    "page_changes", "page_count", "picture_override_count", "page_rows", "picture_histogram", "picture_rows", "pictures_for", "render_page",
    "reversed_order", "rule_explanation", "rule_summary", "sigma_range", "sigma_beside", "square_inches", "stop_using_model",
    "suggest_threshold", "thumbnails", "unfeatured_count", "use_model", "view_note"
]
