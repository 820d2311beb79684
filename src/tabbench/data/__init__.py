"""Datasets: sources, filtering, splits (docs/design.md §3).

- :mod:`~tabbench.data.manifest`: the Ye et al. manifest, the bundled MANIFEST, suites;
- :mod:`~tabbench.data.sources`: ``talent`` / ``openml`` / ``bundled``, tried in order;
- :mod:`~tabbench.data.raw`: the one representation every source returns;
- :mod:`~tabbench.data.filtering`: the paper's filter (App. G.6) and its report;
- :mod:`~tabbench.data.splits`: 64/16/20 splits;
- :mod:`~tabbench.data.pipeline`: the file-to-file steps the ``tabbench data`` commands run;
- :mod:`~tabbench.data.dataset`: the on-disk contract and :func:`load_split_data`.

Layer 2 of docs/design.md §2: it may import only ``core``; never ``models`` (trainers
consume data, data does not know trainers).
"""

from tabbench.core.extras import require_extra

require_extra("pipeline", __name__)
