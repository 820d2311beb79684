"""The one grammar of ``--patience`` (tabbench.summary.patience_words): what each form means,
what is refused and why, the workflow's rendering read back as the same setting, and every
command that takes the flag reading it alike."""

from __future__ import annotations

import pytest

from tabbench.cli import build_parser
from tabbench.summary.patience_words import (
    PatienceWordsError,
    parse_patience,
    patience_argument,
    patience_words,
)
from tabbench.summary.stopping_rules import default_patiences, patiences_for


@pytest.mark.parametrize(("words", "setting"), [
    (["20", "50"], [20, 50]),
    ([], []),
    (["null"], None),
    (["None"], None),  # as Snakemake renders a null config value
    (["xgboost=20,50", "mlp=8"], {"xgboost": [20, 50], "mlp": [8]}),
    (["realmlp="], {"realmlp": []}),
])
def test_each_form_reads_as_the_config_setting_it_stands_for(words, setting) -> None:
    assert parse_patience(words) == setting


def test_a_mapping_gives_each_named_model_its_patiences_and_the_others_their_defaults() -> None:
    setting = parse_patience(["xgboost=50,20", "realmlp="])
    assert patiences_for(setting, "xgboost") == (20, 50)
    assert patiences_for(setting, "realmlp") == ()
    assert patiences_for(setting, "mlp") == default_patiences("mlp")


@pytest.mark.parametrize(("words", "says"), [
    (["0"], "'0' in --patience 0 is no patience"),
    (["-3"], "is no patience"),
    (["twenty"], "'twenty' in --patience twenty is no patience"),
    (["[20, 50]"], "is no patience"),  # the YAML form is config's, not the flag's
    (["20", "mlp=8"], "mixes patiences for every model with per-model ones"),
    (["mlp=8", "mlp=16"], "'mlp' is named twice"),
    (["=8"], "names no model"),
    (["mlp=8,x"], "'x' in --patience mlp=8,x is no patience"),
])
def test_what_is_no_patience_is_refused_with_the_word_and_the_grammar(words, says) -> None:
    with pytest.raises(PatienceWordsError, match="expected") as err:
        parse_patience(words)
    assert says in str(err.value)


def test_a_command_of_one_model_refuses_the_mapping_form() -> None:
    assert parse_patience(["8", "16"], per_model=False) == [8, 16]
    with pytest.raises(PatienceWordsError, match="handles one model"):
        parse_patience(["mlp=8"], per_model=False)


@pytest.mark.parametrize("setting", [
    None, [], [20, 50], {"xgboost": [20, 50], "mlp": [8]}, {"mlp": []},
    {"xgboost": None, "mlp": [8]}, {"xgboost": None},
])
def test_the_workflows_rendering_reads_back_as_the_same_patiences(setting) -> None:
    back = parse_patience(patience_words(setting))
    for model in ("xgboost", "mlp", "realmlp"):
        assert patiences_for(back, model) == patiences_for(setting, model)


def test_the_rendered_flag_of_a_null_setting_is_the_one_shipped_folders_ran_with() -> None:
    # the regenerate job's command of a folder with the default setting is unchanged
    assert patience_argument(None) == "--patience null"
    assert patience_argument({"xgboost": [20, 50], "mlp": []}) == \
        "--patience xgboost=20,50 mlp="


@pytest.mark.parametrize("command", [
    ["select", "--runs", "R", "--out", "O"],
    ["figures", "--results", ".", "--out", "O"],
    ["stopping-rules", "--results", "."],
])
def test_every_command_reads_the_plain_form_alike(command) -> None:
    parser = build_parser()
    assert parser.parse_args([*command, "--patience", "20", "50"]).patience == [20, 50]
    assert parser.parse_args([*command, "--patience"]).patience == []
    assert parser.parse_args([*command, "--patience", "null"]).patience is None


def test_a_wrong_patience_ends_in_argparses_one_line(capsys) -> None:
    with pytest.raises(SystemExit) as exit_:
        build_parser().parse_args(["select", "--runs", "R", "--out", "O", "--patience",
                                   "mlp=8"])
    assert exit_.value.code == 2
    assert "tabbench select: error: --patience mlp=8: this command handles one model" in \
        capsys.readouterr().err
