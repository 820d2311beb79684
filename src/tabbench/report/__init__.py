"""A results folder redrawn (``results_folder``: selection where stale, summary, claims, figures,
the report's opening page ``study_description``), published (``publish``, ``publish_merge``: a
compact copy, one copy from two) and embedded in a Markdown page (``page_tables``)."""

from tabbench.core.extras import require_extra

require_extra("pipeline", __name__)
