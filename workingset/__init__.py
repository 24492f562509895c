"""workingset: lossless, deterministic, versioned prompt contexts for investigation agents."""

from .encoders import DEFAULT_ENCODER, ENCODERS, RenderedContext, get_encoder, render
from .errors import (
    Code,
    DecisionRejected,
    HashMismatch,
    InvalidFile,
    ReplayDiverged,
    ReplyUnusable,
    SessionError,
    StoreCorrupt,
    TooLarge,
    UnknownEncoder,
    UsageError,
    WorkingsetError,
)
from .io.limits import Limits
from .model.hashing import content_hash
from .model.spans import Span, canonical_text, make_span, quote_span
from .model.state import (
    State,
    StoredContext,
    load_state,
    load_state_or_context,
    load_stored_context,
)
from .runs.layout import make_stored_context, read_run, verify_context, write_run
from .session.answers import answer_of
from .session.frozen_replay import ReplayReport, replay_export
from .session.investigation import Investigation
from .session.replies import Applied, PendingAction, Recorded, Request, Summary
from .session.schemas import json_schema
from .store import PostgresStore, SqliteStore, open_store

__all__ = [
    "Applied",
    "Investigation",
    "PendingAction",
    "PostgresStore",
    "Recorded",
    "Request",
    "SqliteStore",
    "Summary",
    "DEFAULT_ENCODER",
    "ENCODERS",
    "Code",
    "DecisionRejected",
    "HashMismatch",
    "ReplayDiverged",
    "InvalidFile",
    "ReplyUnusable",
    "RenderedContext",
    "SessionError",
    "State",
    "StoredContext",
    "StoreCorrupt",
    "TooLarge",
    "Limits",
    "UnknownEncoder",
    "UsageError",
    "WorkingsetError",
    "ReplayReport",
    "Span",
    "canonical_text",
    "content_hash",
    "json_schema",
    "make_span",
    "quote_span",
    "replay_export",
    "answer_of",
    "get_encoder",
    "load_state",
    "load_state_or_context",
    "load_stored_context",
    "make_stored_context",
    "open_store",
    "read_run",
    "render",
    "verify_context",
    "write_run",
]
