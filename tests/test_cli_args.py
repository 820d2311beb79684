from __future__ import annotations

import argparse

import pytest

from tabbench.cli.args import boolean, optional_str


@pytest.mark.parametrize(
    ("text", "value"), [("True", True), ("yes", True), ("0", False), ("false", False)]
)
def test_boolean_accepts_what_snakemake_renders(text: str, value: bool) -> None:
    assert boolean(text) is value


def test_boolean_rejects_other_text() -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="expected true/false"):
        boolean("maybe")


def test_null_config_values_become_none() -> None:
    assert optional_str("None") is None and optional_str("") is None
    assert optional_str("/tmp/locks") == "/tmp/locks"
