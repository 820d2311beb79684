"""Trainers (XGBoost, LightGBM, MLP, RealMLP), their registry and the shared per-epoch recorder.

Every trainer implements :class:`tabbench.models.base.Trainer`: it yields logits, never metrics.

Layer 3 of docs/design.md §2: it may import ``core``, ``metrics`` and ``data``; never
``search`` (a search space imports its model's config module, not the reverse).
"""

from tabbench.core.extras import require_extra

require_extra("pipeline", __name__)
