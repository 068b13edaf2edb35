"""The wire vocabulary every layer shares: server events, the envelope, the serialiser and
the ToolResponse schema (docs/protocol.md §3, docs/connectors.md). Pure: no I/O.

It sits below ``storage`` because the chat log *is* the wire log: storage writes events
(a prompt, an orphan's end, an approval) with the same models the socket sends. The
socket's own half, client frames and their parsing, lives in ``websocket.protocol``.
"""
