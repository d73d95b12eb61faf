"""What is kept besides the rule: the model learned from the curator's overrides, near-duplicate
plates, and the keys a curator reviews a grid with (keyboard)."""
