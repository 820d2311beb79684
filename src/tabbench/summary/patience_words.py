"""The ``patience`` setting written as command-line words: the one grammar of ``--patience``.

Config ``patience`` is YAML (null, a list, or a mapping model -> list); on the command line
every command that takes it (``tabbench select``, ``figures``, ``stopping-rules``) reads the
same words, so that a patience typed for one command works for the others:

* ``--patience 20 50``: patiences 20 and 50 for every model (config ``[20, 50]``);
* ``--patience`` with no word: the whole-run rule only (config ``[]``);
* ``--patience null``: each model's defaults (config null);
* ``--patience xgboost=20,50 mlp=8 realmlp=``: per model (config
  ``{xgboost: [20, 50], mlp: [8], realmlp: []}``; a model not named takes its defaults). Only a
  command that selects more than one model takes this form: ``tabbench select`` handles one
  model, whose patiences are the plain form.

:func:`parse_patience` reads the words, :func:`patience_words` writes a setting back as them
(:func:`patience_argument`: the flag the workflow renders its config as); the two are inverse
up to order and repeats.
:func:`tabbench.summary.stopping_rules.patiences_for` then gives each model its patiences.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from typing import Any

from tabbench.core.nulls import is_null

#: how the grammar is shown in an error and in the CLI's help
GRAMMAR = ("'P [P ...]' (every model), no word (the whole-run rule only), 'null' (each model's "
           "defaults) or 'MODEL=P,P ... [MODEL=...]' (per model)")


class PatienceWordsError(ValueError):
    """Words that are not a ``patience`` setting; the message says which and what is."""


def _patience(text: str, words: Sequence[str]) -> int:
    if not text.isdigit() or int(text) < 1:
        raise PatienceWordsError(f"{text!r} in --patience {' '.join(words)} is no patience "
                                 f"(an integer >= 1); expected {GRAMMAR}")
    return int(text)


def parse_patience(words: Sequence[str], *, per_model: bool = True) -> Any:
    """The ``patience`` setting the words spell (module docstring): None, a list of integers,
    or a mapping model -> list. ``per_model`` False refuses the mapping form (a command that
    handles one model)."""
    words = list(words)
    if len(words) == 1 and is_null(words[0]):
        return None
    named = [w for w in words if "=" in w]
    if not named:
        return [_patience(w, words) for w in words]
    if not per_model:
        raise PatienceWordsError(f"--patience {' '.join(words)}: this command handles one "
                                 "model, so its patiences are 'P [P ...]' (no MODEL=)")
    if len(named) != len(words):
        raise PatienceWordsError(f"--patience {' '.join(words)} mixes patiences for every "
                                 f"model with per-model ones; expected {GRAMMAR}")
    out: dict[str, list[int]] = {}
    for word in words:
        model, _, values = word.partition("=")
        if not model or model in out:
            raise PatienceWordsError(f"--patience {' '.join(words)}: "
                                     + (f"{model!r} is named twice" if model else
                                        f"{word!r} names no model") + f"; expected {GRAMMAR}")
        out[model] = [_patience(v, words) for v in values.split(",")] if values else []
    return out


def patience_words(setting: Any) -> list[str]:
    """The words of ``setting`` (None, a list, or a mapping model -> list or None) that
    :func:`parse_patience` reads back as the same patiences for every model: a mapping's
    null entries (that model's defaults) are left out, as a model not named takes them."""
    if setting is None:
        return ["null"]
    if isinstance(setting, Mapping):
        words = [f"{model}={','.join(str(int(p)) for p in values)}"
                 for model, values in setting.items() if values is not None]
        return words or ["null"]
    return [str(int(p)) for p in setting]


def patience_argument(setting: Any) -> str:
    """``--patience`` and the words of ``setting``, quoted for a shell command (the flag the
    workflow gives ``tabbench figures``)."""
    return shlex.join(["--patience", *patience_words(setting)])
