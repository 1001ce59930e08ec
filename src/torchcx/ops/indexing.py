"""Indexing, scatter/gather, masking, concatenation and movement ops.

Most act on the two parts independently (``partwise``)."""

from __future__ import annotations

import torch

aten = torch.ops.aten
