"""stackmatrix: a reproducible test matrix for GPU deep-learning stacks."""

from __future__ import annotations

__version__ = "0.1.0"
