"""Judging a study: which epoch and config each stopping metric chose (``select``, under the
stopping rules of ``stopping_rules``), how two methods compare (``comparisons``), the summary's
tables and Markdown, the paper's claims (``claims/``) and the stopping rules' own summary, all of
it written into ``results/summary/`` by ``aggregate`` (docs/design.md §2, §7)."""

from tabbench.core.extras import require_extra

require_extra("pipeline", __name__)
