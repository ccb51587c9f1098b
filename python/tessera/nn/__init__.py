"""Neural-network building blocks (PyTorch's ``torch.nn`` names): modules in
``tessera.nn``, their functional forms in ``tessera.nn.functional``."""
from tessera.nn import functional  # noqa: F401
from tessera.nn.modules import (  # noqa: F401
    Conv2d,
    Dropout,
    LayerNorm,
    Linear,
    Module,
    Parameter,
    ReLU,
    Sequential,
)

__all__ = ["functional", "Parameter", "Module", "Linear", "Conv2d", "ReLU", "Sequential", "Dropout", "LayerNorm"]
