"""The workflow's own configuration files (:mod:`tabbench.jobs.configuration`)."""

from __future__ import annotations

from tabbench.jobs.configuration import configfile_values


def test_the_configfiles_but_those_the_command_line_gave(tmp_path):
    first, second, given = (tmp_path / n for n in ("a.yaml", "b.yaml", "c.yaml"))
    first.write_text("seed: 1\ndevice: cpu\n")
    second.write_text("seed: 2\n")
    given.write_text("seed: 3\n")
    assert configfile_values([first, second, given], [str(given)]) == {"seed": 2,
                                                                      "device": "cpu"}
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    assert configfile_values([empty], []) == {}
