"""Linear algebra: the matmul family on real GEMMs, convolutions, and LAPACK ops as extern kernels."""

from __future__ import annotations

import torch

aten = torch.ops.aten
