"""How the offline demo model reads tool results (the plain text of
``connectors.adapters.to_plain_text``, or JSON) and writes its short answer.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from app.llm.offline_transcript import TOOL_ROLE, Offer, PastCall, Transcript

# ----------------------------------------------------------------------------- reading outputs

# The fence lines third-party text arrives in (connectors.untrusted): not part of the data.
_FENCE_LINE = re.compile(r'^(?:<external source="[^"]*">|</external>)$', re.M)


def parse_json(text: str) -> Any:
    stripped = _FENCE_LINE.sub("", text).strip()
    if not stripped.startswith(("{", "[")):
        return None
    try:
        return json.loads(stripped.split("\n[truncated")[0])
    except json.JSONDecodeError:
        return None


_ITEM = re.compile(r"^\s*(?:\d+[.)]|[-*•]|\[\d+\])\s+(.*\S)")


def items_of(output: str) -> list[str]:
    """The listed items of a tool result: numbered/bulleted lines, or JSON list entries."""
    data = parse_json(output)
    if isinstance(data, dict) and isinstance(data.get("response"), list):
        data = data["response"]
    if isinstance(data, list):
        return [_describe_json(entry) for entry in data]
    return [match.group(1) for line in output.splitlines() if (match := _ITEM.match(line))]


def _describe_json(entry: Any) -> str:
    if not isinstance(entry, dict):
        return str(entry)
    name = entry.get("name") or entry.get("title") or entry.get("subject") or ""
    extra = [str(entry[key]) for key in ("rating", "price") if entry.get(key)]
    location = entry.get("location")
    if isinstance(location, dict) and location.get("display_address"):
        extra.append(", ".join(location["display_address"]))
    return " — ".join([str(name), *extra]) if extra else str(name)


def strip_item(line: str) -> str:
    """An item line without ids, markdown emphasis or long snippets."""
    line = re.sub(r"\s*\bid=\S+", "", line)
    line = re.sub(r"[*_`]+", "", line)
    return line.split(": ", 1)[0] if line.startswith("From ") else line.strip()


def name_of(line: str) -> str:
    return re.split(r" — | – | \| ", strip_item(line))[0].strip()


def where_from_header(output: str) -> str | None:
    match = re.search(r" in (.+?) \(\d+ business", output)
    return match.group(1) if match else None


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit].rsplit(" ", 1)[0].rstrip(",.;:") + "…"


def _money(value: float) -> str:
    return f"${value:,.2f}"


def _amounts(text: str, label: str) -> list[float]:
    return [float(v.replace(",", "")) for v in re.findall(rf"{label} (-?[\d,]+\.\d\d)", text)]


# ----------------------------------------------------------------------------- summaries


def _names(items: list[str], limit: int = 3) -> str:
    names = [f"**{name_of(item)}**" for item in items[:limit] if name_of(item)]
    if len(names) <= 1:
        return "".join(names)
    return ", ".join(names[:-1]) + f" and {names[-1]}"


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


# How connectors.adapters.to_plain_text opens an account card, which is what the model reads.
NOT_CONNECTED = "The user has not connected"


def _sentence_for(call: PastCall) -> str:
    output = call.output or ""
    args = call.arguments
    if call.failed:
        message = output.strip().removeprefix("Error:").strip() or "it failed"
        return f"I couldn't complete that step: {message.rstrip('.')}."
    if call.not_run:
        return _not_run_sentence(call)
    if output.startswith(NOT_CONNECTED):
        # A "Connect" card was shown: say so, rather than reporting an empty result.
        return (
            "I need access to that account first: use the **Connect** button on the "
            "card above, then ask me again."
        )
    items = items_of(output)
    name = call.name
    if name in {"google_email_inbox", "google_email_search", "google_email_search_from_email"}:
        if not items:
            return "I didn't find any matching emails."
        unread = sum("(unread)" in item for item in items)
        where = {
            "google_email_inbox": "in your inbox",
            "google_email_search": f"matching “{args.get('query', '')}”",
            "google_email_search_from_email": f"from {args.get('email', '')}",
        }[name]
        first = re.search(r"From (.+?) — Subject (.+?)(?: — |$)", items[0])
        newest = (
            f" The newest is **{first.group(2)}** from {first.group(1)}."
            if first
            else f" The newest is {strip_item(items[0])[:80]}."
        )
        unread_text = f", {unread} of them unread" if unread else ""
        return (
            f"I found {_plural(len(items), 'email')} {where}{unread_text}.{newest}"
            + _injection_warning(items)
        )
    if name == "read_google_email":
        data = parse_json(output)
        if isinstance(data, dict):
            text = " ".join(str(data.get("text", "")).split()[:25])
            return (
                f"Here's **{data.get('subject', 'the email')}** from "
                f"{data.get('from', 'the sender')}: “{text}…”"
            )
        return "Here's the email you asked for."
    if name == "send_google_email":
        return (
            f"I sent **{args.get('subject', 'your email')}** to "
            f"{', '.join(args.get('to') or []) or 'the recipient'}."
        )
    if name == "reply_to_google_email":
        return "I sent your reply in the same thread."
    if name == "get_accounts_at_plaid":
        credit = [item for item in items if "credit" in item.lower()]
        cash = [item for item in items if item not in credit]
        cash_total = sum(sum(_amounts(item, "current")[:1]) for item in cash)
        owed = sum(sum(_amounts(item, "current")[:1]) for item in credit)
        text = (
            f"You have {_plural(len(items), 'account')} connected, holding "
            f"{_money(cash_total)} across checking and savings."
        )
        if credit:
            text += f" Your credit card balance is {_money(owed)}."
        return text
    if name == "get_transactions_at_plaid":
        rows = [re.match(r"(\d{4}-\d{2}-\d{2}) (.+?) (-?[\d,]+\.\d\d)\b", item) for item in items]
        found = [(m.group(2), float(m.group(3).replace(",", ""))) for m in rows if m]
        spent = sum(amount for _, amount in found if amount > 0)
        period = (
            f" from {args['start_date']} to {args.get('end_date') or 'today'}"
            if args.get("start_date")
            else " over the last 30 days"
        )
        if not found:
            return f"I didn't find any transactions{period}."
        biggest = max(found, key=lambda pair: pair[1])
        return (
            f"I found {_plural(len(found), 'transaction')}{period}, with "
            f"{_money(spent)} going out. The largest was {biggest[0].title()} at "
            f"{_money(biggest[1])}."
        )
    if name == "get_spending_summary_at_plaid":
        data = parse_json(output)
        if isinstance(data, dict) and isinstance(data.get("categories"), list):
            top = ", ".join(
                f"{c['category']} ({_money(c['amount'])})" for c in data["categories"][:3]
            )
            return (
                f"You spent {_money(data.get('total_spent', 0))} over the last "
                f"{data.get('days', args.get('days', 30))} days; the biggest categories "
                f"were {top}."
            )
        return f"Here's your spending summary for the last {args.get('days', 30)} days."
    if name == "resolve_user_location":
        return ""
    if name == "search_businesses_at_yelp":
        where = args.get("location") or where_from_header(output) or "your area"
        term = args.get("term", "places")
        if not items:
            return f"I couldn't find any {term} places in {where} that match."
        what = (
            _plural(len(items), term)
            if term.endswith("s")
            else f"{len(items)} {term} spot{'' if len(items) == 1 else 's'}"
        )
        near = "near you in " if args.get("latitude") is not None else "in "
        return f"I found {what} {near}{where}. Top picks: {_names(items)}."
    if name == "get_business_reviews_at_yelp":
        subject = re.search(r"reviews of (.+?) \(", output)
        about = f" of **{subject.group(1)}**" if subject else ""
        first = re.search(r"rating (\d).*?: (.+)", items[0]) if items else None
        gist = (
            f" The latest ({first.group(1)}★) says: “{_clip(first.group(2), 90)}”" if first else ""
        )
        return f"Here are {_plural(len(items), 'recent review')}{about}.{gist}"
    if name == "search_google":
        return _search_summary(output, str(args.get("query", "")))
    return f"I ran {name.replace('_', ' ')}."


# What a prompt injection in third-party text usually says (connectors.instructions asks
# every agent to tell the user about such text rather than follow it).
_INJECTION = re.compile(
    r"ignore (?:all |any )?(?:previous|prior|earlier) instructions|"
    r"(?:note|message) to (?:the |any )?(?:ai|assistant)",
    re.I,
)


def _injection_warning(items: list[str]) -> str:
    flagged = [item for item in items if _INJECTION.search(item)]
    if not flagged:
        return ""
    subject = re.search(r"Subject (.+?)(?: — |$)", flagged[0])
    which = f"**{subject.group(1)}**" if subject else "one of them"
    return (
        f" Careful: {which} contains instructions aimed at an AI assistant; I did not follow them."
    )


def _not_run_sentence(call: PastCall) -> str:
    """A call the person did not approve: say plainly that nothing happened."""
    what = {
        "send_google_email": f"send **{call.arguments.get('subject') or 'the email'}**",
        "reply_to_google_email": "send the reply",
    }.get(call.name, f"run {call.name.replace('_', ' ')}")
    if "in time" in (call.output or ""):
        return f"I didn't {what}: the approval request expired, so nothing was done."
    said = re.search(r'They said: "(.*)"', call.output or "")
    because = f" (you said: “{said.group(1)}”)" if said else ""
    return f"OK, I didn't {what}: you declined it{because}, so nothing was done."


def _search_summary(output: str, query: str) -> str:
    sources = re.findall(r"^\[(\d+)\] (.+?)(?: — \S+)?\n\s+(.+)$", output, re.M)
    if not sources:
        return f"I searched the web for “{query}” but found nothing useful."
    number, _title, snippet = sources[0]
    first = re.split(r"(?<=[.!?])\s", snippet.strip())[0].rstrip(".")
    more = [f"{title} [{n}]" for n, title, _ in sources[1:3]]
    text = f"Here's what I found on {query}: {first} [{number}]."
    if more:
        text += f" For more, see {' and '.join(more)}."
    return text


def _follow_up(call: PastCall | None) -> str:
    role = TOOL_ROLE.get(call.name) if call else None
    if call is None or call.failed:
        return "Want me to try something else?"
    if call.not_run:
        return "Want me to change something and try again?"
    if (call.output or "").startswith(NOT_CONNECTED):
        return ""  # its sentence already says what to do: connect, then ask again
    if call.name in {"send_google_email", "reply_to_google_email"}:
        return "Is there anything else you'd like me to send or look up?"
    if call.name == "get_spending_summary_at_plaid":
        return "Want the transactions behind one of these categories, or a longer range?"
    return {
        "gmail": "Want me to open one of them or draft a reply?",
        "plaid": "Want a breakdown by category or a longer date range?",
        "yelp": "Want reviews for any of these, or a different neighborhood?",
        "search": "Want me to dig deeper into any of these sources?",
    }.get(role or "", "Anything else I can help with?")


def summarize(transcript: Transcript, notes: Sequence[str]) -> str:
    """~30-60 words of markdown about this turn's tool results."""
    calls = [call for call in transcript.calls if not call.is_handoff]
    sentences = [sentence for sentence in map(_sentence_for, calls) if sentence]
    sentences.extend(notes)
    if not sentences:
        return "I couldn't find anything to act on there. Could you tell me a bit more?"
    text = " ".join(sentences)
    if len(text.split()) < 30 and (follow_up := _follow_up(calls[-1] if calls else None)):
        text += " " + follow_up
    return text


def help_text(offer: Offer) -> str:
    things = {
        "GMail": "check and send Gmail",
        "Plaid": "show bank balances and spending",
        "Yelp": "find restaurants on Yelp",
        "Search": "search the web",
    }
    can = [things.get(agent, f"use {agent}") for agent in offer.handoffs]
    listed = ", ".join(can[:-1]) + f" and {can[-1]}" if len(can) > 1 else "".join(can)
    return (
        f"Hi! I'm Switchboard, running on the offline demo model with demo data, so "
        f"nothing real is touched. I can {listed or 'chat'}. Try “find sushi in Boston "
        f"and email the list to bob@example.com”."
    )


def small_talk_reply(prompt: str, offer: Offer) -> str:
    if re.match(r"^\s*(thanks|thank you)\b", prompt, re.I):
        return "You're welcome! Anything else I can look up, send or find for you?"
    return help_text(offer)
