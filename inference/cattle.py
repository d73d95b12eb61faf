"""The cattle gate: does the photo show cattle at all, before any triage?

A triage model answers for every photo, a dog's included. A model that
knows ImageNet's classes can say first whether the photo shows cattle: the
summed probability of its bovine classes. ImageNet-1k has three: "ox"
(domestic cattle: cows, bulls, calves), "water buffalo" and "bison". Yak and
zebu are not classes of their own; ImageNet files them under ox.
"""

import json

CATTLE_CLASSES = ("ox", "water buffalo", "bison")
# A head trained on an ImageNet base keeps the base's ImageNet classifier in
# this file, so it can still say "cattle or not" from the same features.
GATE_FILE = "cattle_gate.safetensors"
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
    return _verdict(sum(float(scores[index[label]]) for label in CATTLE_CLASSES), CATTLE_CLASSES)


def _verdict(score, classes):
    return {
        "is_cattle": score >= CATTLE_THRESHOLD,
        "score": round(float(score), 6),
        "classes": list(classes),
        "threshold": CATTLE_THRESHOLD,
    }


def describe(gate):
    """One line for a person: 'cattle (ox + water buffalo + bison: 68%)'."""
    verdict = "cattle" if gate["is_cattle"] else "this does not look like cattle"
    return f"{verdict} ({' + '.join(gate['classes'])}: {gate['score']:.0%})"


def write_gate_file(folder, classifier, labels):
    """Keep an ImageNet base's classifier (`torch.nn.Linear`) beside a head trained on it."""
    from safetensors.torch import save_file

    indices = [list(labels).index(label) for label in CATTLE_CLASSES]
    save_file(
        {"weight": classifier.weight.detach().float().cpu().contiguous(),
         "bias": classifier.bias.detach().float().cpu().contiguous()},
        str(folder / GATE_FILE),
        metadata={"classes": json.dumps(CATTLE_CLASSES), "indices": json.dumps(indices)},
    )


def read_gate_file(folder, device):
    """The base classifier kept by write_gate_file, on `device`, or None."""
    from safetensors import safe_open

    path = folder / GATE_FILE
    if not path.is_file():
        return None
    with safe_open(str(path), framework="pt", device=device) as weights:
        metadata = weights.metadata()
        return {
            "weight": weights.get_tensor("weight"),
            "bias": weights.get_tensor("bias"),
            "classes": json.loads(metadata["classes"]),
            "indices": json.loads(metadata["indices"]),
        }


def gate_from_features(gate, features):
    """The cattle gate from the features a head read, through the base's own classifier."""
    scores = (features.float() @ gate["weight"].T + gate["bias"]).softmax(dim=-1)
    return _verdict(sum(float(scores[index]) for index in gate["indices"]), gate["classes"])
