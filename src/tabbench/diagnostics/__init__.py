"""Diagnostics of the chosen models (docs/diagnostics.md).

- :mod:`~tabbench.diagnostics.paths`: where replay files, tables and figures live (one place);
- :mod:`~tabbench.diagnostics.calibrators`: none, TS, isotonic, Platt / vector scaling;
- :mod:`~tabbench.diagnostics.reliability`: reliability-diagram bins and their pooling;
- :mod:`~tabbench.diagnostics.selection_bias`: optimism, winner's-curse curve and regret from
  the per-epoch records alone;
- :mod:`~tabbench.diagnostics.collect`: the per-split frames of a results folder (runs and
  replay files, in worker processes);
- :mod:`~tabbench.diagnostics.summaries`: means over splits, summaries across datasets;
- :mod:`~tabbench.diagnostics.digest`: ``diagnostics.md``, the Markdown digest;
- :mod:`~tabbench.diagnostics.tables`: all of it over a results folder (``tabbench diagnose``),
  written and read back;
- :mod:`tabbench.cli.diagnostics`: the CLI (``replay``, ``diagnose``,
  ``diagnostics-figures``).

The replay itself (retraining the selected models for their logits) is
:mod:`tabbench.diagnostics.replay`;
the figures are :mod:`tabbench.plots.diagnostics`. Importing this package imports nothing heavy
(the workflow reads :mod:`~tabbench.diagnostics.paths` at parse time).

Layer 7 of docs/design.md §2: it may import the layers below (``core`` to ``study``: a
replay retrains a study's chosen models); its figures are ``plots``', a layer above.
"""

from tabbench.core.extras import require_extra

require_extra("pipeline", __name__)
