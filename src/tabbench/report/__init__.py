"""A results folder made readable (layer 9 of docs/design.md §2): redrawn (``redraw``:
selection where stale, summary, claims, figures, the report's opening page
``study_description``), published as a compact copy (``publish``, ``publish_merge``, with no
path of the publishing machine: ``machine_paths``) and embedded in a Markdown page
(``page_tables``).

The top of the library: it may use every package below it, and only the command-line layer
uses it. It needs the ``pipeline`` extra, checked here.
"""

from tabbench.core.extras import require_extra

require_extra("pipeline", __name__)
