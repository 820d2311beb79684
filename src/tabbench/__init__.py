"""tabbench: reproduce and extend the tabular experiments of *Rethinking Early Stopping:
Refine, Then Calibrate* (Berta, Holzmüller, Jordan, Bach, ICML 2025).

The library knows nothing of Snakemake: the workflow's rules call ``tabbench`` (the CLI in
:mod:`tabbench.cli`) or library functions with explicit paths and parameters.
"""

__version__ = "0.1.0"
