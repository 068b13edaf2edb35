"""Two small plug-in connectors for the offline model's tests, written as a connector author
would: ``tracker`` (an issue tracker: a hidden project lookup, a read, a write that asks
for approval) declares offline hints; ``recipes`` declares none, so the offline model
knows only what its agent and tools say about themselves. Demo data lives in the user's
demo state, like the built-ins'.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from agents import Agent, RunContextWrapper

from connectors.context import ChatContext
from connectors.offline_hints import Clause, OfflineHints, ToolHints
from connectors.registry import Connector
from connectors.responses import ToolResponse
from connectors.settings import ConnectorSettings
from connectors.tooling import ToolError, connector_tool

# ----------------------------------------------------------------------------- tracker

TRACKER = "Tracker"
PROJECTS = {"apollo": "PRJ-7", "gemini": "PRJ-9"}
SEEDED = {
    "PRJ-7": [
        {"id": "ISS-1", "title": "Login fails on Safari", "state": "open"},
        {"id": "ISS-2", "title": "Slow dashboard", "state": "open"},
        {"id": "ISS-3", "title": "Typo on the pricing page", "state": "closed"},
    ],
    "PRJ-9": [{"id": "ISS-8", "title": "Export drops the last row", "state": "open"}],
}


def _issues(ctx: RunContextWrapper[ChatContext], project_id: str) -> list[dict[str, str]]:
    if project_id not in SEEDED:
        raise ToolError(f"no project has the id {project_id!r}; find the project first")
    state = ctx.context.demo.namespace("tracker")
    issues: list[dict[str, str]] = state.setdefault(
        project_id, [dict(issue) for issue in SEEDED[project_id]]
    )
    return issues


@connector_tool(agent_name=TRACKER, side_effect=False)
async def find_project(ctx: RunContextWrapper[ChatContext], name: str) -> ToolResponse:
    """Find a project by its name; gives the project's id, which the other tools need.

    Args:
        name: The project's name, e.g. "Apollo".
    """
    project_id = PROJECTS.get(name.strip().lower())
    if project_id is None:
        raise ToolError(f"no project is called {name!r}; the projects are Apollo and Gemini")
    found = {"id": project_id, "name": name.strip().title()}
    return ToolResponse("tracker_project", TRACKER, "Project", found, display_response=False)


@connector_tool(agent_name=TRACKER, side_effect=False)
async def list_issues(
    ctx: RunContextWrapper[ChatContext],
    project_id: str,
    state: Literal["open", "closed", "all"] = "open",
) -> ToolResponse:
    """List the issues of a project.

    Args:
        project_id: The project's id (from find_project).
        state: Which issues: open, closed or all.
    """
    shown = [i for i in _issues(ctx, project_id) if state == "all" or i["state"] == state]
    return ToolResponse("tracker_issues", TRACKER, "Issues", shown)


@connector_tool(agent_name=TRACKER, side_effect=True)
async def create_issue(
    ctx: RunContextWrapper[ChatContext], project_id: str, title: str, body: str | None = None
) -> ToolResponse:
    """Create an issue in a project.

    Args:
        project_id: The project's id (from find_project).
        title: A one-line title.
        body: Details, if the user gave any.
    """
    issues = _issues(ctx, project_id)
    issue = {
        "id": f"ISS-{10 + len(issues)}",
        "project_id": project_id,
        "title": title.strip(),
        "state": "open",
    }
    issues.append(issue)
    return ToolResponse("tracker_issue", TRACKER, "New issue", issue)


def _project_named(clause: Clause) -> dict[str, Any]:
    # Projects are named by a capitalised word: "in Apollo", "the Gemini project".
    named = re.search(r"\b(?:in|for|to)\s+(?:the\s+)?([A-Z]\w+)", clause.text) or re.search(
        r"\b([A-Z]\w+)\s+project\b", clause.text
    )
    return {"name": named.group(1)} if named else {}


TRACKER_HINTS = OfflineHints(
    examples=(
        "List the open issues in Apollo",
        "File a bug titled 'Login fails'",
        "What's broken in the Apollo project?",
    ),
    tools={
        "find_project": ToolHints(hidden=True, extract=_project_named),
        "list_issues": ToolHints(
            examples=("Show the open issues", "What's broken?"),
            lookups={"project_id": "find_project"},
        ),
        "create_issue": ToolHints(
            examples=("File a bug", "Report a problem", "Open a ticket"),
            lookups={"project_id": "find_project"},
            follow_up="Want me to file another one?",
        ),
    },
    capability="track issues",
    suggestions={"tracker_issues": ("File a bug in Apollo", "Show the closed issues")},
)


def build_tracker(settings: ConnectorSettings) -> Agent[ChatContext]:
    return Agent[ChatContext](
        name=TRACKER,
        handoff_description="Lists and files issues (bugs, tickets) in the team's projects.",
        instructions="Find the project first, then list or create its issues.",
        tools=[find_project, list_issues, create_issue],
    )


tracker = Connector(
    name="tracker",
    agent_name=TRACKER,
    display_name="Tracker",
    build_agent=build_tracker,
    tool_descriptions={
        "find_project": "Finding the project",
        "list_issues": "Listing issues",
        "create_issue": "Filing an issue",
    },
    response_types=("tracker_project", "tracker_issues", "tracker_issue", "error"),
    offline=TRACKER_HINTS,
)

# ----------------------------------------------------------------------------- recipes

RECIPES = "Recipes"
COOKBOOK = [
    {"id": "R-1", "name": "Mushroom risotto", "minutes": 45, "ingredients": "rice mushrooms"},
    {"id": "R-2", "name": "Mushroom toast", "minutes": 15, "ingredients": "bread mushrooms"},
    {"id": "R-3", "name": "Lentil soup", "minutes": 40, "ingredients": "lentils carrots"},
]


@connector_tool(agent_name=RECIPES, side_effect=False)
async def search_recipes(
    ctx: RunContextWrapper[ChatContext], query: str, max_minutes: int | None = None
) -> ToolResponse:
    """Search recipes by words in their names and ingredients.

    Args:
        query: Words to look for, e.g. "mushrooms".
        max_minutes: Only recipes ready within this many minutes.
    """
    words = {word.rstrip("s") for word in re.findall(r"\w+", query.lower()) if len(word) > 3}
    found = [
        recipe
        for recipe in COOKBOOK
        if words
        & {w.rstrip("s") for w in f"{recipe['name']} {recipe['ingredients']}".lower().split()}
        and (max_minutes is None or int(recipe["minutes"]) <= max_minutes)
    ]
    return ToolResponse("recipe_list", RECIPES, "Recipes", found)


@connector_tool(agent_name=RECIPES, side_effect=False)
async def get_recipe(ctx: RunContextWrapper[ChatContext], recipe_id: str) -> ToolResponse:
    """The full recipe: ingredients and steps.

    Args:
        recipe_id: The recipe's id, from search_recipes.
    """
    recipe = next((r for r in COOKBOOK if r["id"] == recipe_id), None)
    if recipe is None:
        raise ToolError(f"no recipe has the id {recipe_id!r}; search first")
    return ToolResponse("recipe", RECIPES, str(recipe["name"]), recipe)


def build_recipes(settings: ConnectorSettings) -> Agent[ChatContext]:
    return Agent[ChatContext](
        name=RECIPES,
        handoff_description="Finds cooking recipes by ingredient and cooking time.",
        instructions="Search recipes, then open the one the user wants.",
        tools=[search_recipes, get_recipe],
    )


recipes = Connector(
    name="recipes",
    agent_name=RECIPES,
    display_name="Recipes",
    build_agent=build_recipes,
    tool_descriptions={"search_recipes": "Searching recipes", "get_recipe": "Opening a recipe"},
    response_types=("recipe_list", "recipe", "error"),
)
