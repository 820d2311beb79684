"""Read a ``.npy`` file without running anything it holds.

A numeric (or fixed-width string) array is read by numpy with ``allow_pickle=False``. An object
array is stored as a pickle, and unpickling can call any importable function: here it goes
through :class:`PlainUnpickler`, which resolves only the few numpy names a pickled array needs
(``_reconstruct``, ``ndarray``, ``dtype`` and ``scalar``, under numpy 1's module names and
numpy 2's) and refuses every other name before anything is called. The array that comes out must
be an object array of the header's shape whose elements are plain values (:data:`PLAIN_TYPES`,
or numpy's scalars of numbers, booleans and strings): what TALENT's categorical files hold
(strings, with NaN or None for missing). Anything else is a :class:`NotPlainData`.
"""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
from numpy.lib import format as npy_format

try:  # numpy >= 2
    from numpy._core import multiarray as _multiarray
except ImportError:  # numpy 1.x
    from numpy.core import multiarray as _multiarray  # type: ignore[no-redef]

#: the element types an object array may hold
PLAIN_TYPES: frozenset[type] = frozenset({str, int, float, bool, type(None)})
#: numpy scalars allowed as elements, by dtype kind: booleans, integers, floats, strings
_PLAIN_KINDS = "biufU"

#: the globals a pickled object array needs, under the module names numpy 1 and 2 write
_ALLOWED: dict[tuple[str, str], Any] = {
    (module, name): obj
    for module in ("numpy.core.multiarray", "numpy._core.multiarray")
    for name, obj in (("_reconstruct", _multiarray._reconstruct),
                      ("scalar", _multiarray.scalar))
} | {("numpy", "ndarray"): np.ndarray, ("numpy", "dtype"): np.dtype}


class NotPlainData(ValueError):
    """A ``.npy`` file holds something other than plain values; nothing in it was run."""


class PlainUnpickler(pickle.Unpickler):
    """An unpickler that knows only the names of :data:`_ALLOWED`: any other global (a
    function to call, a class to build) is refused before it is looked up, so no module is
    imported and nothing but numpy's array constructors is called."""

    def find_class(self, module: str, name: str) -> Any:
        try:
            return _ALLOWED[(module, name)]
        except KeyError:
            raise NotPlainData(f"it names {module}.{name}, which an array of plain values "
                               "does not need: refused, nothing run") from None

    def persistent_load(self, pid: Any) -> Any:
        raise NotPlainData("it holds a persistent reference: refused, nothing run")


def _header(fh: BinaryIO) -> tuple[tuple[int, ...], np.dtype]:
    version = npy_format.read_magic(fh)
    read = (npy_format.read_array_header_1_0 if version == (1, 0)
            else npy_format.read_array_header_2_0)
    shape, _fortran, dtype = read(fh)
    return tuple(shape), dtype


def _is_plain(kind: type) -> bool:
    return kind in PLAIN_TYPES or (issubclass(kind, np.generic)
                                   and np.dtype(kind).kind in _PLAIN_KINDS)


def load_plain(path: Path) -> np.ndarray:
    """The array in ``path``; :class:`NotPlainData` if it holds anything but plain values
    (numbers, booleans, strings, None); numpy's own errors (``ValueError``, ``EOFError``,
    ``OSError``, ``pickle.UnpicklingError``) for a damaged file."""
    with Path(path).open("rb") as fh:
        shape, dtype = _header(fh)
        if not dtype.hasobject:
            fh.seek(0)
            return np.load(fh, allow_pickle=False)
        array = PlainUnpickler(fh, encoding="ASCII", fix_imports=True).load()
    if not isinstance(array, np.ndarray) or array.dtype != object or array.shape != shape:
        what = (f"an array of dtype {array.dtype} and shape {array.shape}"
                if isinstance(array, np.ndarray) else f"a {type(array).__name__}")
        raise NotPlainData(f"it holds {what}, not the object array of shape {shape} its "
                           "header announces")
    odd = sorted({t.__name__ for t in set(map(type, array.ravel())) if not _is_plain(t)})
    if odd:
        raise NotPlainData(f"its elements include {', '.join(odd)}, not only plain strings, "
                           "numbers and None")
    return array
