"""Fused attention kernels (FlashAttention style) and the functions that run
them on NumPy arrays or PyTorch tensors. See docs/AttentionWalkthrough.md."""
from .config import Config
from . import forward, reference

__all__ = ["Config", "forward", "reference"]
