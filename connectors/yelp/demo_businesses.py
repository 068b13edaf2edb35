"""Demo businesses (Yelp Fusion shape) in five cities, and their reviews."""

from __future__ import annotations

import math
import random
import re
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from functools import lru_cache
from html import escape
from typing import Any
from urllib.parse import quote

from connectors.demo_ids import BASE62, stable_id


@dataclass(frozen=True)
class City:
    name: str
    state: str
    latitude: float
    longitude: float
    area_code: str
    zip_prefix: str
    streets: tuple[str, ...]
    aliases: tuple[str, ...] = ()

    @property
    def display(self) -> str:
        return f"{self.name}, {self.state}"


CITIES: tuple[City, ...] = (
    City(
        "Boston",
        "MA",
        42.3601,
        -71.0589,
        "617",
        "021",
        (
            "Newbury St",
            "Boylston St",
            "Hanover St",
            "Tremont St",
            "Commercial St",
            "Massachusetts Ave",
            "Beacon St",
            "Washington St",
        ),
        ("back bay", "bos"),
    ),
    City(
        "San Francisco",
        "CA",
        37.7749,
        -122.4194,
        "415",
        "941",
        (
            "Valencia St",
            "Mission St",
            "Fillmore St",
            "Hayes St",
            "Columbus Ave",
            "Divisadero St",
            "Irving St",
            "Clement St",
        ),
        ("sf", "san fran"),
    ),
    City(
        "New York",
        "NY",
        40.7128,
        -74.0060,
        "212",
        "100",
        (
            "Bleecker St",
            "Mott St",
            "Broadway",
            "St Marks Pl",
            "Mulberry St",
            "Lexington Ave",
            "W 14th St",
            "Greenwich Ave",
        ),
        ("nyc", "new york city", "manhattan"),
    ),
    City(
        "Chicago",
        "IL",
        41.8781,
        -87.6298,
        "312",
        "606",
        (
            "N Clark St",
            "W Randolph St",
            "N Milwaukee Ave",
            "W Division St",
            "N Halsted St",
            "S Wabash Ave",
            "W Armitage Ave",
        ),
        ("chi",),
    ),
    City(
        "Austin",
        "TX",
        30.2672,
        -97.7431,
        "512",
        "787",
        (
            "S Congress Ave",
            "E 6th St",
            "S Lamar Blvd",
            "E Cesar Chavez St",
            "Rainey St",
            "N Lamar Blvd",
            "Manor Rd",
        ),
        ("atx",),
    ),
)
HOME_CITY = CITIES[0]  # the demo user's saved location ("near me")


@dataclass(frozen=True)
class Cuisine:
    alias: str
    title: str
    names: tuple[str, ...]
    prices: tuple[str, ...]
    extra: tuple[str, str] | None  # a second Yelp category (alias, title)
    terms: tuple[str, ...]  # words people search with
    praise: tuple[str, ...]  # review fragments


CUISINES: tuple[Cuisine, ...] = (
    Cuisine(
        "sushi",
        "Sushi Bars",
        (
            "Umi Sushi Bar",
            "Sakura Omakase",
            "Hana Hand Roll",
            "Kaze Sushi",
            "Tsuki Izakaya",
            "Nori & Rice",
            "Koi Sushi House",
            "Sushi Daruma",
        ),
        ("$$", "$$$", "$$$$"),
        ("japanese", "Japanese"),
        ("sushi", "omakase", "japanese", "nigiri", "sashimi"),
        (
            "the toro melted in my mouth",
            "the omakase was worth every penny",
            "fish so fresh it tasted like the ocean",
            "perfectly seasoned rice",
        ),
    ),
    Cuisine(
        "pizza",
        "Pizza",
        (
            "Brick Oven Pizzeria",
            "Slice Society",
            "Nonna's Pizza",
            "Crust & Co.",
            "Forno Rosso",
            "Pizza Piazza",
            "Good Pie",
        ),
        ("$", "$$"),
        None,
        ("pizza", "pizzeria", "slice"),
        (
            "the crust had the perfect char",
            "a margherita that rivals Naples",
            "generous toppings and a great sauce",
            "the best slice in the neighborhood",
        ),
    ),
    Cuisine(
        "coffee",
        "Coffee & Tea",
        (
            "Blue Door Coffee",
            "Little Owl Café",
            "Third Wave Roasters",
            "Morning Ritual",
            "Bean Counter",
            "Common Grounds",
            "Espresso Lab",
        ),
        ("$", "$$"),
        ("cafes", "Cafes"),
        ("coffee", "cafe", "café", "espresso", "latte"),
        (
            "a silky flat white",
            "cozy spot to work for an hour",
            "their pour-over is excellent",
            "friendly baristas and great pastries",
        ),
    ),
    Cuisine(
        "mexican",
        "Mexican",
        (
            "Taqueria El Sol",
            "Casa Verde",
            "La Esquina",
            "Tacos Tres Hermanos",
            "Cocina Azul",
            "El Camino Tacos",
        ),
        ("$", "$$"),
        ("tacos", "Tacos"),
        ("mexican", "tacos", "taco", "burrito", "taqueria"),
        (
            "the al pastor tacos are a must",
            "homemade tortillas make all the difference",
            "salsa bar with real heat",
            "margaritas are strong and fresh",
        ),
    ),
    Cuisine(
        "burgers",
        "Burgers",
        ("Patty Shack", "Stack Burger Bar", "The Burger Joint", "Smash & Co.", "Double Down Diner"),
        ("$", "$$"),
        ("newamerican", "American (New)"),
        ("burger", "burgers", "fries"),
        (
            "a perfectly smashed patty",
            "crispy fries and thick shakes",
            "juicy burger with a great bun",
            "quick service even when busy",
        ),
    ),
    Cuisine(
        "italian",
        "Italian",
        (
            "Trattoria Luna",
            "Osteria Nove",
            "Via Roma",
            "Pasta Fresca",
            "Il Giardino",
            "Caffè Milano",
        ),
        ("$$", "$$$"),
        None,
        ("italian", "pasta", "trattoria", "brunch"),
        (
            "handmade pasta that tastes like Italy",
            "the cacio e pepe is outstanding",
            "warm service and a lovely wine list",
            "great for a family celebration",
        ),
    ),
    Cuisine(
        "thai",
        "Thai",
        ("Thai Basil", "Bangkok Street Kitchen", "Siam Orchid", "Lemongrass", "Khao Hom"),
        ("$", "$$"),
        None,
        ("thai", "pad thai", "curry"),
        (
            "the green curry has real depth",
            "pad see ew with perfect wok char",
            "spice levels are honest",
            "fast, friendly and affordable",
        ),
    ),
    Cuisine(
        "bbq",
        "Barbeque",
        ("Smoke & Oak", "Brisket House", "Pit Stop BBQ", "Hickory Hollow", "Burnt Ends Co."),
        ("$$",),
        None,
        ("bbq", "barbecue", "barbeque", "brisket", "ribs"),
        (
            "brisket with a beautiful bark",
            "ribs that fall off the bone",
            "the burnt ends sell out fast for a reason",
            "great for a big group dinner",
        ),
    ),
    Cuisine(
        "ramen",
        "Ramen",
        ("Menya Kaze", "Ramen Tatsu", "Tonkotsu Lab", "Noodle Bar Ichi", "Hakata Nights"),
        ("$$",),
        ("japanese", "Japanese"),
        ("ramen", "noodles", "noodle"),
        (
            "rich tonkotsu broth",
            "noodles with a perfect chew",
            "the spicy miso is addictive",
            "worth the line on a cold night",
        ),
    ),
)
# Generic words that match every food business.
GENERIC_TERMS = frozenset(
    {
        "restaurant",
        "restaurants",
        "food",
        "eat",
        "dinner",
        "lunch",
        "places",
        "place",
        "spots",
        "spot",
    }
)

_REVIEWERS = (
    "Jamie L.",
    "Priya S.",
    "Marcus T.",
    "Sofia R.",
    "Ken W.",
    "Aisha B.",
    "Tom H.",
    "Mei C.",
    "Diego F.",
    "Olivia P.",
    "Noah K.",
    "Grace Y.",
)
_OPENERS = (
    "Came here on a Friday night and",
    "Third visit and",
    "Brought out-of-town friends and",
    "Stopped by after work and",
    "Finally tried this place and",
)
_CLOSERS = (
    "Will be back soon.",
    "Service was quick and friendly.",
    "It gets busy, so book ahead.",
    "A little pricey but worth it.",
    "Easily one of my favorites in the city.",
)


def slugify(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower().replace("&", "and")).strip("-")


def _placeholder_image(name: str, hue: int) -> str:
    # An inline SVG so the demo UI shows a picture without fetching anything.
    words = [word for word in name.split() if word[0].isalnum()]  # "Nori & Rice" -> NR
    initials = escape("".join(word[0] for word in words[:2]).upper())
    svg = (
        f"<svg xmlns='http://www.w3.org/2000/svg' width='400' height='300'>"
        f"<rect width='400' height='300' fill='hsl({hue},45%,45%)'/>"
        f"<text x='200' y='170' font-size='96' text-anchor='middle' fill='white' "
        f"font-family='sans-serif'>{initials}</text></svg>"
    )
    return "data:image/svg+xml," + quote(svg)


def _business(
    city: City, cuisine: Cuisine, name: str, rng: random.Random, number: int
) -> dict[str, Any]:
    alias = slugify(f"{name} {city.name}")
    zip_code = f"{city.zip_prefix}{rng.randint(1, 18):02d}"
    address1 = f"{rng.randint(10, 980)} {rng.choice(city.streets)}"
    phone_tail = f"01{number % 100:02d}"  # 555-0100…0199: the fictional range
    categories = [{"alias": cuisine.alias, "title": cuisine.title}]
    if cuisine.extra:
        categories.append({"alias": cuisine.extra[0], "title": cuisine.extra[1]})
    return {
        "id": stable_id("yelp", alias, length=22, alphabet=BASE62),
        "alias": alias,
        "name": name,
        "image_url": _placeholder_image(name, rng.randint(0, 359)),
        "is_closed": False,
        "url": f"https://www.yelp.com/biz/{alias}",
        "review_count": rng.randint(42, 2400),
        "categories": categories,
        "rating": round(rng.uniform(3.5, 4.9), 1),
        "coordinates": {
            "latitude": round(city.latitude + rng.uniform(-0.025, 0.025), 6),
            "longitude": round(city.longitude + rng.uniform(-0.03, 0.03), 6),
        },
        "transactions": sorted(
            rng.sample(["pickup", "delivery", "restaurant_reservation"], rng.randint(0, 2))
        ),
        "price": rng.choice(cuisine.prices),
        "location": {
            "address1": address1,
            "address2": "",
            "address3": "",
            "city": city.name,
            "zip_code": zip_code,
            "country": "US",
            "state": city.state,
            "display_address": [address1, f"{city.name}, {city.state} {zip_code}"],
        },
        "phone": f"+1{city.area_code}555{phone_tail}",
        "display_phone": f"({city.area_code}) 555-{phone_tail}",
        "business_hours": [
            {
                "hour_type": "REGULAR",
                "is_open_now": rng.random() < 0.8,
                "open": [
                    {"day": day, "start": "1100", "end": "2200", "is_overnight": False}
                    for day in range(7)
                ],
            }
        ],
        # Internal: which cuisine the demo search matches on; removed before returning.
        "_cuisine": cuisine.alias,
    }


@lru_cache(maxsize=1)
def all_businesses() -> tuple[dict[str, Any], ...]:
    """Every demo business (pure and constant, so computed once)."""
    out = []
    for city in CITIES:
        number = 0
        for cuisine in CUISINES:
            rng = random.Random(f"yelp|{city.name}|{cuisine.alias}")
            for name in rng.sample(cuisine.names, rng.randint(4, min(6, len(cuisine.names)))):
                out.append(_business(city, cuisine, name, rng, number))
                number += 1
    return tuple(out)


def find_city(text: str | None) -> City | None:
    """The demo city named in ``text`` ("boston", "Boston, MA", "NYC"), if any."""
    if not text:
        return None
    lowered = f" {re.sub(r'[^a-z ]+', ' ', text.lower())} "
    for city in CITIES:
        for name in (city.name.lower(), *city.aliases):
            if f" {name} " in lowered:
                return city
    return None


def nearest_city(latitude: float, longitude: float, max_km: float = 60.0) -> City | None:
    best = min(
        CITIES, key=lambda city: distance_m(latitude, longitude, city.latitude, city.longitude)
    )
    if distance_m(latitude, longitude, best.latitude, best.longitude) > max_km * 1000:
        return None
    return best


def distance_m(lat1: float, lon1: float, lat2: float, lon2: float) -> float:
    """Great-circle distance in metres (haversine)."""
    p1, p2 = math.radians(lat1), math.radians(lat2)
    dp, dl = p2 - p1, math.radians(lon2 - lon1)
    a = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return 2 * 6_371_000 * math.asin(math.sqrt(a))


def cuisine_for(term: str) -> Cuisine | None:
    """The cuisine a search term asks for ("sushi", "tacos", "pad thai"), if any."""
    lowered = term.lower()
    words = set(re.findall(r"[a-zé]+", lowered))
    for cuisine in CUISINES:
        if any((t in lowered) if " " in t else (t in words) for t in cuisine.terms):
            return cuisine
    return None


def reviews(business: dict[str, Any], today: date) -> list[dict[str, Any]]:
    """Three deterministic reviews (Yelp ``/businesses/{id}/reviews`` shape), newest first."""
    rng = random.Random(f"reviews|{business['id']}")
    cuisine = next(c for c in CUISINES if c.alias == business["_cuisine"])
    anchor = datetime.combine(today, time(0, 0))
    out = []
    # Sampled, not chosen: three reviews of one place never share a sentence.
    parts = zip(
        rng.sample(_REVIEWERS, 3),
        rng.sample(_OPENERS, 3),
        rng.sample(cuisine.praise, 3),
        rng.sample(_CLOSERS, 3),
        strict=True,
    )
    for index, (user, opener, praise, closer) in enumerate(parts):
        review_id = stable_id("review", business["id"], index, length=22, alphabet=BASE62)
        rating = max(1, min(5, round(business["rating"] + rng.uniform(-1.2, 0.8))))
        text = f"{opener} {praise}. {closer}"
        created = anchor - timedelta(
            days=rng.randint(2, 20) + index * 15, minutes=rng.randint(0, 1439)
        )
        out.append(
            {
                "id": review_id,
                "url": f"https://www.yelp.com/biz/{business['alias']}?hrid={review_id}",
                "text": text,
                "rating": rating,
                "time_created": created.strftime("%Y-%m-%d %H:%M:%S"),
                "user": {
                    "id": stable_id("user", user, length=22, alphabet=BASE62),
                    "profile_url": "https://www.yelp.com/user_details?userid="
                    + stable_id("user", user, length=22, alphabet=BASE62),
                    "image_url": None,
                    "name": user,
                },
            }
        )
    return out
