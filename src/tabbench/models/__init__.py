"""Trainers (XGBoost, LightGBM, MLP, RealMLP), their registry and the shared per-epoch recorder.

Every trainer implements :class:`tabbench.models.base.Trainer`: it yields logits, never metrics.
"""

from tabbench.core.extras import require_extra

require_extra("pipeline", __name__)
