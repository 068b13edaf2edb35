"""schemathesis against a real server: every operation of /openapi.json, in local and in
token mode, with generated valid and invalid input (its examples, coverage, fuzzing and
stateful phases). No answer may be a server error, and every answer must be one the
document lists, with its media type, headers and schema; in token mode a call without
the token must be refused.

Run as schemathesis' own command (``st run``), the way its phases and checks are meant to
run (its pytest loader for a schema known only once a server runs does not work with
pytest 9). Bounded and deterministic: ``--generation-deterministic`` (the same cases
every run, no seed) and ``MAX_EXAMPLES`` generated cases per operation and phase.

One check is left out: ``positive_data_acceptance`` wants every schema-valid request
accepted, but what this API accepts also depends on state no schema can say: a cursor
must come from a previous page, a connector in demo mode has nothing to ``finish``, a
server-key connector nothing to disconnect, ``debug=true`` needs the server's setting,
an AG-UI thread id or an Open Responses prompt must be of a chat's form. Those refusals
are 400s with a message, which ``negative_data_rejection`` and the schema checks cover.
"""

from __future__ import annotations

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


def test_every_operation_answers_as_documented(api_server: ApiServer, tmp_path: Path) -> None:
    command = [
        str(ST),
        "run",
        f"{api_server.http}/openapi.json",
        "--checks=all",
        "--exclude-checks=positive_data_acceptance",
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
    run = subprocess.run(
        command, capture_output=True, text=True, timeout=RUN_DEADLINE, cwd=tmp_path, check=False
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
    tested = set(re.findall(r'"label": ?"([A-Z]+ /[^"]*)"', events))
    expected = operations - {"GET /openapi.json"}
    assert tested == expected, f"not tested: {expected - tested}; unknown: {tested - expected}"
