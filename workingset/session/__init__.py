"""The session: `Investigation`, one store transaction per call, and what surrounds it.

`investigation` holds the class, `turns` and `calls` its per-call units of work, `replies`
what it returns, `answers` the answer in a provider's reply, `schemas` the JSON Schemas of
its inputs, and `frozen_replay` the rebuild of an export through a fresh `Investigation`
(above the session, so it lives here, not in `eventlog/`).
"""
