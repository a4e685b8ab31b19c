"""Fused attention kernels (FlashAttention style): the forward for bf16 and
f16 (``forward``) and fp8 (``forward_fp8``), the backward (``backward``), the
problem description they share (``Config``) and the float64 reference they
are checked against (``reference``). See docs/AttentionWalkthrough.md."""
from .config import Config
from . import backward, forward, forward_fp8, reference

__all__ = ["Config", "backward", "forward", "forward_fp8", "reference"]
