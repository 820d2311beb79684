"""MkDocs hooks of the documentation site (``hooks:`` in mkdocs.yml).

The docstrings cross-reference in Sphinx's roles (``:func:`tabbench.stopping.refinement_loss```),
which mkdocstrings' Python handler leaves as text before the code span it renders: ":func:" in
front of every reference on the API pages. The hook drops the role and keeps the code span.
"""

from __future__ import annotations

import re
from typing import Any

ROLE = re.compile(r":(?:py:)?(?:class|func|meth|mod|attr|data|obj|exc|const):(?=<code>)")


def on_page_content(html: str, **kwargs: Any) -> str:
    """The page's HTML with the Sphinx roles before code spans removed."""
    return ROLE.sub("", html)
