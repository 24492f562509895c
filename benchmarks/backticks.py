"""Rendering an output of backticks against plain text of the same length (issue 30, item 2).

Run: .venv/bin/python benchmarks/backticks.py

One evidence output is added to the sample state (`tests.helpers.factory`) as the result the
first hypothesis must assess, and the state is rendered fresh (every per-process cache
emptied before each call, outside the timing) by v3 (text fenced whole), v13 (the journal)
and v14 (the journal, paged). The outputs, each of 1 and 8 million characters: plain text
(`x`), one backtick run, many runs (```` ```x ```` repeated), and runs of just under half a
page between single letters (where v14's pages are two characters long). Each
is timed as the median CPU time of three calls, alternating with the plain text of the same
length, and its peak memory traced once (tracemalloc) against the plain text's. Before
issue 30, one run of a million backticks took v14 about 13 us and 150 bytes per character.
Writes the `backticks` section of RESULTS.md (timed).
"""

from __future__ import annotations

import statistics
import sys
import time
import tracemalloc
from pathlib import Path

from tabulate import tabulate

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(1, str(ROOT / "benchmarks"))

from _results import write_section  # noqa: E402

from tests.helpers.factory import with_output  # noqa: E402
from workingset.encoders import get_encoder  # noqa: E402
from workingset.io import caches  # noqa: E402
from workingset.model.state import State  # noqa: E402

VERSIONS, SIZES, CALLS = ("v3", "v13", "v14"), (1_000_000, 8_000_000), 3


def texts(n: int, page: int) -> dict[str, str]:
    half = (
        "`" * ((page - 4) // 2 - 1) + "x"
    )  # a run one short of a one-character page, then a letter
    return {
        "one run": "`" * n,
        "many runs": ("```x" * (n // 4 + 1))[:n],
        "half-page runs": (half * (n // len(half) + 1))[:n],
    }


def cpu(version: str, state: State) -> tuple[float, int]:
    """CPU seconds of one fresh render, and its characters."""
    caches.clear()
    enc = get_encoder(version)
    start = time.process_time()
    chars = enc.render(state, "H1").chars
    return time.process_time() - start, chars


def peak(version: str, state: State) -> int:
    caches.clear()
    enc = get_encoder(version)
    tracemalloc.start()
    enc.render(state, "H1")
    top = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return top


def main() -> None:
    """Time and trace each texture against plain text; write the `backticks` section."""
    page = get_encoder("v14").page_size  # type: ignore[attr-defined]
    rows = []
    worst = (0.0, "")  # v14's most CPU per character of output, and on which
    for n in SIZES:
        plain = with_output("x" * n)
        for label, text in texts(n, page).items():
            state = with_output(text)
            for version in VERSIONS:
                a, b = [], []
                for _ in range(CALLS):
                    seconds, chars = cpu(version, state)
                    a.append(seconds)
                    b.append(cpu(version, plain)[0])
                ta, tb = statistics.median(a), statistics.median(b)
                pa, pb = peak(version, state), peak(version, plain)
                if version == "v14" and ta / n > worst[0]:
                    worst = (ta / n, f"{label}, {n:,} characters")
                rows.append([f"{n:,}", label, version, f"{chars:,}", f"{ta * 1000:.0f}", f"{tb * 1000:.0f}",
                             f"{ta / tb:.1f}x", f"{pa / 2**20:.1f}", f"{pb / 2**20:.1f}", f"{pa / pb:.2f}x"])  # fmt: skip
            del state
    caches.clear()
    table = tabulate(rows, headers=["output chars", "output", "version", "context chars", "render CPU ms",
                                    "plain text CPU ms", "time ratio", "peak MiB", "plain text peak MiB",
                                    "memory ratio"],
                     tablefmt="github", disable_numparse=True, colalign=["right", "left", "left"] + ["right"] * 7)  # fmt: skip
    body = (
        "A fresh render of the sample state with one output of backticks as the result to assess, against "
        "the same state with plain text of the same length (`x`), measured alternately in the same run: "
        f"medians of {CALLS} calls' CPU time, every per-process cache emptied before each call; peak memory "
        f"traced once each (tracemalloc, which also counts the output itself). v14's page here is {page:,} "
        "characters. Before issue 30 one run of a million backticks took v14 about 13 us and 150 bytes per "
        f"character (8 MB: 94 s and 1.2 GB); the most v14 takes now is {worst[0] * 1e6:.2f} us per character "
        f"of output ({worst[1]}).\n\n" + table + "\n"
    )
    write_section("backticks", "Backtick outputs against plain text", body, timed=True)


if __name__ == "__main__":
    main()
