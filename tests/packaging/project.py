"""What pyproject.toml declares and what the lock files pin, read the way pip reads them."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import NormalizedName, canonicalize_name

from tests.support.processes import ROOT

RUNTIME_LOCK = ROOT / "requirements.lock"
DEV_LOCK = ROOT / "requirements-dev.lock"
# The extras the dev lock holds (Makefile: `make lock`).
LOCKED_EXTRAS = ("dev", "bench", "container-lint")

# `name==version [; marker] \` opens each pinned requirement in uv's output.
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;\\]+)")


def project() -> dict[str, object]:
    table: dict[str, object] = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))[
        "project"
    ]
    return table


def requirements(*extras: str) -> list[Requirement]:
    """The runtime dependencies, then those of each of ``extras``."""
    table = project()
    declared = list(table["dependencies"])  # type: ignore[call-overload]
    optional: dict[str, list[str]] = table["optional-dependencies"]  # type: ignore[assignment]
    for extra in extras:
        declared += optional[extra]
    return [Requirement(line) for line in declared]


def floor(requirement: Requirement) -> str | None:
    """The version of its ``>=`` bound, if it has one."""
    lows = [spec.version for spec in requirement.specifier if spec.operator == ">="]
    return lows[0] if len(lows) == 1 else None


@dataclass(frozen=True)
class Pin:
    version: str
    hashes: int


def pins(lock: Path) -> dict[NormalizedName, Pin]:
    """Every pinned distribution of a lock file and how many file hashes it lists."""
    found: dict[NormalizedName, Pin] = {}
    name: NormalizedName | None = None
    for line in lock.read_text("utf-8").splitlines():
        match = _PIN.match(line)
        if match:
            name = canonicalize_name(match[1])
            found[name] = Pin(match[2], 0)
        elif name is not None and line.strip().startswith("--hash=sha256:"):
            found[name] = Pin(found[name].version, found[name].hashes + 1)
    return found
