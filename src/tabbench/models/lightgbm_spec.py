"""LightGBM's registration: the entry point ``lightgbm`` of group ``tabbench.models``
(``pyproject.toml``), exactly as a third-party package would register a model.

A light module on purpose: reading the registry imports neither lightgbm nor optuna. The
trainer is :class:`tabbench.models.lightgbm.LightGBMTrainer`, the search space
:mod:`tabbench.search.lightgbm`. Rounds follow XGBoost's convention (paper App. G.5): 100 for the
default config (``lightgbm_default``, also LightGBM's own default ``num_iterations``) and 1000
for the random configs (``lightgbm_tuned``). Not a network: CPU only, no GPU slot.
"""

from __future__ import annotations

from tabbench.models.registry import ModelSpec

MODEL = ModelSpec(
    name="lightgbm",
    label="LightGBM",
    trainer="tabbench.models.lightgbm:LightGBMTrainer",
    search_space="tabbench.search.lightgbm",
    epochs_keys=("lightgbm_default", "lightgbm_tuned"),
    paper_epochs={"lightgbm_default": 100, "lightgbm_tuned": 1000},
    epoch_name="boosting round",
)
