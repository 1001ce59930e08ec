"""Reductions and scans: sum, mean, prod, cumsum, cumprod, var/std, norms, ...

float16/bfloat16 parts accumulate in float32 (as torch does for real tensors)."""

from __future__ import annotations

import torch

aten = torch.ops.aten
