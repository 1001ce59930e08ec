"""Comparison and predicate ops: eq/ne, isclose/allclose/equal, isnan/isinf/isfinite/isreal,
logical ops and nonzero (truthiness of a complex number: re != 0 or im != 0)."""

from __future__ import annotations

import torch

aten = torch.ops.aten
