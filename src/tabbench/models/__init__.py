"""Trainers (XGBoost, MLP, RealMLP) and the shared per-epoch recorder.

Every trainer implements :class:`tabbench.models.base.Trainer`: it yields logits, never metrics.
"""
