"""The kit runs on the ``testing`` extra's distributions, which the server never installs
(``make run`` and the wheel leave them out): importing the kit without them fails here,
naming the extra to install, instead of deep inside on a bare module name.

Imported first by ``connectors.testing``, so any import of the kit or one of its modules
checks it. Nothing at runtime imports the kit (an import-linter contract in pyproject.toml).
"""

from __future__ import annotations

from importlib.util import find_spec

from connectors.names import DISTRIBUTION

# The module each of the extra's distributions provides. pytest and pytest-asyncio run
# ConnectorContract's test methods; Hypothesis generates tool arguments from their schemas;
# blockbuster finds blocking calls a tool makes on the event loop.
NEEDED = {
    "pytest": "pytest",
    "pytest_asyncio": "pytest-asyncio",
    "hypothesis": "hypothesis",
    "hypothesis_jsonschema": "hypothesis-jsonschema",
    "blockbuster": "blockbuster",
}
INSTALL = f"pip install '{DISTRIBUTION}[testing]'"


def missing_distributions() -> list[str]:
    """The extra's distributions that cannot be imported here."""
    return [dist for module, dist in NEEDED.items() if find_spec(module) is None]


def require_testing_extra() -> None:
    missing = missing_distributions()
    if missing:
        raise ModuleNotFoundError(
            "connectors.testing (the connector contract kit) needs the 'testing' extra, "
            f"which is not installed here (missing: {', '.join(missing)}): {INSTALL}",
            name=missing[0],
        )


require_testing_extra()
