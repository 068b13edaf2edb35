"""What the offline demo model knows beyond its input: each connector's offline hints
(``connectors.offline_hints``), handed to the model provider when it is built."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from connectors.offline_hints import NO_HINTS, Decline, OfflineHints, PastCall, hints_by_agent
from connectors.registry import Connector

# Offered after an error card, whatever the connector.
ERROR_SUGGESTIONS = ("Try that again",)


class OfflineKnowledge:
    """Agent name → hints, with the look-ups the model needs (whose tool is this?).

    Never changed once built: routes are cached per knowledge (``offline_routing.route_of``).
    """

    def __init__(self, hints: Mapping[str, OfflineHints] | None = None) -> None:
        self._hints = dict(hints or {})
        self._owners = {tool: agent for agent, hints in self._hints.items() for tool in hints.tools}

    @classmethod
    def of(cls, connectors: Iterable[Connector]) -> OfflineKnowledge:
        return cls(hints_by_agent(connectors))

    @property
    def agents(self) -> list[str]:
        return list(self._hints)

    def hints(self, agent: str | None) -> OfflineHints:
        return self._hints.get(agent or "", NO_HINTS)

    def owner(self, tool: str) -> str | None:
        """The agent whose hints name ``tool``, if any."""
        return self._owners.get(tool)

    def agent_for_tools(self, tools: Iterable[str]) -> str | None:
        for tool in tools:
            if (agent := self.owner(tool)) is not None:
                return agent
        return None

    def is_hidden(self, tool: str) -> bool:
        return self.hints(self.owner(tool)).tool(tool).hidden

    def title_of(self, call: PastCall) -> str:
        """A short title for a result another connector passes on (an email's subject):
        its connector's, else what the tool's name says it gives ("list_issues": Issues)."""
        describe = self.hints(self.owner(call.name)).result_title
        return (describe(call) if describe else None) or _title_from_name(call.name)

    def suggestions_for(self, response_type: str) -> tuple[str, ...]:
        if response_type == "error":
            return ERROR_SUGGESTIONS
        for hints in self._hints.values():
            if response_type in hints.suggestions:
                return hints.suggestions[response_type]
        return ()

    @property
    def starters(self) -> tuple[str, ...]:
        """One example prompt per connector that gives any, in connector order."""
        return tuple(hints.examples[0] for hints in self._hints.values() if hints.examples)

    @property
    def declines(self) -> tuple[tuple[str, Decline], ...]:
        """(agent, decline) for every decline a connector declares, in connector order."""
        return tuple(
            (agent, decline) for agent, hints in self._hints.items() for decline in hints.declines
        )

    def capability(self, agent: str, language: str) -> str:
        """What ``agent`` does, in a few words of ``language`` (English if it has none)."""
        hints = self.hints(agent)
        return hints.capability_in.get(language) or hints.capability or f"use {agent}"

    @property
    def catch_all(self) -> str | None:
        return next((agent for agent, hints in self._hints.items() if hints.catch_all), None)


# Verbs in tool names that say how, not what ("search_recipes" gives recipes).
_HOW = frozenset("get list find search show fetch read lookup query at by from".split())


def _title_from_name(tool: str) -> str:
    words = [word for word in tool.split("_") if word and word not in _HOW]
    return " ".join(words).capitalize() if words else "Results from Switchboard"


NO_KNOWLEDGE = OfflineKnowledge()
