"""Source ``talent``: a local copy of TALENT's ``dataset-latest.zip`` (what the paper used).

Layout per dataset (TALENT ``model/lib/data.py``): ``<talent_dir>/<name>/info.json`` and
``{N,C,y}_{train,val,test}.npy``; ``N_*`` (numerical) and ``C_*`` (categorical) may each be
absent, ``y_*`` may not. TALENT's categorical arrays (and some label arrays) are object arrays of
strings, which ``.npy`` stores as a pickle: they are read by a loader that runs nothing and
accepts only plain strings, numbers and None (:mod:`tabbench.data.sources.plain_npy`); a file
holding anything else makes the dataset unavailable from this source, in one line. The three
parts are concatenated in the order train, val, test and TALENT's split is discarded: our own
splits (docs/design.md §3) are drawn later.
"""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import numpy as np
import pandas as pd

from tabbench.data.errors import DataError, SourceUnavailable
from tabbench.data.raw import RawData, make_raw
from tabbench.data.sources.options import SourceOptions
from tabbench.data.sources.plain_npy import NotPlainData, load_plain

PARTS = ("train", "val", "test")
CLASSIFICATION_TASKS = ("binclass", "multiclass")


def _load_npy(path: Path, name: str) -> np.ndarray:
    try:
        return load_plain(path)
    except NotPlainData as e:
        raise DataError(f"{name}: {path} is not loaded: {e}") from None
    except (OSError, EOFError, ValueError, pickle.UnpicklingError) as e:  # empty or truncated
        raise DataError(f"{name}: cannot read {path}: {type(e).__name__}: {e}") from e


def _concat(
    folder: Path, prefix: str, name: str, required: bool
) -> tuple[np.ndarray, dict[str, int]] | None:
    paths = [folder / f"{prefix}_{p}.npy" for p in PARTS]
    present = [p.is_file() for p in paths]
    if not any(present):
        if required:
            raise DataError(f"{name}: TALENT folder {folder} has no {prefix}_*.npy files")
        return None
    if not all(present):
        lacking = [p.name for p, ok in zip(paths, present, strict=True) if not ok]
        raise DataError(f"{name}: TALENT folder {folder} lacks {lacking}")
    arrays = [_load_npy(p, name) for p in paths]
    if prefix != "y":
        arrays = [a.reshape(-1, 1) if a.ndim == 1 else a for a in arrays]
        widths = {a.shape[1] for a in arrays}
        if len(widths) != 1:
            raise DataError(f"{name}: {prefix}_* parts have different widths {sorted(widths)}")
    else:
        arrays = [a.reshape(-1) for a in arrays]
    sizes = {p: int(a.shape[0]) for p, a in zip(PARTS, arrays, strict=True)}
    return np.concatenate(arrays, axis=0), sizes


def load(name: str, options: SourceOptions) -> RawData:
    """Load ``name`` from the TALENT folder ``options.talent_dir``."""
    if options.talent_dir is None:
        raise SourceUnavailable("no talent_dir configured")
    root = Path(options.talent_dir)
    if not root.is_dir():
        raise SourceUnavailable(f"talent_dir {root} is not a folder")
    folder = root / name
    if not folder.is_dir() and (root / "data" / name).is_dir():
        folder = root / "data" / name  # the zip unpacks to data/<name>/
    if not folder.is_dir():
        raise SourceUnavailable(f"no folder {name!r} in {root}")
    info_path = folder / "info.json"
    try:
        info = json.loads(info_path.read_text())
    except (OSError, ValueError) as e:
        raise DataError(f"{name}: cannot read {info_path}: {e}") from e
    task = info.get("task_type")
    if task not in CLASSIFICATION_TASKS:
        raise DataError(f"{name}: TALENT task_type is {task!r}, not a classification task")
    n_part = _concat(folder, "N", name, required=False)
    c_part = _concat(folder, "C", name, required=False)
    y_part = _concat(folder, "y", name, required=True)
    assert y_part is not None
    y, sizes = y_part
    N = None if n_part is None else n_part[0]
    C = None if c_part is None else c_part[0]
    if N is None and C is None:
        raise DataError(f"{name}: TALENT folder {folder} has neither N_*.npy nor C_*.npy")
    num = None if N is None else pd.DataFrame(N, columns=[f"N{i}" for i in range(N.shape[1])])
    cat = None if C is None else pd.DataFrame(C, columns=[f"C{i}" for i in range(C.shape[1])])
    origin = {"source": "talent", "folder": str(folder), "task_type": task, "talent_sizes": sizes}
    return make_raw(num, cat, y, name, origin)
