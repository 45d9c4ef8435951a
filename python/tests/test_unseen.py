"""Models of shapes the zoo does not have, as users write them: in-place ReLUs and residual
adds, several outputs, a buffer the model updates itself, its own activation checkpointing,
attention with dropout inside the fused kernel, bfloat16 autocast, top-k routing with scatters,
tied weights, frozen layers, 3-D convolutions, einsum, bilinear resizing, pixel shuffle, PReLU,
Mish, layer norm without affine parameters. Every one trains bit-identically to AOTAutograd's
default partition, no candidate fails to build, and the partition kept never saves more than
min(default, min-cut)."""

import pytest
import torch
from torch import nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint
from functorch.compile import default_partition

import memfold.torch as mt
from conftest import identical, partitioned_run


class InplaceResidual(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1, self.b1 = nn.Conv2d(8, 8, 3, padding=1), nn.BatchNorm2d(8)
        self.c2, self.b2 = nn.Conv2d(8, 8, 3, padding=1), nn.BatchNorm2d(8)
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x):
        y = self.relu(self.b1(self.c1(x)))
        y = self.b2(self.c2(y))
        y += x
        return self.relu(y)


class TwoHeads(nn.Module):
    """Returns a tuple: a classification head and an auxiliary regression head."""

    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(16, 64), nn.GELU(), nn.LayerNorm(64,
                                                                               elementwise_affine=False))
        self.cls, self.reg = nn.Linear(64, 5), nn.Linear(64, 1)

    def forward(self, x):
        h = self.body(x)
        return F.log_softmax(self.cls(h), -1), torch.sigmoid(self.reg(h))


class CountsItsCalls(nn.Module):
    """Updates a buffer of its own in forward, besides batch norm's."""

    def __init__(self):
        super().__init__()
        self.register_buffer("calls", torch.zeros((), dtype=torch.long))
        self.fc, self.norm = nn.Linear(16, 32), nn.BatchNorm1d(32)

    def forward(self, x):
        self.calls += 1
        return torch.tanh(self.norm(self.fc(x))) * 2


class SelfCheckpointed(nn.Module):
    """Checkpoints its own blocks with torch.utils.checkpoint (non-reentrant)."""

    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList(nn.Sequential(nn.Linear(32, 64), nn.SiLU(), nn.Linear(64, 32))
                                    for _ in range(3))

    def forward(self, x):
        for block in self.blocks:
            x = x + checkpoint(block, x, use_reentrant=False)
        return x


class FusedAttention(nn.Module):
    """F.scaled_dot_product_attention with dropout inside the kernel, and einsum projections."""

    def __init__(self):
        super().__init__()
        self.qkv = nn.Parameter(torch.randn(3, 32, 32) * 0.1)
        self.out = nn.Linear(32, 32)

    def forward(self, x):
        q, k, v = (torch.einsum("btc,cd->btd", x, w).view(2, 8, 4, 8).transpose(1, 2)
                   for w in self.qkv)
        y = F.scaled_dot_product_attention(q, k, v, dropout_p=0.1, is_causal=True)
        return self.out(y.transpose(1, 2).reshape(2, 8, 32))


class Autocast(nn.Module):
    """A bfloat16 autocast region inside forward."""

    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(32, 64), nn.Linear(64, 8)

    def forward(self, x):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            h = F.gelu(self.fc1(x))
        return self.fc2(h.float())


class TopOneExperts(nn.Module):
    """Mixture of experts with top-1 routing: topk, gather, scatter_add."""

    def __init__(self, experts=4):
        super().__init__()
        self.gate = nn.Linear(16, experts)
        self.experts = nn.Parameter(torch.randn(experts, 16, 16) * 0.1)

    def forward(self, x):
        weight, index = torch.softmax(self.gate(x), -1).topk(1, dim=-1)
        y = torch.einsum("bi,bio->bo", x, self.experts[index.squeeze(-1)]) * weight
        counts = torch.zeros(self.experts.shape[0]).scatter_add(0, index.squeeze(-1),
                                                                 weight.squeeze(-1))
        return y + counts.sum() * 0.0


class TiedLanguageModel(nn.Module):
    """Input embedding and output projection share one weight; the first layer is frozen."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(50, 32)
        self.frozen = nn.Linear(32, 32)
        self.frozen.requires_grad_(False)
        self.mix = nn.Sequential(nn.Linear(32, 32), nn.Mish(), nn.Hardswish())

    def forward(self, ids):
        h = self.mix(self.frozen(self.embed(ids)))
        return F.linear(h, self.embed.weight)


class Volumes(nn.Module):
    """3-D convolutions, PReLU, bilinear resizing and pixel shuffle."""

    def __init__(self):
        super().__init__()
        self.conv3d = nn.Conv3d(1, 4, 3, padding=1)
        self.act = nn.PReLU()
        self.conv2d = nn.Conv2d(16, 16, 3, padding=1)

    def forward(self, x):  # [B, 1, D, H, W]
        y = self.act(self.conv3d(x)).flatten(1, 2)  # [B, 4 D, H, W]
        y = F.interpolate(y, scale_factor=2, mode="bilinear", align_corners=False)
        return F.pixel_shuffle(torch.tanh(self.conv2d(y)), 2)


CASES = {
    "inplace_residual": (InplaceResidual, lambda: (torch.randn(4, 8, 8, 8),)),
    "two_heads": (TwoHeads, lambda: (torch.randn(8, 16),)),
    "counts_its_calls": (CountsItsCalls, lambda: (torch.randn(8, 16),)),
    "self_checkpointed": (SelfCheckpointed, lambda: (torch.randn(8, 32),)),
    "fused_attention": (FusedAttention, lambda: (torch.randn(2, 8, 32),)),
    "autocast": (Autocast, lambda: (torch.randn(8, 32),)),
    "top_one_experts": (TopOneExperts, lambda: (torch.randn(8, 16),)),
    "tied_language_model": (TiedLanguageModel, lambda: (torch.randint(0, 50, (4, 6)),)),
    "volumes": (Volumes, lambda: (torch.randn(2, 1, 4, 6, 6),)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_unseen_model_is_exact_and_never_worse(name):
    factory, make_inputs = CASES[name]
    torch.manual_seed(0)
    model, inputs = factory(), make_inputs()
    partitioner = mt.EchoPartitioner()
    assert identical(partitioned_run(model, partitioner, inputs),
                     partitioned_run(model, default_partition, inputs))
    for report in partitioner.log:
        assert not report["failed"], report["failed"]
        saved = report["saved_bytes"]
        assert saved[report["chosen"]] <= min(saved["default"], saved["min-cut"])
