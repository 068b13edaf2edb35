"""The lock files `make run` and `make test` install from: complete for what pyproject.toml
declares (a dependency added without `make lock` fails here, not on someone's fresh clone),
hash-pinned, consistent with each other, and the runtime one free of dev-only tools."""

from __future__ import annotations

from packaging.utils import canonicalize_name

from tests.packaging.project import (
    DEV_LOCK,
    LOCKED_EXTRAS,
    RUNTIME_LOCK,
    floor,
    pins,
    requirements,
)

REFRESH = "make lock"


def test_every_direct_dependency_declares_a_floor() -> None:
    """The lowest-versions test installs each floor; a dependency without one is untested."""
    extras = ("testing", *LOCKED_EXTRAS)
    assert [str(r) for r in requirements(*extras) if floor(r) is None] == []


def test_each_lock_pins_what_pyproject_declares_within_its_bounds() -> None:
    for lock, extras in ((RUNTIME_LOCK, ()), (DEV_LOCK, LOCKED_EXTRAS)):
        pinned = pins(lock)
        for requirement in requirements(*extras):
            name = canonicalize_name(requirement.name)
            assert name in pinned, f"{requirement} is missing from {lock.name}: run {REFRESH}"
            assert requirement.specifier.contains(pinned[name].version, prereleases=True), (
                f"{lock.name} pins {name}=={pinned[name].version}, outside {requirement}: "
                f"run {REFRESH}"
            )


def test_every_pin_carries_hashes() -> None:
    for lock in (RUNTIME_LOCK, DEV_LOCK):
        pinned = pins(lock)
        assert len(pinned) > 20, f"{lock.name} pins almost nothing"
        assert [name for name, pin in pinned.items() if pin.hashes == 0] == []


def test_the_runtime_lock_is_the_dev_locks_runtime_part() -> None:
    runtime, dev = pins(RUNTIME_LOCK), pins(DEV_LOCK)
    assert {name: pin.version for name, pin in runtime.items()} == {
        name: dev[name].version for name in runtime if name in dev
    }
    assert set(runtime) <= set(dev)
    # `make run` installs none of the tools the dev extras bring.
    tools = {canonicalize_name(r.name) for r in requirements(*LOCKED_EXTRAS)} - {
        canonicalize_name(r.name) for r in requirements()
    }
    assert {"pytest", "hypothesis", "ruff", "playwright", "mypy", "uv"} <= tools
    assert sorted(tools & set(runtime)) == []
