"""Infrastructure every other package stands on: where each file lives (``layout``), atomic
writes and damaged-file errors (``io``), provenance, GPU claiming, entry-point loading, the
null spellings, the one "did you mean" (``suggest``) and the one Markdown table writer. It
imports nothing else of tabbench."""
