"""One small exception tree; every error carries a stable code, listed once in `Code`."""

from __future__ import annotations

from enum import StrEnum
from typing import Any


class Code(StrEnum):
    """Every stable error code, in the order of docs/protocol.md's error table.

    A member is its own string (`Code.TOO_LARGE == "too_large"`), so a raise site may pass
    either; `tests/docs/test_docs_protocol.py` checks that every code the package raises is a
    member and that the table lists exactly the members.
    """

    # A decision the request's rules refuse (DecisionRejected).
    MALFORMED_JSON = "malformed_json"
    SCHEMA_VIOLATION = "schema_violation"
    RECALL_UNSUPPORTED = "recall_unsupported"
    RECALL_COUNT = "recall_count"
    RECALL_DUPLICATE = "recall_duplicate"
    UNKNOWN_EVIDENCE = "unknown_evidence"
    RECALL_ENTRY = "recall_entry"
    RECALL_PAGE = "recall_page"
    RECALL_NOT_RETAINED = "recall_not_retained"
    ASSESSMENT_MISSING = "assessment_missing"
    ASSESSMENT_MISMATCH = "assessment_mismatch"
    UNGROUNDED_REFERENCE = "ungrounded_reference"
    SPAN_NOT_SHOWN = "span_not_shown"
    SPAN_OUT_OF_RANGE = "span_out_of_range"
    SPAN_MISMATCH = "span_mismatch"
    QUOTE_NOT_FOUND = "quote_not_found"
    STALE_REQUEST = "stale_request"
    ANALYSIS_CLOSED = "analysis_closed"
    # A turn or a provider reply that yields no answer.
    TURN_FAILED = "turn_failed"
    TURN_INCOMPLETE = "turn_incomplete"
    REPLY_TRUNCATED = "reply_truncated"
    REPLY_REFUSED = "reply_refused"
    REPLY_EMPTY = "reply_empty"
    REPLY_MALFORMED = "reply_malformed"
    # A session call that cannot proceed (SessionError).
    ENCODER_MISMATCH = "encoder_mismatch"
    UNKNOWN_ANALYSIS = "unknown_analysis"
    ANALYSIS_EXISTS = "analysis_exists"
    UNKNOWN_HYPOTHESIS = "unknown_hypothesis"
    HYPOTHESIS_BUSY = "hypothesis_busy"
    HYPOTHESIS_UNAVAILABLE = "hypothesis_unavailable"
    REQUEST_OPEN = "request_open"
    UNKNOWN_ACTION = "unknown_action"
    RESULT_MISMATCH = "result_mismatch"
    INVALID_TRANSITION = "invalid_transition"
    # Inputs, names and the command line.
    INVALID_FILE = "invalid_file"
    NO_USAGE = "no_usage"
    TOO_LARGE = "too_large"
    HASH_MISMATCH = "hash_mismatch"
    REPLAY_DIVERGED = "replay_diverged"
    UNKNOWN_ENCODER = "unknown_encoder"
    UNKNOWN_STRATEGY = "unknown_strategy"
    UNKNOWN_PROVIDER = "unknown_provider"
    TOKENIZER_UNAVAILABLE = "tokenizer_unavailable"
    USAGE_ERROR = "usage_error"
    # The store.
    STORE_CORRUPT = "store_corrupt"
    STORE_BUSY = "store_busy"
    # The operating system (`files.OS_CODES`).
    NOT_FOUND = "not_found"
    PERMISSION_DENIED = "permission_denied"
    IS_A_DIRECTORY = "is_a_directory"
    NOT_A_DIRECTORY = "not_a_directory"
    NOT_REGULAR_FILE = "not_regular_file"
    ALREADY_EXISTS = "already_exists"
    INVALID_PATH = "invalid_path"
    IO_ERROR = "io_error"
    STORE_UNAVAILABLE = "store_unavailable"


class WorkingsetError(Exception):
    """Base of every error the library raises on purpose; `code` is stable across releases."""

    code = "error"

    def __init__(
        self, message: str, *, code: str | None = None, details: dict[str, Any] | None = None
    ):
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.details: dict[str, Any] = details or {}

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "details": self.details}


class InvalidFile(WorkingsetError):
    """Unreadable, not JSON, or not the state or stored-context format; details carry the JSON path."""

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
    """A decision failed validation (docs/protocol.md, "Decisions"); nothing was changed."""

    code = "schema_violation"


class ReplyUnusable(WorkingsetError):
    """A provider reply that holds no answer to submit: `reply_truncated`, `reply_refused`, `reply_empty` or `reply_malformed`."""

    code = "reply_empty"


class SessionError(WorkingsetError):
    """A session operation that cannot proceed: unknown analysis, busy hypothesis, open request, …"""


class StoreCorrupt(WorkingsetError):
    """The store is not a workingset store, or it is damaged."""

    code = "store_corrupt"


class UsageError(WorkingsetError):
    """The command line itself is wrong (bad option value, missing argument)."""

    code = "usage_error"
