"""What the offline demo model knows about Yelp (``connectors.offline_hints``). Pure."""

from __future__ import annotations

import re
from typing import Any

from connectors.offline_hints import (
    Clause,
    Decline,
    OfflineHints,
    PastCall,
    Step,
    ToolHints,
    Turn,
)
from connectors.offline_reading import (
    asking,
    clip,
    first_id,
    items_of,
    names_of,
    parse_json,
    plural,
)

KEYWORDS = re.compile(
    r"\b(restaurants?|food|eat|eating|dinner|lunch|breakfast|brunch|sushis?|pizzas?|coffee|"
    r"caf[eé]s?|tacos?|mexican|burgers?|ramen|thai|italian|bbq|barbecue|bakery|bakeries|"
    r"near me|nearby|near|yelp|reviews?|"
    # French, Spanish, German
    r"restaurantes?|manger|comer|d[îi]ner|d[ée]jeuner|cena|cenar|almuerzo|abendessen|"
    r"mittagessen|boulangeries?|panader[ií]as?|b[äa]ckerei\w*|kaffee|cafeter[ií]as?|"
    r"pizzer[ií]as?|près de (?:moi|chez moi|ici)|cerca de (?:m[ií]|aqu[ií])|in der n[äa]he)\b",
    re.I,
)
CITY_STATES = {
    "boston": "Boston, MA",
    "cambridge": "Cambridge, MA",
    "san francisco": "San Francisco, CA",
    "sf": "San Francisco, CA",
    "new york": "New York, NY",
    "nyc": "New York, NY",
    "manhattan": "New York, NY",
    "brooklyn": "Brooklyn, NY",
    "chicago": "Chicago, IL",
    "austin": "Austin, TX",
    "seattle": "Seattle, WA",
    "los angeles": "Los Angeles, CA",
    "denver": "Denver, CO",
    "miami": "Miami, FL",
    "portland": "Portland, OR",
    "philadelphia": "Philadelphia, PA",
    "washington dc": "Washington, DC",
}
FOOD_TERMS = (
    "sushi",
    "pizza",
    "coffee",
    "tacos",
    "taco",
    "mexican",
    "burgers",
    "burger",
    "ramen",
    "thai",
    "italian",
    "bbq",
    "barbecue",
    "brunch",
    "bakery",
    "cafe",
    "café",
    "vegan",
    "steak",
    "seafood",
    "indian",
    "chinese",
    "korean",
    "dessert",
    "ice cream",
)
# What people call a kind of food in French, Spanish or German, as Yelp searches it.
_FOOD_ABROAD = (
    (r"sushis", "sushi"),
    (r"italien(?:ne)?s?|italian[oa]s?|italienisch\w*", "italian"),
    (r"mexicain(?:e)?s?|mexican[oa]s?|mexikanisch\w*", "mexican"),
    (r"chinois(?:e)?s?|chin[oa]s?|chinesisch\w*", "chinese"),
    (r"japonais(?:e)?s?|japones(?:a)?s?|japon[ée]s|japanisch\w*", "japanese"),
    (r"indien(?:ne)?s?|indi[oa]s?|indisch\w*", "indian"),
    (r"tha[iï]landais(?:e)?s?|tailand[ée]s(?:a)?|thail[äa]ndisch\w*", "thai"),
    (r"cafeter[ií]as?|kaffee", "coffee"),
    (r"boulangeries?|panader[ií]as?|b[äa]ckerei\w*", "bakery"),
    (r"pizzas|pizzer[ií]as?", "pizza"),
    (r"hamburgu?es(?:a|as)?", "burgers"),
    (r"v[ée]g[ée]tarien(?:ne)?s?|vegetarian[oa]s?|vegetarisch\w*", "vegetarian"),
    (r"v[ée]ganes?|vegan[oa]s?|vegan\w*", "vegan"),
    (r"fruits de mer|mariscos|meeresfr[üu]chte", "seafood"),
)
_NEAR_ME = re.compile(
    r"\b(near (me|here|by)|nearby|around (me|here)|close to me|closest|nearest|in my area|"
    r"près de (?:moi|chez moi|ici)|autour de moi|cerca de (?:m[ií]|aqu[ií])|por aqu[ií]|"
    r"in der n[äa]he|in meiner n[äa]he)\b",
    re.I,
)

# ----------------------------------------------------------------------------- steps


def place_of(clause: str) -> str | None:
    """A place named in the text: known cities as "City, ST", else the capitalised words."""
    lowered = f" {re.sub(r'[^a-z ]+', ' ', clause.lower())} "
    for name, display in CITY_STATES.items():
        if f" {name} " in lowered:
            return display
    match = re.search(
        r"\b(?:in|near|around|at|à|en|près de|cerca de|bei)\s+"
        r"((?:[A-ZÀ-Ý][\w'.-]*)(?:[ ,]+[A-ZÀ-Ý][\w'.-]*)*)",
        clause,
    )
    return match.group(1).strip(" ,") if match else None


def yelp_term(clause: str) -> str:
    lowered = clause.lower()
    for term in FOOD_TERMS:
        if re.search(rf"\b{re.escape(term)}\b", lowered):
            return "coffee" if term in {"cafe", "café"} else term
    for said, term in _FOOD_ABROAD:
        if re.search(rf"\b(?:{said})\b", lowered):
            return term
    match = re.search(
        r"\b(?:find|search for|look for|get me|recommend|show me|where can i get|"
        r"trouve[rz]?|cherche[rz]?|busca[r]?|encuentra|finde[n]?|suche[n]?)"
        r"\s+(?:me\s+)?(?:some\s+|a\s+|an\s+|the\s+|good\s+|best\s+|des\s+|un\s+|une\s+|"
        r"unos\s+|unas\s+|una\s+|ein\s+|eine\s+|einen\s+)*(.+?)"
        r"(?=\s+(?:in|near|around|nearby|open|that|with|à|en|près|cerca|bei)\b|$)",
        lowered,
    )
    term = match.group(1).strip() if match else ""
    return term or "restaurants"


def _price(lowered: str) -> str | None:
    if re.search(
        r"\b(cheap|inexpensive|affordable|budget|pas cher|bon marché|barato|econ[óo]mico|"
        r"g[üu]nstig|billig)\b",
        lowered,
    ):
        return "1,2"
    if re.search(
        r"\b(fancy|upscale|expensive|fine dining|chic|haut de gamme|elegante|lujoso|gehoben|"
        r"edel)\b",
        lowered,
    ):
        return "3,4"
    return None


def _sort_by(lowered: str) -> str:
    if re.search(
        r"\b(best|top|highest)[ -]rated\b|\b(?:best|meilleure?s?|mejor(?:es)?|beste[nrs]?)\b",
        lowered,
    ):
        return "rating"
    if re.search(r"\b(closest|nearest)\b", lowered):
        return "distance"
    if re.search(r"\b(popular|most reviewed)\b", lowered):
        return "review_count"
    return "best_match"


def steps(clause: Clause) -> list[Step]:
    text = clause.text
    lowered = text.lower()
    place = place_of(text)
    near = bool(_NEAR_ME.search(text)) and place is None
    count = re.search(
        r"\b(?:top\s+)?(\d{1,2})\s+(?:places|restaurants|spots|options|results)\b"
        r"|\btop\s+(\d{1,2})\b",
        lowered,
    )
    limit = int(next(g for g in count.groups() if g)) if count else 5
    arguments: dict[str, Any] = {
        "term": yelp_term(text),
        "location": place,
        "latitude": None,
        "longitude": None,
        "price": _price(lowered),
        "open_now": bool(
            re.search(
                r"\b(open now|right now|still open|currently open|open at this hour|"
                r"ouverts? (?:maintenant|en ce moment)|abiertos? ahora|"
                r"(?:jetzt|gerade) ge[öo]ffnet)\b",
                lowered,
            )
        ),
        "sort_by": _sort_by(lowered),
        "limit": max(1, min(limit, 20)),
    }

    def search_arguments(turn: Turn) -> dict[str, Any]:
        found = turn.outputs("resolve_user_location") if near else []
        spot = location_from(found[-1].output or "") if found else None
        return {**arguments, **spot} if spot else dict(arguments)

    chosen = []
    if near:
        chosen.append(Step("resolve_user_location", lambda turn: {"hint": None}))
    chosen.append(Step("search_businesses_at_yelp", search_arguments))
    if re.search(r"\breviews?\b", lowered):

        def review_arguments(turn: Turn) -> dict[str, Any] | None:
            found = turn.outputs("search_businesses_at_yelp")
            business = (
                first_id(found[-1].output or "", r"\bid=([A-Za-z0-9_-]{6,})") if found else None
            )
            return {"business_id": business} if business else None

        chosen.append(
            Step(
                "get_business_reviews_at_yelp",
                review_arguments,
                "I couldn't find a business to read reviews for.",
            )
        )
    return chosen


def location_from(output: str) -> dict[str, Any] | None:
    """Coordinates from a resolve_user_location result (JSON, or text with numbers)."""
    data = parse_json(output)
    if isinstance(data, dict) and "response" in data and isinstance(data["response"], dict):
        data = data["response"]
    if (
        isinstance(data, dict)
        and isinstance(data.get("latitude"), int | float)
        and isinstance(data.get("longitude"), int | float)
    ):
        return {"latitude": float(data["latitude"]), "longitude": float(data["longitude"])}
    numbers = re.findall(r"-?\d{1,3}\.\d+", output)
    if len(numbers) >= 2:
        return {"latitude": float(numbers[0]), "longitude": float(numbers[1])}
    return None


# ----------------------------------------------------------------------------- the answer


# ----------------------------------------------------------------------------- declines


# Booking a table ("book a table for two"), or making a reservation.
BOOK_TABLE = Decline(
    asks={
        "en": asking(
            "book|reserve",
            r"tables?|seats?|restaurant|dinner|lunch|brunch|for (?:two|three|four|\d+)",
            r"(?:make|get)\s+(?:me\s+)?(?:a\s+)?reservations?",
        ),
        "fr": asking(
            r"r[ée]serve[rz]?",
            r"tables?|places?|restaurant|d[îi]ner|d[ée]jeuner|pour (?:deux|trois|quatre|\d+)",
            r"fai(?:re|s|tes)\s+une\s+r[ée]servation",
        ),
        "es": asking(
            r"reserva[r]?|resérvame",
            r"mesas?|sitio|restaurante|cena|comida|para (?:dos|tres|cuatro|\d+)",
            r"hacer\s+una\s+reserva(?:ci[oó]n)?",
        ),
        "de": asking(
            r"reservier\w*|buche|buchen",
            r"tisch|pl[äa]tze|restaurant|abendessen|f[üu]r (?:zwei|drei|vier|\d+)",
            r"einen tisch\b[^.?!]{0,30}?\breservier\w*",
        ),
    },
    says={
        "en": "I can't book a table or make reservations: Yelp here only finds places and "
        "shows their reviews.",
        "fr": "Je ne peux pas réserver de table : ici, Yelp sert seulement à trouver des "
        "adresses et à lire leurs avis.",
        "es": "No puedo reservar mesa: aquí Yelp solo sirve para encontrar sitios y leer sus "
        "reseñas.",
        "de": "Ich kann keinen Tisch reservieren: Yelp findet hier nur Lokale und zeigt ihre "
        "Bewertungen.",
    },
    about="reservation reserve",
)


def where_from_header(output: str) -> str | None:
    match = re.search(r" in (.+?) \(\d+ business", output)
    return match.group(1) if match else None


def summary(call: PastCall) -> str | None:
    output = call.output or ""
    args = call.arguments
    if call.not_run:
        return None
    if call.name == "resolve_user_location":
        return ""
    items = items_of(output)
    if call.name == "search_businesses_at_yelp":
        where = args.get("location") or where_from_header(output) or "your area"
        term = str(args.get("term", "places"))
        if not items:
            return f"I couldn't find any {term} places in {where} that match."
        what = (
            f"{len(items)} {term}"
            if term.endswith("s")
            else f"{len(items)} {term} spot{'' if len(items) == 1 else 's'}"
        )
        near = "near you in " if args.get("latitude") is not None else "in "
        return f"I found {what} {near}{where}. Top picks: {names_of(items)}."
    if call.name == "get_business_reviews_at_yelp":
        subject = re.search(r"reviews of (.+?) \(", output)
        about = f" of **{subject.group(1)}**" if subject else ""
        first = re.search(r"rating (\d).*?: (.+)", items[0]) if items else None
        gist = (
            f" The latest ({first.group(1)}★) says: “{clip(first.group(2), 90)}”" if first else ""
        )
        return f"Here are {plural(len(items), 'recent review')}{about}.{gist}"
    return None


def result_title(call: PastCall) -> str | None:
    if call.name != "search_businesses_at_yelp":
        return None
    where = call.arguments.get("location") or where_from_header(call.output or "") or "your area"
    return f"{str(call.arguments.get('term', 'places')).capitalize()} in {where}"


HINTS = OfflineHints(
    examples=(
        "Find sushi in Boston",
        "Find coffee near me",
        "Show reviews for the top result",
        "Cheap tacos open now",
    ),
    tools={
        "resolve_user_location": ToolHints(hidden=True),
        "search_businesses_at_yelp": ToolHints(examples=("Find sushi in Boston",)),
        "get_business_reviews_at_yelp": ToolHints(examples=("Show reviews for the top result",)),
    },
    keywords=KEYWORDS,
    capability="find restaurants on Yelp",
    capability_in={
        "fr": "trouver des restaurants sur Yelp",
        "es": "buscar restaurantes en Yelp",
        "de": "Restaurants auf Yelp finden",
    },
    declines=(BOOK_TABLE,),
    planner=steps,
    summary=summary,
    follow_up="Want reviews for any of these, or a different neighborhood?",
    result_title=result_title,
    suggestions={
        "yelp_search_results": (
            "Show reviews for the top result",
            "Email this list to bob@example.com",
            "Find cheap tacos instead",
        ),
        "yelp_reviews": ("Find something similar nearby", "Find coffee near me"),
    },
)
