"""``python -m tabbench.cli ...``: the ``tabbench`` command without its console script (e.g. a
checkout used through PYTHONPATH, or a test that needs a subprocess of this interpreter)."""

import sys

from tabbench.cli import main

sys.exit(main())
