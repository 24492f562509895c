"""The identifiers an agent *used*: what its next command, thought or decision names.

`harvest.harvest` keeps an archived payload's identifiers in its index row (v14's frozen
`ids=`); this module is a separate rule for what agents write, used by `compare --use`
(`workingset.compare.use`). One mechanical rule, regular expressions over the text, each
match kept whole, distinct, in order of first appearance:

- **paths**: a run of path characters holding a `/` (`src/app/models.py`, `./run.sh`,
  `/var/log/app.log`), with an optional `:line` (`models.py:123`);
- **dotted names**: two or more names joined by dots (`django.db.models`, `models.py`,
  `self.cache_size`), with an optional `:line`;
- **underscored names** (`cache_size`, `__init__`) and **camel-case names** (`getUser`,
  `QuerySet`, `ValueError`: a capital after a lower-case letter or digit);
- **line numbers** written as `line 123` (as tracebacks write them);
- **hashes**: 7 to 40 hex digits mixing digits and letters.

A match shorter than `MIN_LENGTH` characters is left out (too common to say what was used).

Its limits, written down: it is a proxy. An agent may know a name without having seen it
(from the task, from training, by guessing a path); a plain word it took from an output
(`timeout`, `admin`) is not matched; a name that occurs in an output only by chance counts
as taken from it. The caller keeps only names that occur in an earlier output and not in
the case, the task or the agent's fixed prompt, which removes the commonest false matches.
"""

from __future__ import annotations

import re

MIN_LENGTH = 4

_USED = re.compile(
    r"(?<![\w.@/-])(?:"
    r"(?:\.{1,2}/|/)?[\w.@+-]+(?:/[\w.@+-]+)+(?::\d+)?"  # paths (a slash inside), :line
    r"|[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+(?::\d+)?"  # dotted names (and file.ext), :line
    r"|line \d+"  # a line number as tracebacks write it
    r"|\w*_\w*"  # underscored names
    r"|[A-Za-z]\w*[a-z0-9][A-Z]\w*"  # camel case (a capital after a lower-case letter or digit)
    r"|[0-9a-f]{7,40}"  # hashes (checked below: digits and letters mixed)
    r")(?![\w@])"
)
_HEX = re.compile(r"[0-9a-f]{7,40}")


def _keep(value: str) -> bool:
    if len(value) < MIN_LENGTH or value.strip("_").isdigit() or not value.strip("_./"):
        return False
    if _HEX.fullmatch(value):
        return not value.isdigit() and any(c.isdigit() for c in value)
    return any(c.isalpha() for c in value)


def harvest_used(text: str) -> list[str]:
    """The identifiers `text` (an agent's command, thought or decision) names, distinct, in order."""
    found: list[str] = []
    seen: set[str] = set()
    for match in _USED.finditer(text):
        value = match.group(0).rstrip(".")
        if value in seen or not _keep(value):
            continue
        seen.add(value)
        found.append(value)
    return found
