"""The import contract (pyproject.toml [tool.importlinter]) places every module in one layer."""

from __future__ import annotations

import re
import tomllib

from tests.conftest import ROOT

SRC = ROOT / "src"
# Package roots that hold only the version or a docstring: no layer can hold them, as a layer that
# names a package holds all its modules.
OUTSIDE = {"oomtrace", "oomtrace.watch"}


def _modules() -> set[str]:
    found = set()
    for path in (SRC / "oomtrace").rglob("*.py"):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found.add(".".join(parts))
    return found


def _layers() -> list[set[str]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    (contract,) = [c for c in config["contracts"] if c["type"] == "layers"]
    return [{name.strip() for name in re.split(r"[:|]", layer)} for layer in contract["layers"]]


def _holders(module: str, layers: list[set[str]]) -> list[int]:
    """The layers that name the module or a package holding it."""
    return [
        number
        for number, layer in enumerate(layers, 1)
        if any(module == name or module.startswith(name + ".") for name in layer)
    ]


def test_every_module_is_in_exactly_one_layer() -> None:
    layers = _layers()
    placed = {module: _holders(module, layers) for module in _modules() - OUTSIDE}
    assert {module: found for module, found in placed.items() if len(found) != 1} == {}
    assert {module for module in OUTSIDE if _holders(module, layers)} == set()


def test_every_name_in_the_layers_is_a_module() -> None:
    named = set().union(*_layers())
    assert named - _modules() == set()
