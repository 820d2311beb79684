"""How a job's check refuses a target while the DAG is built: in one line."""

from __future__ import annotations


class Refused(SystemExit):
    """A target, dataset or model the run cannot take, said in one ``tabbench:`` line.

    A ``SystemExit``: the workflow stops before any lock, job or file is written, and Snakemake
    passes it through its DAG building, where any other exception raised in an input function
    would reach the terminal wrapped in a dozen lines."""

    def __init__(self, why: str) -> None:
        super().__init__(f"tabbench: {why}")
