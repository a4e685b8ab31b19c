"""Fused attention kernels (FlashAttention style): the forward for bf16 and
f16 (``forward``) and fp8 (``forward_fp8``), the backward (``backward``), the
problem description they share (``Config``) and the float64 reference they
are checked against (``reference``), and the functions that run them on
NumPy arrays or PyTorch tensors shaped as FlashAttention takes them
(``flash_attention``, ``flash_attention_backward``, ``attention``). See
docs/AttentionWalkthrough.md."""
from .config import Config
from . import backward, forward, forward_fp8, reference
from .functions import attention, flash_attention, flash_attention_backward

__all__ = ["Config", "attention", "backward", "flash_attention", "flash_attention_backward",
           "forward", "forward_fp8", "reference"]
