"""The README's configuration tables and the settings name the same variables: the
server's own (``Settings``) and the built-in connectors' options, each read from its own
variable (``ConnectorOptions.env_prefix``)."""

from __future__ import annotations

import re
from pathlib import Path

from app.settings import Settings
from connectors.registry import load_connectors

README = Path(__file__).resolve().parents[2] / "README.md"
# A table row that documents a variable: "| `SWITCHBOARD_NAME` | default | meaning |".
ROW = re.compile(r"^\| `(SWITCHBOARD_[A-Z0-9_]+)` \|", re.M)


def test_every_setting_is_documented_and_every_documented_one_exists() -> None:
    documented = set(ROW.findall(README.read_text(encoding="utf-8")))
    fields = {f"SWITCHBOARD_{name.upper()}" for name in Settings.model_fields}
    for connector in load_connectors(Settings()):
        if connector.options is not None and connector.options.env_prefix is not None:
            fields.update(map(connector.options.env_name, connector.options.model_fields))
    assert not fields - documented, f"missing from README's table: {sorted(fields - documented)}"
    assert not documented - fields, f"documented but not settings: {sorted(documented - fields)}"
