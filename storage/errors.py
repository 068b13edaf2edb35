"""Errors the storage layer raises on purpose (anything else is a bug or an outage)."""

from __future__ import annotations


class StorageError(Exception):
    """Base class, so callers can catch every deliberate storage error at once."""


class ChatNotFound(StorageError):
    """The chat does not exist, or belongs to another user (callers answer 404 either way)."""

    def __init__(self, chat_id: str) -> None:
        super().__init__(f"chat {chat_id!r} not found")
        self.chat_id = chat_id


class ChatForbidden(StorageError):
    """The chat id is already taken by another user; pick another id."""

    def __init__(self, chat_id: str) -> None:
        super().__init__(f"chat {chat_id!r} belongs to another user; choose another chat id")
        self.chat_id = chat_id


class TurnInProgress(StorageError):
    """The chat already runs a turn; a chat runs one turn at a time."""

    def __init__(self, turn_id: str) -> None:
        super().__init__(
            f"turn {turn_id!r} is still running in this chat; wait for it or cancel it"
        )
        self.turn_id = turn_id


class ClientMessageReused(StorageError):
    """A ``client_message_id`` the chat has already seen came with a different text: a
    client bug (ids must be unique per message), never answered with the old prompt."""

    def __init__(self, client_message_id: str) -> None:
        super().__init__(
            f"client_message_id {client_message_id!r} was already used in this chat for a "
            "different prompt; use a new id for each message"
        )
        self.client_message_id = client_message_id


class TurnFenced(StorageError):
    """The turn may not be written to any more: it is no longer running (another instance
    closed it), or, for what follows its end, a later turn of the chat has begun."""

    def __init__(self, turn_id: str) -> None:
        super().__init__(f"turn {turn_id!r} is no longer running; its writer must stop")
        self.turn_id = turn_id


class CancelRequested(StorageError):
    """A stop was asked for the turn before its ``completed`` end was written: the end
    must say ``cancelled`` (a stop that was acknowledged is honoured)."""

    def __init__(self, turn_id: str) -> None:
        super().__init__(f"turn {turn_id!r} was asked to stop; end it as cancelled")
        self.turn_id = turn_id


class ApprovalNotFound(StorageError):
    """No pending-or-decided approval with this id in this user's chat (callers answer 404
    whether it never existed, is in another chat or belongs to another user)."""

    def __init__(self, approval_id: str) -> None:
        super().__init__(f"approval {approval_id!r} not found in this chat")
        self.approval_id = approval_id


class ApprovalDecided(StorageError):
    """The approval was already decided (the first decision wins); ``status`` says how."""

    def __init__(self, approval_id: str, status: str) -> None:
        super().__init__(f"approval {approval_id!r} is already {status}")
        self.approval_id = approval_id
        self.status = status


class DuplicateName(StorageError):
    """A user with this name already exists."""

    def __init__(self, name: str) -> None:
        super().__init__(f"a user named {name!r} already exists; choose another name")
        self.name = name


class TurnNotFound(StorageError):
    """The chat has no turn with this id (it may be another chat's turn)."""

    def __init__(self, turn_id: str) -> None:
        super().__init__(f"turn {turn_id!r} not found in this chat")
        self.turn_id = turn_id
