"""The configuration: every key once with its default, effect, CLI flag and help
(:mod:`~tabbench.settings.table`), and the reference page generated from it
(:mod:`~tabbench.settings.reference`).

Layer 4 of docs/design.md §2: it may import the layers below (``core``, ``metrics``,
``data``, ``models``).
"""

from tabbench.core.extras import require_extra

require_extra("pipeline", __name__)
