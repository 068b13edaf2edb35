"""A scripted model for testing a connector's multi-step flows offline, through the real
Agents SDK runner: the script says what the model does at each turn (call this tool with
these arguments, or answer this text); the tools, the approval pause and the resume are
the real ones. Built on the SDK's own ``agents.testing.ScriptedModel``.

::

    flow = await run_script(
        connector,
        [
            call("find_contact", {"name": "Bob"}),
            call("send_message", lambda flow: {"to": flow.output("find_contact")["response"]["id"]}),
            reply("Sent."),
        ],
        approve={"send_message": True},
    )
    assert flow.asked == ["send_message"] and flow.final_text == "Sent."

Approvals follow the app's policy (``connectors.approvals``; by default every tool that
declares side effects, or declares nothing, asks). The paused run is saved and restored as
the app does (``RunState.to_json``/``from_json``) before each decision is applied with
``RunState.approve``/``reject``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from agents import Agent, RunConfig, RunContextWrapper, RunHooks, Runner, RunState, Tool
from agents.items import TResponseOutputItem
from agents.result import RunResult
from agents.testing import ModelCall, ModelStep, ScriptedModel, assistant_message, function_call
from agents.tool_context import ToolContext

from connectors.approvals import ApprovalPolicy, apply_policy
from connectors.context import ChatContext
from connectors.registry import Connector
from connectors.settings import ConnectorSettings
from connectors.testing.harness import harness

__all__ = [
    "ApprovalAsked",
    "Flow",
    "ScriptCall",
    "ScriptReply",
    "ToolCall",
    "call",
    "reply",
    "run_script",
]

Arguments = Mapping[str, Any] | Callable[["Flow"], Mapping[str, Any]]

# What the model reads instead of a declined call's output (the app says the same).
DECLINED = (
    "Not run: the user declined this call, so nothing was done. Do not try again unless "
    "the user asks."
)


@dataclass(frozen=True)
class ScriptCall:
    """One turn of the model: call ``tool`` with ``arguments`` (a callable gets the flow so
    far, to use an earlier tool's output)."""

    tool: str
    arguments: Arguments = field(default_factory=dict)


@dataclass(frozen=True)
class ScriptReply:
    """The model's final answer."""

    text: str


def call(tool: str, arguments: Arguments | None = None) -> ScriptCall:
    return ScriptCall(tool, arguments if arguments is not None else {})


def reply(text: str) -> ScriptReply:
    return ScriptReply(text)


Step = ScriptCall | ScriptReply | Sequence[ScriptCall]  # a sequence: parallel calls


@dataclass(frozen=True)
class ToolCall:
    """A tool call that ran: its arguments and what it returned (a ToolResponse dict for a
    connector tool)."""

    tool: str
    arguments: dict[str, Any]
    output: Any
    call_id: str

    @property
    def response_type(self) -> str | None:
        return self.output.get("response_type") if isinstance(self.output, dict) else None

    @property
    def hidden(self) -> bool:
        """A result only the model sees (``display_response=False``), e.g. a lookup."""
        return isinstance(self.output, dict) and self.output.get("display_response") is False


@dataclass(frozen=True)
class ApprovalAsked:
    """A call the run paused on; ``approved`` is None when the script left it undecided."""

    tool: str
    arguments: dict[str, Any]
    approved: bool | None


@dataclass
class Flow:
    """What happened: the calls that ran, the approvals asked, the final answer."""

    calls: list[ToolCall] = field(default_factory=list)
    approvals: list[ApprovalAsked] = field(default_factory=list)
    final_text: str | None = None
    # True when the run stopped on an approval the script did not decide.
    paused: bool = False
    model: ScriptedModel | None = None  # the SDK's model: ``model.calls`` has each input

    @property
    def tools_called(self) -> list[str]:
        return [record.tool for record in self.calls]

    @property
    def asked(self) -> list[str]:
        """The tools whose calls waited for approval, in order."""
        return [approval.tool for approval in self.approvals]

    def output(self, tool: str) -> Any:
        """The output of the last call of ``tool`` that ran."""
        for record in reversed(self.calls):
            if record.tool == tool:
                return record.output
        raise AssertionError(f"{tool} has not run; the calls that ran: {self.tools_called}")


class _Recorder(RunHooks[Any]):
    """Keeps each call that ran, as it ends (a later scripted step may read it)."""

    def __init__(self, flow: Flow) -> None:
        self.flow = flow

    async def on_tool_end(
        self, context: RunContextWrapper[Any], agent: Agent[Any], tool: Tool, result: object
    ) -> None:
        if isinstance(context, ToolContext):
            self.flow.calls.append(
                ToolCall(
                    context.tool_name,
                    _arguments(context.tool_arguments),
                    result,
                    context.tool_call_id,
                )
            )


def _arguments(text: str | None) -> dict[str, Any]:
    try:
        value = json.loads(text or "{}")
    except json.JSONDecodeError:
        return {"_raw": text}
    return value if isinstance(value, dict) else {"_raw": value}


def _model_steps(script: Sequence[Step], flow: Flow) -> list[ModelStep]:
    steps = []
    counter = iter(range(1, 10_000))
    for index, step in enumerate(script):
        if isinstance(step, ScriptReply):
            items: list[TResponseOutputItem] = [
                assistant_message(step.text, item_id=f"msg_{index}")
            ]
            steps.append(ModelStep(output=items))
            continue
        calls = [step] if isinstance(step, ScriptCall) else list(step)
        if not calls or not all(isinstance(item, ScriptCall) for item in calls):
            raise TypeError(
                f"script step {index} is {step!r}: use call(tool, arguments), reply(text), "
                "or a list of call(...) for parallel calls"
            )
        ids = [f"call_{next(counter)}" for _ in calls]
        steps.append(ModelStep.respond(_responder(calls, ids, flow)))
    return steps


def _responder(
    calls: list[ScriptCall], ids: list[str], flow: Flow
) -> Callable[[ModelCall], list[TResponseOutputItem]]:
    # Arguments are resolved when the model is called, so they may use earlier outputs.
    def respond(model_call: ModelCall) -> list[TResponseOutputItem]:
        offered = {getattr(tool, "name", None) for tool in model_call.tools}
        items: list[TResponseOutputItem] = []
        for scripted, call_id in zip(calls, ids, strict=True):
            if scripted.tool not in offered:
                raise AssertionError(
                    f"the script calls {scripted.tool!r}, which the agent does not offer "
                    f"(it offers {sorted(name for name in offered if name)})"
                )
            arguments = scripted.arguments
            resolved = arguments(flow) if callable(arguments) else arguments
            items.append(function_call(scripted.tool, dict(resolved), call_id=call_id))
        return items

    return respond


def _decision(approve: bool | Mapping[str, bool] | None, tool: str) -> bool | None:
    if approve is None or isinstance(approve, bool):
        return approve
    return approve.get(tool)


@asynccontextmanager
async def _servers_connected(agent: Agent[Any]) -> AsyncIterator[None]:
    async with AsyncExitStack() as stack:
        for server in agent.mcp_servers:
            await server.connect()  # type: ignore[no-untyped-call]  # unannotated in the SDK
            stack.push_async_callback(server.cleanup)
        yield


async def run_script(
    target: Connector | Agent[Any],
    script: Sequence[Step],
    *,
    prompt: str = "Do it.",
    approve: bool | Mapping[str, bool] | None = None,
    context: ChatContext | None = None,
    policy: ApprovalPolicy | None = None,
    max_turns: int = 20,
) -> Flow:
    """Run ``script`` as the model of ``target``'s agent (a connector's, built for the
    context's settings, or any agent) on ``prompt``; return what happened.

    ``approve``: True or False decides every approval, a mapping decides per tool name;
    a call left undecided stops the run there (``flow.paused``). Without ``context`` the
    run gets a fresh kit harness (a real accounts store, demo mode). Every scripted step
    must be used: a script that is too long or too short fails with what the model did.
    """
    if context is None:
        settings = (
            ConnectorSettings(connector_modes={target.name: "demo"})
            if isinstance(target, Connector)
            else ConnectorSettings()
        )
        async with harness(settings) as kit:
            return await run_script(
                target,
                script,
                prompt=prompt,
                approve=approve,
                context=kit.context(),
                policy=policy,
                max_turns=max_turns,
            )
    agent = target.build_agent(context.settings) if isinstance(target, Connector) else target
    apply_policy([agent], policy or ApprovalPolicy())
    flow = Flow()
    model = flow.model = ScriptedModel(_model_steps(script, flow))
    config = RunConfig(model=model, tracing_disabled=True)
    hooks = _Recorder(flow)
    async with _servers_connected(agent):
        try:
            result: RunResult = await Runner.run(
                agent, prompt, context=context, run_config=config, hooks=hooks, max_turns=max_turns
            )
            while result.interruptions:
                state = await _saved_and_restored(agent, result, context)
                if not _decide(state, approve, flow):
                    flow.paused = True
                    return flow
                result = await Runner.run(
                    agent, state, run_config=config, hooks=hooks, max_turns=max_turns
                )
        except AssertionError:
            raise
        except Exception as exc:
            raise AssertionError(
                f"the scripted run failed after {len(model.calls)} model call(s): "
                f"{type(exc).__name__}: {exc}\n  the calls that ran: {_summary(flow)}"
            ) from exc
    if model.remaining_steps:
        raise AssertionError(
            f"{model.remaining_steps} scripted step(s) were not used: the run ended after "
            f"{len(model.calls)} model call(s); the calls that ran: {_summary(flow)}"
        )
    final = result.final_output
    flow.final_text = final if isinstance(final, str) else None
    return flow


async def _saved_and_restored(
    agent: Agent[Any], result: RunResult, context: ChatContext
) -> RunState[Any]:
    """The paused run as the app keeps it: serialized, then restored with the context."""
    saved = result.to_state().to_json(context_serializer=lambda _context: {})
    return await RunState.from_json(agent, saved, context_override=RunContextWrapper(context))


def _decide(state: RunState[Any], approve: bool | Mapping[str, bool] | None, flow: Flow) -> bool:
    """Apply the script's decisions; False when one is missing (the run stays paused)."""
    decided = True
    for item in state.get_interruptions():
        tool = item.name or "?"
        decision = _decision(approve, tool)
        flow.approvals.append(ApprovalAsked(tool, _arguments(item.arguments), decision))
        if decision is None:
            decided = False
        elif decision:
            state.approve(item)
        else:
            state.reject(item, rejection_message=DECLINED)
    return decided


def _summary(flow: Flow) -> str:
    return json.dumps(
        [{"tool": c.tool, "arguments": c.arguments} for c in flow.calls], default=str
    )[:600]
