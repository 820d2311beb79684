"""The run of a study: one train job (what to train, where, on what, what to keep: ``specs``;
its loop: ``train_job``; its part folder: ``parts``; its signals and progress lines), what a job
keeps for re-stopping and the re-stop itself, retrying failed configs, and how far a study is
(``status``, over ``cost_model``).

Layer 6 of docs/design.md §2: it may import the layers below (``core`` to ``summary``: a
re-stop reselects).
"""

from tabbench.core.extras import require_extra

require_extra("pipeline", __name__)
