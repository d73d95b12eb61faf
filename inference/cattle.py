"""The cattle gate: does the photo show cattle at all, before any triage?

A triage model answers for every photo, a dog's included. A model that
knows ImageNet's classes can say first whether the photo shows cattle: the
summed probability of its bovine classes. ImageNet-1k has three: "ox"
(domestic cattle: cows, bulls, calves), "water buffalo" and "bison". Yak and
zebu are not classes of their own; ImageNet files them under ox.
"""

CATTLE_CLASSES = ("ox", "water buffalo", "bison")
# Summed probability from which a photo counts as cattle. On the shared real
# photos with EfficientNet-Lite0: a Holstein cow 0.68, a bison 0.93; a horse
# 0.06, a pig 0.01, a sheep and a dog below 0.01.
CATTLE_THRESHOLD = 0.25


def has_cattle_gate(labels):
    """True when the model's labels include every bovine class (an ImageNet model)."""
    return set(CATTLE_CLASSES) <= set(labels)


def cattle_gate(scores, labels):
    """{"is_cattle", "score", "classes", "threshold"} from the probabilities of
    all `labels` (in label order); None for a model without the bovine classes."""
    if not has_cattle_gate(labels):
        return None
    index = {label: position for position, label in enumerate(labels)}
    score = float(sum(float(scores[index[label]]) for label in CATTLE_CLASSES))
    return {
        "is_cattle": score >= CATTLE_THRESHOLD,
        "score": round(score, 6),
        "classes": list(CATTLE_CLASSES),
        "threshold": CATTLE_THRESHOLD,
    }


def describe(gate):
    """One line for a person: 'cattle (ox + water buffalo + bison: 68%)'."""
    verdict = "cattle" if gate["is_cattle"] else "this does not look like cattle"
    return f"{verdict} ({' + '.join(gate['classes'])}: {gate['score']:.0%})"
