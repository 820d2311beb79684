"""RealMLP (Holzmüller et al., NeurIPS 2024) reimplemented in plain PyTorch.

Faithful to pytabkit's RealMLP-TD (see docs/design.md §5, §10) but exposing the logits of every
epoch, which the reference cannot. Modules, one job each: :mod:`.schedules`, :mod:`.config`,
:mod:`.preprocessing`, :mod:`.embeddings`, :mod:`.layers`, :mod:`.network`, :mod:`.optim`,
:mod:`.trainer`.

Part of ``models`` (layer 3 of docs/design.md §2): it imports what ``models`` may.
"""

from tabbench.models.realmlp.config import RealMLPConfig
from tabbench.models.realmlp.trainer import RealMLPTrainer

__all__ = ["RealMLPConfig", "RealMLPTrainer"]
