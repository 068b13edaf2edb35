"""schemathesis against a real server: every operation of /openapi.json, in local and in
token mode, with generated valid and invalid input (its examples, coverage, fuzzing and
stateful phases). No answer may be a server error, and every answer must be one the
document lists, with its media type, headers and schema; in token mode a call without
the token must be refused.

Run as schemathesis' own command (``st run``), the way its phases and checks are meant to
run (its pytest loader for a schema known only once a server runs does not work with
pytest 9). Bounded and deterministic: ``--generation-deterministic`` (the same cases
every run, no seed) and ``MAX_EXAMPLES`` generated cases per operation and phase.

Every check runs, ``positive_data_acceptance`` included: whatever the document says is a
valid request, the server accepts (2xx, or 401/403/404/409/429 for what depends on who
asks and on the data, never a 400). Where validity rests on something OpenAPI 3.1 cannot
state (a cursor from a previous page, the bytes of a file, the last message of a run,
items that answer an earlier response), ``tests/api/schemathesis_hooks.py`` makes the
generated valid case so, and says why.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import httpx

from tests.api.conftest import ApiServer

MAX_EXAMPLES = 12
# A run takes about 40 s on an idle 2-core machine; a loaded one may take several times that.
RUN_DEADLINE = 600
ST = Path(sys.executable).parent / "st"
ROOT = Path(__file__).resolve().parents[2]


def test_every_operation_answers_as_documented(api_server: ApiServer, tmp_path: Path) -> None:
    command = [
        str(ST),
        f"--config-file={Path(__file__).with_name('schemathesis.toml')}",
        "run",
        f"{api_server.http}/openapi.json",
        f"--max-examples={MAX_EXAMPLES}",
        "--generation-deterministic",
        "--workers=1",
        "--request-timeout=60",
        "--no-color",
        "--report=ndjson",
        f"--report-ndjson-path={tmp_path / 'events.ndjson'}",
    ]
    for name, value in api_server.headers.items():
        command.append(f"--header={name}: {value}")
    env = {
        **os.environ,
        "SCHEMATHESIS_HOOKS": "tests.api.schemathesis_hooks",
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    run = subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=RUN_DEADLINE,
        cwd=tmp_path,
        check=False,
        env=env,
    )
    output = run.stdout + run.stderr
    assert run.returncode == 0, (
        output[-20000:] + "\n--- server log ---\n" + api_server.log()[-5000:]
    )
    # It really tested every operation of the document but the one serving the document,
    # which schemathesis leaves out when it loads the document from it.
    document = httpx.get(f"{api_server.http}/openapi.json", timeout=30).json()
    operations = {
        f"{method.upper()} {path}" for path, item in document["paths"].items() for method in item
    }
    events = (tmp_path / "events.ndjson").read_text()
    # Every check ran, positive_data_acceptance included (tests/api/schemathesis.toml).
    ran = set(re.findall(r'"name": ?"([a-z_]+)"', events))
    wanted = {"positive_data_acceptance", "negative_data_rejection", "not_a_server_error"}
    assert wanted | {"response_schema_conformance", "status_code_conformance"} <= ran
    tested = set(re.findall(r'"label": ?"([A-Z]+ /[^"]*)"', events))
    expected = operations - {"GET /openapi.json"}
    assert tested == expected, f"not tested: {expected - tested}; unknown: {tested - expected}"
