"""Fused attention kernels (FlashAttention style) and the functions that run
them on NumPy arrays or PyTorch tensors. See docs/AttentionWalkthrough.md."""
from .config import Config
from . import forward, reference
from .functions import attention, flash_attention, flash_attention_backward

__all__ = ["Config", "attention", "flash_attention", "flash_attention_backward", "forward",
           "reference"]
