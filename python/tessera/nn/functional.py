"""Functional forms of the nn layers and losses (``torch.nn.functional`` names),
forwarding to tessera ops so that autograd records them."""
from __future__ import annotations

import tessera

__all__ = [
    "relu", "linear", "conv2d", "layer_norm", "dropout", "softmax", "log_softmax", "cross_entropy", "nll_loss",
    "mse_loss",
]


def relu(input, inplace=False):
    return input.relu_() if inplace else tessera.relu(input)


def linear(input, weight, bias=None):
    """``input @ weight.T + bias``: weight is (out_features, in_features)."""
    if input.dim() == 2:  # the common case: no matmul reshapes; the bias in addmm's pass, as torch's F.linear
        return tessera.mm(input, weight.t()) if bias is None else tessera.addmm(bias, input, weight.t())
    out = tessera.matmul(input, weight.t())
    return out if bias is None else out + bias


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return tessera.conv2d(input, weight, bias, stride, padding, dilation, groups)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    return tessera.layer_norm(input, normalized_shape, weight, bias, eps)


def dropout(input, p=0.5, training=True, inplace=False, generator=None):
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout: p must be in [0, 1], got {p}")
    out = tessera.dropout(input, p, training, generator=generator)
    return input.copy_(out) if inplace else out


def softmax(input, dim, dtype=None):
    return tessera.softmax(input, dim, dtype)


def log_softmax(input, dim, dtype=None):
    return tessera.log_softmax(input, dim, dtype)


def cross_entropy(input, target, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0):
    return tessera.cross_entropy(input, target, weight, ignore_index, reduction, label_smoothing)


def nll_loss(input, target, weight=None, ignore_index=-100, reduction="mean"):
    return tessera.nll_loss(input, target, weight, ignore_index, reduction)


def mse_loss(input, target, reduction="mean"):
    return tessera.mse_loss(input, target, reduction)
