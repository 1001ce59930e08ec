"""The FFT family: the vendor FFT as an extern kernel, and an FFT in real arithmetic."""

from __future__ import annotations

import torch

aten = torch.ops.aten
