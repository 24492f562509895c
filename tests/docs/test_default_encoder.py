"""One default encoder (issue 33 item 4, issue 31 item 6): the registry's `DEFAULT_ENCODER`, which every doc names.

Changing the default is one line (`workingset/encoders/__init__.py`): `compare`, `requests` and
`report` follow the constant, and this test then lists every doc sentence still naming the old one.
"""

from __future__ import annotations

import re

from tests.helpers.common import BUG17, ROOT, invoke
from workingset.compare.engine import DEFAULT_CANDIDATE, DEFAULT_LABEL
from workingset.encoders import DEFAULT_ENCODER, ENCODERS, LATEST
from workingset.report import DEFAULT_STRATEGIES

DEFAULT = int(DEFAULT_LABEL[1:])
PAGES = [
    "README.md",
    "encodings/README.md",
    *(str(p.relative_to(ROOT)) for p in sorted((ROOT / "docs").glob("*.md"))),
]
# Sentences that say which version is the default (whitespace made single spaces first).
CLAIMS = [
    re.compile(r"default encoder(?: for new [a-z]+)? is v(\d+)"),
    re.compile(r"default encoder,? \(?v(\d+)"),
    re.compile(r"\bv(\d+), the default\b(?! before)"),
    re.compile(r"--strategy v(\d+)`, the default"),
    re.compile(r"encoder=\"v(\d+)\"\)` \(the default encoder\)"),
    re.compile(r"store, state_json, encoder=\"v(\d+)\""),
    re.compile(r"New analyses and imports use v(\d+)"),
    re.compile(r"candidate to the default encoder, v(\d+)"),
]
# Every version, as the docs spell the range `--all` covers.
ALL = re.compile(r"`--all` \| every version, v1–v(\d+)")
# Pages that must say which version is the default (the ones a user choosing a strategy reads).
MUST_NAME = ("README.md", "docs/protocol.md", "docs/sessions.md", "docs/compare.md", "docs/billing.md",
             "docs/report.md")  # fmt: skip


def _text(page: str) -> str:
    return " ".join((ROOT / page).read_text(encoding="utf-8").split())


def test_the_code_follows_the_registry():
    assert DEFAULT in ENCODERS
    assert DEFAULT_CANDIDATE == DEFAULT_LABEL == f"v{DEFAULT_ENCODER.rsplit('v', 1)[1]}"
    assert DEFAULT_STRATEGIES[0] == DEFAULT_LABEL
    default = invoke("requests", str(BUG17))
    assert default.exit_code == 0, default.output
    assert default.stdout == invoke("requests", str(BUG17), "--strategy", DEFAULT_LABEL).stdout


def test_every_doc_names_the_real_default():
    wrong, named = [], set()
    for page in PAGES:
        text = _text(page)
        for claim in CLAIMS:
            for m in claim.finditer(text):
                named.add(page)
                if int(m.group(1)) != DEFAULT:
                    wrong.append(f"{page}: {m.group(0)!r}")
        for m in ALL.finditer(text):
            if int(m.group(1)) != LATEST:
                wrong.append(f"{page}: {m.group(0)!r} (the latest version is v{LATEST})")
    assert not wrong, f"docs naming another default than {DEFAULT_LABEL}:\n" + "\n".join(wrong)
    assert not set(MUST_NAME) - named, f"pages that no longer say the default is {DEFAULT_LABEL}"


def test_examples_do_not_pass_an_old_version_as_if_it_were_the_default():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert 'encoder="v8"' not in readme and "--encoder v8" not in readme
