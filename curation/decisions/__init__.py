"""What is kept besides the rule: the model learned from the curator's overrides, and near-duplicate
plates."""
