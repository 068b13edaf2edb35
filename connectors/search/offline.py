"""What the offline demo model knows about web search (``connectors.offline_hints``). Pure."""

from __future__ import annotations

import re

from connectors.offline_hints import Clause, Decline, OfflineHints, PastCall, Step, ToolHints

# How-to questions ("how do I make cold brew coffee?") are for the web even when they name
# food; "recipes" is left out, so a recipes connector keeps its own word.
KEYWORDS = re.compile(
    r"\b(search the web|web|google|internet|online|look up|wikipedia|news|how to|"
    r"how (?:do|can|should) (?:i|you|we) (?:make|cook|bake|brew|build|fix|install|learn|grow)|"
    r"what time is it|history of|meaning of|definition of)\b",
    re.I,
)
_PREFIX = re.compile(
    r"^(?:please\s+)?(?:(?:can you|could you)\s+)?(?:search(?: the web| online| google)?"
    r"(?: for)?|google|look up|find(?: out)?(?: about)?|tell me about|what(?:'s| is| are)|"
    r"who(?:'s| is| are)|"
    # French, Spanish, German: "cherche sur le web", "busca en la web", "suche im Web nach"
    r"(?:re)?cherche(?:r|z)?(?: sur (?:le web|internet|google))?(?: pour)?|"
    r"busca(?:r)?(?: en (?:la web|internet|google))?|"
    r"such(?:e|en)?(?: im (?:web|internet)| bei google| online)?(?: nach)?)\s+",
    re.I,
)


def search_query(clause: str) -> str:
    # A pasted paragraph's line breaks are not part of what is searched for.
    text = " ".join(clause.split())
    query = _PREFIX.sub("", text).strip(" ?.!¿¡")
    return query or text.strip(" ?.!¿¡")


def steps(clause: Clause) -> list[Step]:
    query = search_query(clause.text)
    return [Step("search_google", lambda turn: {"query": query, "num_results": 5})]


def summary(call: PastCall) -> str | None:
    if call.name != "search_google" or call.not_run:
        return None
    query = str(call.arguments.get("query", ""))
    sources = re.findall(r"^\[(\d+)\] (.+?)(?: — \S+)?\n\s+(.+)$", call.output or "", re.M)
    if not sources:
        return f"I searched the web for “{query}” but found nothing useful."
    number, _title, snippet = sources[0]
    first = re.split(r"(?<=[.!?])\s", snippet.strip())[0].rstrip(".")
    more = [f"{title} [{n}]" for n, title, _ in sources[1:3]]
    text = f"Here's what I found on {query}: {first} [{number}]."
    if more:
        text += f" For more, see {' and '.join(more)}."
    return text


# The web search can't stand in for a weather service: its results are pages, not today's
# forecast (a weather connector, when there is one, is routed to instead).
LIVE_WEATHER = Decline(
    asks={
        "en": re.compile(
            r"\b(?:weather|will it (?:rain|snow)|is it (?:raining|snowing)|how (?:hot|cold) is it)\b",
            re.I,
        ),
        "fr": re.compile(
            r"\b(?:m[ée]t[ée]o|quel temps|va-t-il pleuvoir|il pleut|quelle temp[ée]rature)\b",
            re.I,
        ),
        "es": re.compile(
            r"\b(?:qu[ée] tiempo|el tiempo (?:en|de|para)|clima en|va a llover|est[aá] lloviendo|"
            r"qu[ée] temperatura)\b",
            re.I,
        ),
        "de": re.compile(r"\b(?:wetter\w*|regnet es|wie (?:warm|kalt) ist es)\b", re.I),
    },
    says={
        "en": "I can't check live weather: no weather service is connected, and a web search "
        "won't give me today's forecast.",
        "fr": "Je ne peux pas consulter la météo en direct : aucun service météo n'est "
        "connecté, et une recherche web ne me donne pas les prévisions du jour.",
        "es": "No puedo consultar el tiempo en directo: no hay ningún servicio meteorológico "
        "conectado, y una búsqueda web no me da el pronóstico de hoy.",
        "de": "Ich kann das aktuelle Wetter nicht abrufen: Es ist kein Wetterdienst verbunden, "
        "und eine Websuche liefert mir keine aktuelle Vorhersage.",
    },
    about="weather forecast",
)

HINTS = OfflineHints(
    examples=(
        "Search the web for python asyncio",
        "Who wrote Moby Dick?",
        "Look up the latest news on the Mars rover",
    ),
    tools={"search_google": ToolHints(examples=("Search the web for python asyncio",))},
    keywords=KEYWORDS,
    catch_all=True,
    capability="search the web",
    capability_in={
        "fr": "faire des recherches sur le web",
        "es": "buscar en la web",
        "de": "im Web suchen",
    },
    declines=(LIVE_WEATHER,),
    planner=steps,
    summary=summary,
    follow_up="Want me to dig deeper into any of these sources?",
    result_title=lambda call: f"Search results for {call.arguments.get('query', 'your question')}",
    suggestions={
        "google_search_results": (
            "Tell me more about the first result",
            "Email these links to bob@example.com",
        ),
    },
)
