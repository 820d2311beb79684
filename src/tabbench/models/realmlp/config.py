"""RealMLP hyperparameters: the RealMLP-TD defaults (Holzmüller et al. 2024, Table A.1) as one
typed, validated record.

Field names follow pytabkit's where one exists, so a config can be read side by side with the
reference. Defaults are RealMLP-TD for classification except label smoothing, which
docs/design.md §5
switches off (``ls_eps = 0``) because the paper studies calibration-sensitive stopping metrics.
Every field is JSON-serialisable; :func:`tabbench.search.realmlp` fills them all, so the
``params`` column of the records describes a run completely.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tabbench.models.realmlp.schedules import get_schedule

NUM_EMB_TYPES = ("none", "pl", "plr", "pbld")
ACTIVATIONS = ("selu", "relu", "mish")


@dataclass(frozen=True)
class RealMLPConfig:
    """All knobs of one RealMLP run (the epoch count comes from ``TrainContext``)."""

    # --- tuned in Table G.2 -------------------------------------------------------------
    num_emb_type: str = "pbld"
    """Numerical embeddings: none, PL (periodic+linear), PLR (+ReLU), PBLD (cos-bias, densenet)."""
    add_front_scale: bool = True
    """Learnable per-input scale in front of the first linear layer (lr × ``scale_lr_factor``)."""
    lr: float = 0.04
    p_drop: float = 0.15
    act: str = "selu"
    hidden_sizes: list[int] = field(default_factory=lambda: [256, 256, 256])
    wd: float = 0.02
    plr_sigma: float = 0.1
    """Std of the first-layer frequencies of the numerical embeddings ("emb. init std")."""
    ls_eps: float = 0.0
    """Label smoothing ε; RealMLP-TD uses 0.1, docs/design.md §5 keeps 0 for the default config."""

    # --- fixed in the paper (RealMLP-TD values) --------------------------------------------
    batch_size: int = 256
    lr_sched: str = "coslog4"
    p_drop_sched: str = "flat_cos"
    wd_sched: str = "flat_cos"
    mom: float = 0.9
    sq_mom: float = 0.95
    opt_eps: float = 1e-8
    use_parametric_act: bool = True
    act_lr_factor: float = 0.1
    bias_lr_factor: float = 0.1
    scale_lr_factor: float = 6.0
    plr_lr_factor: float = 0.1
    plr_hidden_1: int = 16
    """Frequencies per feature (PBLD/PL/PLR first layer width; PL/PLR use half as cos and sin)."""
    plr_hidden_2: int = 4
    """Outputs per feature (PBLD: 3 learned + the raw value)."""
    max_one_hot_cats: int = 8
    """Categoricals with at most this many train categories are one-hot encoded, others embedded."""
    embedding_size: int = 8
    smooth_clip_max_abs: float = 3.0
    wd_squared_factors: bool = True
    """Reference quirk (pytabkit issue #40, docs/design.md §10): weight decay multiplies the
    per-group lr and wd factors in twice. ``False`` gives textbook decoupled weight decay."""

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> RealMLPConfig:
        """Build from a (possibly partial) params dict; unknown keys are an error, not ignored."""
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(params) - known)
        if unknown:
            raise ValueError(f"unknown RealMLP parameter(s) {unknown}; known: {sorted(known)}")
        kwargs = dict(params)
        if "hidden_sizes" in kwargs:
            kwargs["hidden_sizes"] = [int(h) for h in kwargs["hidden_sizes"]]
        cfg = cls(**kwargs)
        cfg.validate()
        return cfg

    def to_params(self) -> dict[str, Any]:
        """JSON-ready dict of every field."""
        d = dataclasses.asdict(self)
        d["hidden_sizes"] = list(self.hidden_sizes)
        return d

    def validate(self) -> None:
        """Raise ``ValueError`` on values that would otherwise fail deep inside training."""
        if self.num_emb_type not in NUM_EMB_TYPES:
            raise ValueError(
                f"num_emb_type must be one of {NUM_EMB_TYPES}, got {self.num_emb_type!r}"
            )
        if self.act not in ACTIVATIONS:
            raise ValueError(f"act must be one of {ACTIVATIONS}, got {self.act!r}")
        if not self.hidden_sizes or any(h < 1 for h in self.hidden_sizes):
            raise ValueError(
                f"hidden_sizes must be a non-empty list of positive ints, got {self.hidden_sizes}"
            )
        for name in (
            "lr",
            "plr_sigma",
            "opt_eps",
            "batch_size",
            "embedding_size",
            "smooth_clip_max_abs",
            "plr_hidden_1",
            "plr_hidden_2",
        ):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be positive and finite, got {value!r}")
        for name in ("wd", "act_lr_factor", "bias_lr_factor", "scale_lr_factor", "plr_lr_factor"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(f"{name} must be >= 0 and finite, got {value!r}")
        for name in ("p_drop", "ls_eps"):
            value = getattr(self, name)
            if not 0.0 <= value < 1.0:
                raise ValueError(f"{name} must be in [0, 1), got {value!r}")
        for name in ("mom", "sq_mom"):
            value = getattr(self, name)
            if not 0.0 <= value < 1.0:
                raise ValueError(f"{name} must be in [0, 1), got {value!r}")
        if self.max_one_hot_cats < 0:
            raise ValueError(f"max_one_hot_cats must be >= 0, got {self.max_one_hot_cats}")
        if self.num_emb_type in ("pl", "plr") and self.plr_hidden_1 % 2:
            raise ValueError(
                "PL/PLR embeddings split plr_hidden_1 into cos and sin: it must be even"
            )
        if self.num_emb_type == "pbld" and self.plr_hidden_2 < 2:
            raise ValueError("PBLD needs plr_hidden_2 >= 2 (learned outputs + the raw value)")
        for name in ("lr_sched", "p_drop_sched", "wd_sched"):
            get_schedule(getattr(self, name))  # raises on an unknown name
