"""How records are written in API answers: timestamps, approvals."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from app.api_models import Approval
from storage.records import ApprovalRecord


def rfc3339(value: datetime | None) -> str | None:
    """UTC with milliseconds and a ``Z``, the same shape as event ``ts``."""
    if value is None:
        return None
    return value.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def approval_model(approval: ApprovalRecord) -> Approval:
    """An approval as REST shows it: what was asked, and the record of its decision."""
    return Approval.model_validate(approval_fields(approval))


def approval_json(approval: ApprovalRecord) -> dict[str, Any]:
    """``approval_model`` as JSON (the AG-UI interrupts carry it too)."""
    return approval_model(approval).dump()


def approval_fields(approval: ApprovalRecord) -> dict[str, Any]:
    return {
        "approval_id": approval.id,
        "chat_id": approval.chat_id,
        "turn_id": approval.turn_id,
        "call_id": approval.call_id,
        "name": approval.name,
        "description": approval.description,
        "arguments": approval.arguments,
        "effect": approval.effect,
        "current_agent": approval.current_agent,
        "status": approval.status,
        "created_at": rfc3339(approval.created_at),
        "expires_at": rfc3339(approval.expires_at),
        "decided_at": rfc3339(approval.decided_at),
        "decided_by": approval.decided_by,
        "decided_via": approval.decided_via,
        "reason": approval.reason,
    }
