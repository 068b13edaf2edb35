"""What the offline demo model knows about Gmail (``connectors.offline_hints``). Pure."""

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
    EMAIL_RE,
    asking,
    first_id,
    injection_warning,
    items_of,
    parse_json,
    plural,
    strip_item,
)

# French, Spanish and German after the English: "boîte de réception", "no leídos", "antworte".
_UNREAD = r"unread|non[- ]lus?|no le[ií]dos?|ungelesen\w*"
_REPLY = r"repl(?:y|ies)|r[ée]pond\w*|respond\w*|contesta\w*|antworte\w*"
KEYWORDS = re.compile(
    r"\b(e-?mails?|inbox|gmail|mail|reply|replies|send|sent|messages?|compose|courriels?|"
    r"correos?|mensajes?|nachrichten|bo[iî]te de r[ée]ception|bandeja de entrada|"
    rf"posteingang|{_UNREAD}|{_REPLY})\b",
    re.I,
)
_HEX_ID = re.compile(r"\b[0-9a-f]{16}\b")
_LISTINGS = {"google_email_inbox", "google_email_search", "google_email_search_from_email"}
_SENDS = {"send_google_email", "reply_to_google_email"}

# ----------------------------------------------------------------------------- steps


def steps(clause: Clause) -> list[Step]:
    addresses = EMAIL_RE.findall(clause.text) or EMAIL_RE.findall(clause.prompt)
    text = clause.text
    lowered = text.lower()
    if re.search(rf"\b(?:{_REPLY})\b", lowered):
        return _reply_steps(text, addresses)
    sending = re.search(
        r"\b(send|e-?mail|write|compose|forward|mail)\b(?!s)", lowered
    ) and not re.search(r"\bfrom\s+\S+@", lowered)
    if sending and addresses:
        return [
            Step(
                "send_google_email",
                lambda turn: _send_arguments(turn, text, addresses),
                "I didn't send the email because there were no results to share.",
            )
        ]
    if addresses and re.search(r"\bfrom\b", lowered):
        return [Step("google_email_search_from_email", lambda turn: {"email": addresses[0]})]
    message_id = _HEX_ID.search(text)
    if message_id and re.search(r"\b(read|open|show)\b", lowered):
        return [Step("read_google_email", lambda turn: {"message_id": message_id.group(0)})]
    if re.search(r"\b(read|open)\b.*\b(newest|latest|last|most recent|top|first)\b", lowered):
        return _open_newest_steps(gmail_query(text))
    query = gmail_query(text)
    if query:
        return [Step("google_email_search", lambda turn: {"query": query, "max_results": 10})]
    return [Step("google_email_inbox", lambda turn: {"max_results": 10})]


def _open_newest_steps(query: str) -> list[Step]:
    """For "open the newest email (from dana)": list them, then read the first one listed."""
    finder = (
        Step("google_email_search", lambda turn: {"query": query, "max_results": 5})
        if query
        else Step("google_email_inbox", lambda turn: {"max_results": 5})
    )

    def read_arguments(turn: Turn) -> dict[str, Any] | None:
        found = turn.outputs(finder.name)
        message_id = first_id(found[-1].output or "", r"\bid=([0-9a-f]{16})") if found else None
        return {"message_id": message_id} if message_id else None

    return [finder, Step("read_google_email", read_arguments, "I couldn't find an email to open.")]


# "from dana", "von Dana", and "de Dana" after the mail it qualifies ("boîte de réception"
# is no sender).
_SENDER = re.compile(
    r"\b(?:from|von|de la part de|de parte de|(?:e-?mails?|courriels?|correos?|messages?|"
    rf"mensajes?|{_UNREAD})\s+de)\s+(?:(my|the|our|mon|ma|mi|meinem|meiner)\s+)?([^\W\d_][\w.-]*)"
)
_NOT_A_SENDER = frozenset(
    "last this today yesterday la le les l el hoy ayer hier gestern heute".split()
)


def gmail_query(clause: str) -> str:
    """Gmail search syntax for a request like "unread emails from dana about the budget"."""
    lowered = clause.lower()
    parts = []
    if re.search(rf"\b(?:{_UNREAD})\b", lowered):
        parts.append("is:unread")
    if re.search(r"\b(sent|i sent|envoy[ée]s|enviados|gesendet\w*)\b", lowered):
        parts.append("in:sent")
    sender = _SENDER.search(lowered)
    if sender and sender.group(2) not in _NOT_A_SENDER:
        # "from dana": the sender's name; "from my landlord": a word to look for.
        parts.append(sender.group(2) if sender.group(1) else f"from:{sender.group(2)}")
    topic = re.search(
        r"\b(?:about|regarding|mentioning|for|with subject|à propos de|au sujet de|concernant|"
        r"sobre|acerca de|über)\s+(.+)$",
        lowered,
    )
    if topic:
        words = [
            w
            for w in re.findall(r"[\w$.-]+", topic.group(1))
            if w not in {"the", "my", "a", "an", "emails", "email", "mail", "inbox"}
        ]
        parts.extend(words[:4])
    return " ".join(parts)


def _greeting_for(address: str) -> str:
    name = re.split(r"[._+-]", address.split("@")[0])[0]
    return f"Hi {name.capitalize()}," if name.isalpha() else "Hi,"


def _send_arguments(turn: Turn, clause: str, addresses: list[str]) -> dict[str, Any] | None:
    refers_to_results = re.search(
        r"\b(list|results?|them|those|these|it|that|places|options|links?)\b", clause.lower()
    )
    usable = [call for call in turn.shared if not call.failed]
    greeting = _greeting_for(addresses[0])
    if usable:
        source = usable[-1]
        lines = [strip_item(line) for line in items_of(source.output or "")][:10]
        subject = turn.title_of(source)
        body = "\n".join(
            [
                greeting,
                "",
                f"Here's what I found — {subject}:",
                "",
                *(f"{n}. {line}" for n, line in enumerate(lines, 1)),
                "",
                "Cheers",
            ]
        )
    elif refers_to_results and turn.shared:
        return None  # the results this email was meant to carry failed: do not send nonsense
    else:
        said = re.search(r"\b(?:saying|that says|to say|:)\s+(.+)$", clause, re.I)
        topic = re.search(r"\babout\s+(.+)$", clause, re.I)
        phrase = said or topic
        text = phrase.group(1).strip() if phrase else "Just checking in."
        subject = (topic.group(1).strip().capitalize() if topic else "Quick note")[:80]
        body = f"{greeting}\n\n{text[0].upper()}{text[1:]}\n\nCheers"
    return {"to": addresses[:5], "subject": subject, "body": body, "cc": None, "bcc": None}


def _reply_steps(clause: str, addresses: list[str]) -> list[Step]:
    said = re.search(
        r"\b(?:saying|that says|to say|with|en disant|disant|diciendo|que diga|mit|sagend)"
        r"\s+(.+)$|:\s+(.+)$",
        clause,
        re.I,
    )
    body = (
        (said.group(1) or said.group(2)).strip()
        if said
        else "Thanks for your email. I'll get back to you soon."
    )
    body = body[0].upper() + body[1:]
    direct = _HEX_ID.search(clause)
    if direct:
        return [
            Step(
                "reply_to_google_email", lambda turn: {"message_id": direct.group(0), "body": body}
            )
        ]
    finder = (
        Step("google_email_search_from_email", lambda turn: {"email": addresses[0]})
        if addresses
        else Step("google_email_inbox", lambda turn: {"max_results": 5})
    )

    def reply_arguments(turn: Turn) -> dict[str, Any] | None:
        found = turn.outputs(finder.name)
        message_id = first_id(found[-1].output or "", r"\bid=([0-9a-f]{16})") if found else None
        return {"message_id": message_id, "body": body} if message_id else None

    return [
        finder,
        Step("reply_to_google_email", reply_arguments, "I couldn't find the email to reply to."),
    ]


# ----------------------------------------------------------------------------- the answer


def summary(call: PastCall) -> str | None:
    output = call.output or ""
    args = call.arguments
    name = call.name
    if call.not_run:
        return _not_run_sentence(call) if name in _SENDS else None
    if name in _LISTINGS:
        items = items_of(output)
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
            f"I found {plural(len(items), 'email')} {where}{unread_text}.{newest}"
            + injection_warning(items)
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
    return None


def _not_run_sentence(call: PastCall) -> str:
    """A send the person did not approve: say plainly that nothing was sent."""
    what = (
        f"send **{call.arguments.get('subject') or 'the email'}**"
        if call.name == "send_google_email"
        else "send the reply"
    )
    if "in time" in (call.output or ""):
        return f"I didn't {what}: the approval request expired, so nothing was done."
    said = re.search(r'They said: "(.*)"', call.output or "")
    because = f" (you said: “{said.group(1)}”)" if said else ""
    return f"OK, I didn't {what}: you declined it{because}, so nothing was done."


# ----------------------------------------------------------------------------- declines


# Emptying mail ("delete all my newsletters"), or unsubscribing, which needs no object.
CLEAR_MAIL = Decline(
    asks={
        "en": asking(
            "delete|remove|trash|archive|erase|clear out|clean up",
            r"e-?mails?|mails?|messages?|inbox|newsletters?|spam|promotions?",
            "unsubscribe",
        ),
        "fr": asking(
            r"supprime\w*|efface\w*|archive\w*|vide[rz]?|nettoie\w*",
            r"e-?mails?|mails?|courriels?|messages?|newsletters?|spams?|bo[iî]te",
            r"d[ée]sabonne\w*|d[ée]sinscri\w*",
        ),
        "es": asking(
            r"borra\w*|elimina\w*|archiva\w*|vac[ií]a\w*|limpia\w*",
            r"e-?mails?|correos?|mensajes?|newsletters?|boletin(?:es)?|bolet[ií]n|spam|bandeja",
            r"dar(?:me|se|te) de baja",
        ),
        "de": asking(
            r"l[öo]sch\w*|entfern\w*|archivier\w*|leere\w*",
            r"e-?mails?|mails?|nachrichten|newsletter\w*|spam|posteingang",
            r"abbestell\w*|abmelden",
        ),
    },
    says={
        "en": "I can't delete or archive emails, or unsubscribe you from anything: the Gmail "
        "connection here only reads, searches, sends and replies.",
        "fr": "Je ne peux pas supprimer ni archiver d'e-mails, ni vous désabonner de quoi que "
        "ce soit : ici, l'accès à Gmail se limite à lire, chercher, envoyer et répondre.",
        "es": "No puedo borrar ni archivar correos, ni darte de baja de nada: aquí la conexión "
        "con Gmail solo lee, busca, envía y responde.",
        "de": "Ich kann keine E-Mails löschen oder archivieren und nichts abbestellen: Der "
        "Gmail-Zugang kann hier nur lesen, suchen, senden und antworten.",
    },
    about="delete archive unsubscribe trash",
)

_SENT_FOLLOW_UP = "Is there anything else you'd like me to send or look up?"

HINTS = OfflineHints(
    examples=(
        "What's in my inbox?",
        "Show my unread emails",
        "Find emails from dana about the offsite",
        "Email the list to bob@example.com",
        "Reply to the latest email saying thanks",
    ),
    tools={
        "google_email_inbox": ToolHints(examples=("What's in my inbox?",)),
        "google_email_search": ToolHints(examples=("Show my unread emails",)),
        "google_email_search_from_email": ToolHints(examples=("Emails from dana@example.com",)),
        "read_google_email": ToolHints(examples=("Open the newest email",)),
        "send_google_email": ToolHints(
            examples=("Email bob@example.com about lunch",), follow_up=_SENT_FOLLOW_UP
        ),
        "reply_to_google_email": ToolHints(
            examples=("Reply saying thanks",), follow_up=_SENT_FOLLOW_UP
        ),
    },
    keywords=KEYWORDS,
    capability="check and send Gmail",
    capability_in={
        "fr": "consulter et envoyer vos e-mails Gmail",
        "es": "revisar y enviar tus correos de Gmail",
        "de": "Gmail-E-Mails lesen und senden",
    },
    declines=(CLEAR_MAIL,),
    planner=steps,
    summary=summary,
    follow_up="Want me to open one of them or draft a reply?",
    suggestions={
        "google_email_inbox": ("Show only my unread emails", "Reply to the latest email"),
        "google_email_search": ("Open the newest result", "What's in my inbox?"),
        "google_email_search_from_email": ("Reply to the latest one", "What's in my inbox?"),
        "google_email_message": ("Reply saying thanks", "What's in my inbox?"),
        "send_google_email": ("Show my sent emails", "What's in my inbox?"),
        "reply_to_google_email": ("Show my sent emails", "What's in my inbox?"),
    },
)
