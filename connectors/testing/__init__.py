"""The connector contract kit (``ConnectorContract``), the pieces it is built from, and a
scripted model for testing multi-step flows offline (``run_script``).

Install with ``pip install 'switchboard-server[testing]'``: the kit needs pytest,
pytest-asyncio, hypothesis and hypothesis-jsonschema, which the server does not. Without
them, importing the kit raises ModuleNotFoundError naming the extra.
"""

# First: without the testing extra, this fails with a message naming it.
from connectors.testing import _extra  # noqa: F401
from connectors.testing.arguments import generated_arguments, sample_arguments, simple_arguments
from connectors.testing.contract import ConnectorContract
from connectors.testing.harness import Harness, harness
from connectors.testing.invoke import call_tool, tools_of
from connectors.testing.scripted import (
    ApprovalAsked,
    Flow,
    ToolCall,
    call,
    reply,
    run_script,
)

__all__ = [
    "ApprovalAsked",
    "ConnectorContract",
    "Flow",
    "Harness",
    "ToolCall",
    "call",
    "call_tool",
    "generated_arguments",
    "harness",
    "reply",
    "run_script",
    "sample_arguments",
    "simple_arguments",
    "tools_of",
]
