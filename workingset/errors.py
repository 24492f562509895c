"""One small exception tree; every error carries a stable code that the CLI prints."""

from __future__ import annotations

from typing import Any


class WorkingsetError(Exception):
    """Base of every error the library raises on purpose; `code` is stable across releases."""

    code = "error"

    def __init__(self, message: str, *, code: str | None = None, details: dict[str, Any] | None = None):
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.details: dict[str, Any] = details or {}

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "details": self.details}


class InvalidFile(WorkingsetError):
    """Unreadable, not JSON, or not the SPEC §3/§4 format; details carry the JSON path."""

    code = "invalid_file"


class TooLarge(WorkingsetError):
    """An input over its configured size limit (see `workingset.io.limits`); nothing was read past it."""

    code = "too_large"


class HashMismatch(WorkingsetError):
    """A re-rendered context does not reproduce its recorded hash."""

    code = "hash_mismatch"


class UnknownEncoder(WorkingsetError):
    """No encoder by that name; the message lists the valid ones."""

    code = "unknown_encoder"


class ReplayDiverged(WorkingsetError):
    """Replaying an export did not reproduce it; details name the step, the field and both values."""

    code = "replay_diverged"


class DecisionRejected(WorkingsetError):
    """A decision failed validation (SPEC §6); nothing was changed."""

    code = "schema_violation"


class ReplyUnusable(WorkingsetError):
    """A provider reply that holds no answer to submit: `reply_truncated`, `reply_refused` or `reply_empty`."""

    code = "reply_empty"


class SessionError(WorkingsetError):
    """A session operation that cannot proceed: unknown analysis, busy hypothesis, open request, …"""


class StoreCorrupt(WorkingsetError):
    """The store is not a workingset store, or it is damaged."""

    code = "store_corrupt"


class UsageError(WorkingsetError):
    """The command line itself is wrong (bad option value, missing argument)."""

    code = "usage_error"
