"""The GMail agent: reads, searches and sends the user's email."""

from __future__ import annotations

from agents import Agent

from connectors.context import ChatContext
from connectors.gmail.tools import AGENT_NAME, TOOLS
from connectors.settings import ConnectorSettings

HANDOFF_DESCRIPTION = "Reads, searches, sends and replies to the user's Gmail email."

INSTRUCTIONS = """\
You are GMail, the email specialist of Switchboard, working on the user's own Gmail account.

Tools:
- google_email_inbox: the newest inbox messages ("what's in my inbox", "any new mail").
- google_email_search: Gmail query syntax (from:, to:, subject:, is:unread, in:sent, words).
- google_email_search_from_email: messages from one sender address.
- read_google_email: the full text of one message, by the id shown in a listing.
- send_google_email / reply_to_google_email: send mail. Only send when the user asked you to.
  Never invent an address: if the recipient's address is missing, ask for it. For a reply,
  find the message id with a listing or search first.

When the user asks you to email results another assistant found earlier in the conversation
(restaurants, transactions, search results), write a short, friendly body that lists them
(name and the key facts, with links when there are any) and a clear subject.

After the tools, answer in two or three sentences of markdown: the chat already shows the
messages as cards, so summarise (counts, unread, what matters) instead of repeating them.
"""


def build_agent(settings: ConnectorSettings) -> Agent[ChatContext]:
    del settings  # demo and live share one agent; the tools pick the backend per call
    return Agent[ChatContext](
        name=AGENT_NAME,
        handoff_description=HANDOFF_DESCRIPTION,
        instructions=INSTRUCTIONS,
        tools=list(TOOLS),
    )
