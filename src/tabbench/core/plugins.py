"""Loading registrations from entry points: the one mechanism behind tabbench's registries.

A registry (stopping metrics: :mod:`tabbench.metrics.registry`; models:
:mod:`tabbench.models.registry`) is the set of objects that installed distributions declare in
one entry-point group. tabbench declares its built-ins in its own ``pyproject.toml`` the same way
a third-party package declares an extension, so there is one path for both and a user adds a
metric or a model without forking tabbench:

```toml
[project.entry-points."tabbench.stopping_metrics"]
my_metric = "my_package.metrics:MY_METRIC"
```

Errors name the distribution and the entry point, since the person reading them may not know
which installed package contributed the broken registration: an entry point that fails to
import, an object of the wrong type, a name that is not a valid identifier (ids become column
suffixes, path parts and CLI flags), a name that differs from the object's own id, or an id that
two entry points claim.
"""

from __future__ import annotations

import importlib
import re
import sys
from collections.abc import Callable, Iterable, Mapping
from importlib.metadata import EntryPoint, entry_points
from typing import Any, TypeVar

#: ids (metric ids, model names, epochs keys, option names): lower-case identifiers, so that
#: ``val_<id>`` is a plain column name and a model name a plain path part and wildcard value
ID_PATTERN = re.compile(r"[a-z][a-z0-9_]*")

#: the distribution whose entry points are the built-ins
HOME_DISTRIBUTION = "tabbench"

T = TypeVar("T")


class RegistrationError(RuntimeError):
    """A broken registration: bad entry point, bad id, duplicate."""


def check_id(value: object, what: str) -> str:
    """``value`` if it is a valid id (:data:`ID_PATTERN`), else a ValueError naming ``what``.

    Parameters
    ----------
    value : object
        The candidate id.
    what : str
        What it is the id of, for the error.

    Returns
    -------
    str
        ``value``.

    Raises
    ------
    ValueError
        When ``value`` is not a lower-case identifier.
    """
    if not isinstance(value, str) or not ID_PATTERN.fullmatch(value):
        raise ValueError(
            f"{what} must be a lower-case identifier ([a-z][a-z0-9_]*), got {value!r}"
        )
    return value


def describe(ep: EntryPoint) -> str:
    """``entry point 'x' = 'mod:obj' of distribution foo 1.0`` (for error messages)."""
    dist = getattr(ep, "dist", None)
    where = (
        f"distribution {dist.name} {dist.version}" if dist is not None
        else "an unknown distribution"
    )
    return f"entry point {ep.name!r} = {ep.value!r} (group {ep.group!r}) of {where}"


def distribution_name(ep: EntryPoint) -> str | None:
    dist = getattr(ep, "dist", None)
    return None if dist is None else dist.name


def group_entry_points(group: str) -> list[EntryPoint]:
    """The entry points of ``group`` in every distribution on ``sys.path`` (one copy of each
    distribution: the first on ``sys.path`` wins, as for imports)."""
    return list(entry_points(group=group))


def load_registrations(
    group: str,
    kind: type[T],
    id_of: Callable[[T], str],
    eps: Iterable[EntryPoint] | None = None,
    conflict: Callable[[T, Mapping[str, T]], str | None] | None = None,
) -> dict[str, T]:
    """Load every entry point of ``group``: id -> object, built-ins first, in the order their
    module defines them (entry-point metadata is unordered: setuptools sorts it), then the
    others sorted by (distribution, id).

    Parameters
    ----------
    group : str
        The entry-point group.
    kind : type
        What every entry point must name an instance of.
    id_of : callable
        An object's id, which must be its entry point's name.
    eps : iterable of EntryPoint or None, default None
        The entry points (None: :func:`group_entry_points`); passing them lets a test load
        the entry points of a distribution it wrote to a temporary folder.
    conflict : callable or None, default None
        ``conflict(obj, loaded)`` may return why ``obj`` clashes with the entries loaded
        before it (e.g. two metrics with one label).

    Returns
    -------
    dict of str to object
        id -> object, in the order above.

    Raises
    ------
    RegistrationError
        Naming the distribution and entry point on any problem, and when tabbench's own
        entry points are absent (installed metadata older than the registries, or a source
        tree that was never installed: ``pip install -e .`` fixes both).
    """
    eps = group_entry_points(group) if eps is None else list(eps)
    home = [ep for ep in eps if distribution_name(ep) == HOME_DISTRIBUTION]
    others = sorted(
        (ep for ep in eps if distribution_name(ep) != HOME_DISTRIBUTION),
        key=lambda ep: (distribution_name(ep) or "", ep.name),
    )
    if not home:
        raise RegistrationError(
            f"no entry point of group {group!r} comes from the {HOME_DISTRIBUTION} distribution: "
            "its installed metadata predates the registries, or the source tree was never "
            "installed. Run `pip install -e .` in the tabbench checkout (this regenerates "
            "src/tabbench.egg-info)."
        )
    out: dict[str, T] = {}
    origin: dict[str, EntryPoint] = {}
    for ep in home + others:
        try:
            check_id(ep.name, "the entry point's name")
        except ValueError as err:
            raise RegistrationError(f"{describe(ep)}: {err}") from None
        try:
            obj: Any = ep.load()
        except Exception as err:
            raise RegistrationError(
                f"{describe(ep)} failed to import: {type(err).__name__}: {err}"
            ) from err
        if not isinstance(obj, kind):
            raise RegistrationError(
                f"{describe(ep)} names a {type(obj).__name__}, not a {kind.__name__}"
            )
        ident = id_of(obj)
        if ident != ep.name:
            raise RegistrationError(
                f"{describe(ep)}: the entry point's name must be the {kind.__name__}'s id "
                f"{ident!r}"
            )
        if ident in origin:
            raise RegistrationError(
                f"{describe(ep)}: id {ident!r} is already registered by {describe(origin[ident])}"
            )
        clash = conflict(obj, out) if conflict is not None else None
        if clash:
            raise RegistrationError(f"{describe(ep)}: {clash}")
        out[ident] = obj
        origin[ident] = ep
    home_ids = [ep.name for ep in home]
    home_ids.sort(key=lambda ident: _definition_order(origin[ident]))
    return {ident: out[ident] for ident in [*home_ids, *(ep.name for ep in others)]}


def _definition_order(ep: EntryPoint) -> tuple[str, int]:
    """(module, position of the attribute in the module's namespace): the order in which the
    module defines the objects (a module's ``__dict__`` keeps definition order)."""
    names = list(vars(sys.modules[ep.module]))
    attr = ep.attr.split(".")[0]
    return ep.module, names.index(attr) if attr in names else len(names)


def load_object(target: str) -> Any:
    """The object at ``"package.module:attribute"`` (imported now).

    Parameters
    ----------
    target : str
        ``"package.module:attribute"``.

    Returns
    -------
    object
        The attribute.
    """
    module_name, sep, attr = target.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"expected 'module:attribute', got {target!r}")
    obj: Any = importlib.import_module(module_name)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj
