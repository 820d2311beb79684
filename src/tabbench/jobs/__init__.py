"""What the workflow's jobs are given, as plain functions over the configuration mapping,
wildcard values and paths: each rule's params (which of them are rerun triggers follows the
settings table: ``triggers``), its inputs and the checks that refuse a target while the DAG is
built (``data``, ``train``, ``drawing``), the study's targets, and what a run says in the
terminal at its start and end (``messages``). The Snakemake files under ``workflow/`` call
these in one line each; this package knows nothing of Snakemake.

Layer 10 of docs/design.md §2, beside ``cli/`` (neither imports the other): it may use every
package below it, and only the workflow uses it. It needs the ``pipeline`` extra, checked here.
"""

from tabbench.core.extras import require_extra

require_extra("pipeline", __name__)
