"""Values ending in a newline, which v3–v13 rendered wrongly until 2026-06 (corrected on purpose).

The encoders tested a value with `^…$`, and `$` also matches before a final newline: a v12/v13
head-line value such as `origin "loki:prod\\n"` was written bare, so the line broke in two, and
a text payload's language "python\\n" became a fence's info string, so the fenced body started
one line late with an empty line. Both now fall to their other branch (compact JSON, no info
string); every other value renders as before (tests/encoders/test_frozen_corpus.py and the snapshots
prove it). A language with a control character is also refused where inputs come in.
"""

from __future__ import annotations

import json

import pytest

from tests.helpers.common import VERSIONS
from tests.helpers.factory import evidence, sample_state
from tests.helpers.journal_checks import v12_lossless
from tests.helpers.recover import blocks
from tests.helpers.v13_checks import check_lossless as v13_lossless
from workingset.encoders import get_encoder
from workingset.errors import InvalidFile
from workingset.eventlog.log import decode_result
from workingset.model.state import TextPayload, validate_state

CAPTURE_FIELDS = ("origin", "predicate", "snapshot", "coverage", "next_cursor")


def _item_with(value: str, language: str = "log"):
    """sample_state() and a new unsettled item (shown in full by every version) whose every text capture field (and the last decision's verdict) is `value`."""
    state = sample_state()
    item = evidence(len(state.evidence) + 1, "H2", TextPayload(language=language, text="20:00 pool exhausted"), status="unsettled",
                    **{name: value for name in CAPTURE_FIELDS})  # fmt: skip
    state.evidence.append(item)
    state.hypotheses[0].history[-1].verdict = value
    return state, item


@pytest.mark.parametrize("name", ["v12", "v13"])
@pytest.mark.parametrize("value", ["loki:prod\n", "E000001\n", "true\n", "x\r", "a\n\n"])
def test_a_head_line_value_ending_in_a_newline_stays_on_its_line(name, value):
    state, item = _item_with(value)
    validate_state(state)
    lines = get_encoder(name).render(state, "H1").text.split("\n")
    head = next(n for n, line in enumerate(lines) if line.startswith(f"{item.id} H2 #"))
    assert lines[head + 1] == "query: select 1"  # the head did not break: the query follows it
    quoted = value.replace("\n", "\\n").replace("\r", "\\r")
    assert all(f'{field}="{quoted}"' in lines[head] for field in CAPTURE_FIELDS), lines[head]
    assert any(
        line.endswith(f' verdict="{quoted}"') or f' verdict="{quoted}" ' in line for line in lines
    )


@pytest.mark.parametrize("value", ["loki:prod\n", "x\r", "a\n\n"])
def test_the_read_back_recovers_a_value_with_its_newline(value):
    state, _item = _item_with(value)
    validate_state(state)
    v12_lossless(state, "H1")  # every capture field and the verdict, compared with the state
    v13_lossless(state, "H1")


@pytest.mark.parametrize("version", [v for v in VERSIONS if v >= 3], ids=lambda v: f"v{v}")
@pytest.mark.parametrize("language", ["python\n", "log\n"])
def test_a_language_ending_in_a_newline_leaves_the_fenced_body_exact(version, language):
    # Built in Python and not validated: a state stored before the boundary refused such a language.
    state, item = _item_with("loki:prod", language)
    text = get_encoder(f"v{version}").render(state, "H1").text
    found = [(info, body) for _line, info, body in blocks(text) if body == item.payload.text]
    assert found == [
        ("", item.payload.text)
    ]  # no info string, and the body is the payload byte-exact
    assert "\n" + item.payload.text not in [body for _line, _info, body in blocks(text)]


def test_a_plain_language_is_still_the_info_string():
    state, item = _item_with("loki:prod", "python")
    text = get_encoder("v13").render(state, "H1").text
    assert ("python", item.payload.text) in [(info, body) for _line, info, body in blocks(text)]


@pytest.mark.parametrize(
    "language", ["python\n", "\x00", "log\r", "a\x7f", "b\u2028", "c\x1b[0m", "d\x85"]
)
def test_a_language_with_a_control_character_is_refused(language):
    state, _item = _item_with("loki:prod", language)
    with pytest.raises(InvalidFile) as exc:
        validate_state(state)
    assert exc.value.details["path"] == f"$.evidence[{len(state.evidence) - 1}].payload.language"
    result = {
        "scope": "log",
        "capture": {"origin": "loki:prod"},
        "payload": {"kind": "text", "language": language, "text": "x"},
    }
    with pytest.raises(InvalidFile) as exc:
        decode_result(json.dumps(result).encode())
    assert exc.value.code == "invalid_file" and exc.value.details["path"] == "$.payload.language"


def test_a_language_with_a_tab_is_still_valid_and_written_without_an_info_string():
    # The frozen corpus holds such states (`tab\tlang`): a tab ends no line, so it is not refused.
    state, item = _item_with("loki:prod", "tab\tlang")
    validate_state(state)
    assert ("", item.payload.text) in [
        (info, body) for _line, info, body in blocks(get_encoder("v5").render(state, "H1").text)
    ]
