"""The frozen encoder versions and their one registry.

`ENCODERS` maps the version number — the value persisted in stored contexts as
`investigation_project_v<N>` — to its encoder. Nothing else maps names to classes.
"""

from __future__ import annotations

from collections.abc import Callable

from ..errors import UnknownEncoder
from ..io.numbers import ascii_int
from ..model.state import State
from ._api import Encoder, RenderedContext, View
from .journal.v11 import V11
from .journal.v12 import V12
from .journal.v13 import V13
from .journal.v14 import V14
from .journal.v15 import V15
from .journal.v16 import V16
from .v01 import V1
from .v02 import V2
from .v03 import V3
from .v04 import V4
from .v05 import V5
from .v06 import V6
from .v07 import V7
from .v08 import V8
from .v09 import V9
from .v10 import V10

ENCODERS: dict[int, Encoder] = {
    1: V1(),
    2: V2(),
    3: V3(),
    4: V4(),
    5: V5(),
    6: V6(),
    7: V7(),
    8: V8(),
    9: V9(),
    10: V10(),
    11: V11(),
    12: V12(),
    13: V13(),
    14: V14(),
    15: V15(),
    16: V16(),
}
PREFIX = "investigation_project_v"
LATEST = max(ENCODERS)
# The version of new analyses and imports (`init`, `Investigation.create`, `schema decision`, `import`): v16.
# The rule (docs/encoders.md, "The default"): a version replaces the default when, with every recall billed under
# anthropic and openai-5.6, it shows at least as much of what the next step used for no more over the corpus, its
# holdout split and the runs outside it (benchmarks/RESULTS.md: use_all, use_unseen). v16 does against v14.
DEFAULT_ENCODER = f"{PREFIX}16"


def get_encoder(name: str) -> Encoder:
    """Look an encoder up by full name (`investigation_project_v8`) or alias (`v8`).

    A version that takes options (the context budget of v11 and later) is named with them after a colon:
    `v11:budget=120000`.
    """
    base, colon, options = name.partition(":")
    number = None
    for prefix in (PREFIX, "v"):
        tail = base[len(prefix) :] if base.startswith(prefix) else None
        number = ascii_int(tail) if tail and not tail.startswith("0") else None
        if number is not None:
            break
    if number not in ENCODERS:
        raise UnknownEncoder(
            f"no encoder {name[:100]!r}; available: v1–v{LATEST} ({PREFIX}1 … {PREFIX}{LATEST})",
            details={"valid": [f"{PREFIX}{n}" for n in ENCODERS] + [f"v{n}" for n in ENCODERS]},
        )
    encoder = ENCODERS[number]
    if not colon:
        return encoder
    with_options: Callable[[str], Encoder] | None = getattr(encoder, "with_options", None)
    if with_options is None:
        raise UnknownEncoder(
            f"no encoder {name!r}: v{number} takes no options", details={"valid": [f"v{number}"]}
        )
    return with_options(options)


def render(state: State, hypothesis: str, encoder: str = DEFAULT_ENCODER) -> RenderedContext:
    """Render the context for `hypothesis` with the named encoder (pure, deterministic)."""
    return get_encoder(encoder).render(state, hypothesis)


__all__ = [
    "ENCODERS", "DEFAULT_ENCODER", "Encoder", "RenderedContext", "View", "get_encoder", "render",
]  # fmt: skip
