"""Infrastructure every other package stands on: where each file lives (``layout``), atomic
writes and damaged-file errors (``io``), provenance, GPU claiming, entry-point loading, the
null spellings, the one "did you mean" (``suggest``) and the one Markdown table writer.

Layer 1 of docs/design.md §2, the bottom: it imports nothing else of tabbench, and every
other package may import it.
"""
