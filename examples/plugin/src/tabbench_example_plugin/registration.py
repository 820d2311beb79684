"""The model ``toymodel``: its :class:`~tabbench.models.registry.ModelSpec`.

Registered by the entry point ``toymodel = "tabbench_example_plugin.registration:MODEL"``
(group ``tabbench.models``). This module imports nothing heavy: tabbench loads every
registration when it starts, and imports the trainer (:mod:`.trainer`) and the search space
(:mod:`.space`) by name only when the model trains or samples a config.
"""

from __future__ import annotations

from tabbench.models.registry import ModelSpec, TrainerOption


def check_scale(value: object) -> float:
    """The trainer option ``scale``, checked before any job: the config key ``toymodel_scale``
    and the CLI flag ``--toymodel-scale`` both go through here, so a bad value is one line."""
    if not isinstance(value, (int, float)) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"scale must be a positive number, got {value!r}")
    return float(value)


MODEL = ModelSpec(
    name="toymodel",
    label="Toy",
    trainer="tabbench_example_plugin.trainer:ToyTrainer",
    search_space="tabbench_example_plugin.space",
    # the `epochs` config keys of config 0 and of configs >= 1 (one key for both here), and
    # what every preset trains unless `epochs` is set
    epochs_keys=("toymodel", "toymodel"),
    paper_epochs={"toymodel": 4},
    options=(TrainerOption("scale", 1.0, check_scale, help="logit scale"),),
)
