"""Judging a study (layer 5 of docs/design.md §2): the selections of every stopping metric
(``select``, under the stopping rules of ``stopping_rules``), how two methods are compared
(``comparisons``), the summary tables (``tables``, ``markdown``, ``view``), the paper's claims
(``claims/``), the stopping rules' cost and quality (``rule_summary``), the Fig. 1 curve
(``curve``), all written into ``results/summary/`` by ``aggregate`` (docs/design.md §7).

It reads the per-epoch records and selected files only: never the data folder, never a
figure. It needs the ``pipeline`` extra (pandas, pyarrow), checked here so that a light
install says which extra to add instead of failing deep inside a module.

It may import the layers below (``core`` to ``settings``); ``study`` and the packages above
use it.
"""

from tabbench.core.extras import require_extra

require_extra("pipeline", __name__)
