"""tabbench's own models (docs/design.md §5), registered through entry points exactly like a
third-party package's (``pyproject.toml``, group ``tabbench.models``; one ``ModelSpec`` each,
here). Trainers and search spaces are named, not imported: reading the registry imports neither
PyTorch nor XGBoost nor LightGBM.

Epochs under the paper's protocol: XGBoost 100 rounds for its default config and 1000 for tuned
ones (App. G.5), the networks 256 epochs for every config. LightGBM (not in the paper) follows
XGBoost's convention: 100 rounds for the default config (``lightgbm_default``, also LightGBM's
own default ``num_iterations``) and 1000 for the random configs (``lightgbm_tuned``); its trainer
is :class:`tabbench.models.lightgbm.LightGBMTrainer`, its search space
:mod:`tabbench.search.lightgbm`; not a network: CPU only, no GPU slot.
"""

from __future__ import annotations

from tabbench.models.mlp_config import MAX_ONE_HOT_LEVELS, check_max_one_hot_levels
from tabbench.models.registry import ModelSpec, TrainerOption

XGBOOST = ModelSpec(
    name="xgboost",
    label="XGBoost",
    trainer="tabbench.models.xgboost:XGBoostTrainer",
    search_space="tabbench.search.xgboost",
    epochs_keys=("xgboost_default", "xgboost_tuned"),
    paper_epochs={"xgboost_default": 100, "xgboost_tuned": 1000},
    epoch_name="boosting round",
)

MLP = ModelSpec(
    name="mlp",
    label="MLP",
    trainer="tabbench.models.mlp:MLPTrainer",
    search_space="tabbench.search.mlp",
    epochs_keys=("mlp", "mlp"),
    paper_epochs={"mlp": 256},
    network=True,
    options=(
        TrainerOption(
            "max_one_hot_levels",
            MAX_ONE_HOT_LEVELS,
            check_max_one_hot_levels,
            help="one-hot encode at most the N most frequent train levels of each "
            "categorical, rarer ones like an unseen level; none = one column per level",
        ),
    ),
)

REALMLP = ModelSpec(
    name="realmlp",
    label="RealMLP",
    trainer="tabbench.models.realmlp:RealMLPTrainer",
    search_space="tabbench.search.realmlp",
    epochs_keys=("realmlp", "realmlp"),
    paper_epochs={"realmlp": 256},
    network=True,
)

LIGHTGBM = ModelSpec(
    name="lightgbm",
    label="LightGBM",
    trainer="tabbench.models.lightgbm:LightGBMTrainer",
    search_space="tabbench.search.lightgbm",
    epochs_keys=("lightgbm_default", "lightgbm_tuned"),
    paper_epochs={"lightgbm_default": 100, "lightgbm_tuned": 1000},
    epoch_name="boosting round",
)
