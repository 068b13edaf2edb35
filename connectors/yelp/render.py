"""What the model reads for the Yelp connector's results (connectors.rendering). Pure.

Listings and reviews are written by businesses and reviewers: fenced as data. The user's
resolved location is ours.
"""

from __future__ import annotations

from typing import Any

from connectors.rendering import Rendering, items, numbered, register_type
from connectors.text import one_line, plural


def render_businesses(data: dict[str, Any]) -> Rendering:
    empty = f"{one_line(data.get('friendly_name')) or 'Search'}: no businesses found."
    return numbered(data, items(data), "business", empty, _business_line)


def _business_line(biz: dict[str, Any]) -> str:
    facts: list[str] = []
    if biz.get("rating") is not None:
        rating = f"rating {one_line(biz.get('rating'))}"
        count = biz.get("review_count")
        if isinstance(count, int) and not isinstance(count, bool):
            rating += f" ({plural(count, 'review')})"
        facts.append(rating)
    if one_line(biz.get("price")):
        facts.append(one_line(biz.get("price")))
    categories = biz.get("categories")
    if isinstance(categories, list) and categories:
        facts.append(
            ", ".join(one_line(c.get("title") if isinstance(c, dict) else c) for c in categories)
        )
    if biz.get("is_closed") is True:
        facts.append("closed")
    line = one_line(biz.get("name"), 100) or "(unnamed)"
    if facts:
        line += " — " + ", ".join(facts)
    location = biz.get("location")
    address = ""
    if isinstance(location, dict):
        address = one_line(location.get("display_address")) or one_line(
            [location.get(key) for key in ("address1", "city", "state", "zip_code")]
        )
    elif location:
        address = one_line(location)
    address = address or one_line(biz.get("address"))
    if address:
        line += f" — {address}"
    phone = one_line(biz.get("display_phone") or biz.get("phone"))
    if phone:
        line += f" — {phone}"
    if biz.get("id") not in (None, ""):
        line += f" id={one_line(biz.get('id'))}"
    return line


def render_reviews(data: dict[str, Any]) -> Rendering:
    return numbered(data, items(data), "review", "No reviews found.", _review_line)


def _review_line(review: dict[str, Any]) -> str:
    user = review.get("user")
    author = one_line(user.get("name") if isinstance(user, dict) else user) or "anonymous"
    line = f"rating {one_line(review.get('rating')) or '?'} by {author}"
    created = one_line(review.get("time_created"))
    if created:
        line += f" ({created[:10]})"
    return line + f": {one_line(review.get('text'), 600) or '(no text)'}"


register_type("yelp_search_results", render=render_businesses, source="businesses")
register_type("yelp_reviews", render=render_reviews, source="reviews")
register_type("user_location", source=None)
