"""Search spaces (optuna distributions) and deterministic config sampling.

Each model's registration (:mod:`tabbench.models.registry`) names a module with
``DEFAULT_CONFIG`` (config id 0, the paper's "default" regime) and ``suggest(trial) -> dict``
(one draw of the paper's HPO space, the "tuned" regime). Search spaces may import their model's
torch-free config modules (``tabbench.models``), never the reverse. Config ids
1..n are drawn by :func:`sample_config` from a seed derived from (global seed, dataset, split,
model, config id) only, so a config never depends on job order (docs/design.md §2, §5).

Layer 4 of docs/design.md §2: it may import the layers below (``core``, ``metrics``,
``data``, ``models``).
"""

from tabbench.core.extras import require_extra

require_extra("pipeline", __name__)

# after the check: without the extra, importing this package says what to install
from tabbench.search.sampling import get_space, sample_config, stable_seed  # noqa: E402

__all__ = ["get_space", "sample_config", "stable_seed"]
