"""Numbers from outside text are bounded before `int()` (issue 30, item 3): a stable code, never a traceback.

CPython refuses to convert more than 4,300 digits (`ValueError`), and `str.isdigit()` is true
for `²`, which `int()` refuses: each input below crashed a command before `io.numbers`.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import msgspec
import pytest

from tests.helpers.common import DATA, invoke
from tests.helpers.session_helpers import answer_events, make_state
from workingset.compare.many import parse_shard
from workingset.encoders import get_encoder
from workingset.errors import WorkingsetError
from workingset.importers import import_trajectory
from workingset.io.limits import Limits
from workingset.io.numbers import MAX_DIGITS, ascii_int
from workingset.model.decoding import load_start
from workingset.model.hashing import content_hash
from workingset.providers import breakpoint_family
from workingset.runs.layout import make_stored_context
from workingset.session.investigation import Investigation

BIG = "1" * 4_301  # one digit past CPython's conversion limit
HOSTILE = [
    BIG,
    "9" * 5_000,
    "²",
    "٣",
    " 7",
    "7 ",
    "1_0",
    "+1",
    "-1",
    "",
    "0x10",
    "1" * (MAX_DIGITS + 1),
]


def test_ascii_int_takes_ascii_digits_only_and_few():
    assert ascii_int("0") == 0 and ascii_int("007") == 7
    assert ascii_int("9" * MAX_DIGITS) == 10**MAX_DIGITS - 1
    for text in HOSTILE:
        assert ascii_int(text) is None, text


def _code(fn) -> str:  # type: ignore[no-untyped-def]
    with pytest.raises(WorkingsetError) as err:
        fn()
    return err.value.code


@pytest.mark.parametrize("value", [BIG, "²", "٣", "1" * (MAX_DIGITS + 1)])
def test_an_encoder_budget_or_version_of_hostile_digits_is_an_unknown_encoder(value: str):
    assert _code(lambda: get_encoder(f"v14:budget={value}")) == "unknown_encoder"
    assert _code(lambda: get_encoder(f"v{value}")) == "unknown_encoder"
    assert _code(lambda: get_encoder(f"investigation_project_v{value}")) == "unknown_encoder"


def test_every_command_that_takes_an_encoder_refuses_a_huge_budget(tmp_path: Path):
    state = tmp_path / "state.json"
    state.write_text(json.dumps(make_state()))
    res = invoke("init", "--state", str(state), "--encoder", f"v14:budget={BIG}",
                 "--store", str(tmp_path / "s.sqlite3"), "--json")  # fmt: skip
    assert res.exit_code == 2 and "Traceback" not in res.stdout + res.stderr
    error = json.loads(res.stdout)["error"]
    assert error["code"] == "unknown_encoder" and len(error["message"]) < 300
    assert not (tmp_path / "s.sqlite3").exists()


@pytest.mark.parametrize(
    "spec", ["²/4", "1/²", f"1/{'9' * 5_000}", f"{BIG}/{BIG}", "٣/4", " 1/4", "0/4"]
)
def test_a_hostile_shard_is_a_usage_error(spec: str):
    assert _code(lambda: parse_shard(spec)) == "usage_error"
    res = invoke("compare", "a", "b", "--shard", spec, "--json")
    assert res.exit_code == 2 and "Traceback" not in res.stdout + res.stderr
    assert json.loads(res.stdout)["error"]["code"] == "usage_error"


def test_a_shard_of_plain_digits_is_read():
    assert parse_shard("2/4") == (2, 4) and parse_shard("04/07") == (4, 7)


@pytest.mark.parametrize("raw", [BIG, "²", "٣", " 12"])
def test_a_hostile_limit_in_the_environment_is_a_usage_error(raw: str):
    with pytest.raises(WorkingsetError, match="must be an integer") as err:
        Limits.current({"WORKINGSET_MAX_FILE_BYTES": raw})
    assert err.value.code == "usage_error" and len(str(err.value)) < 200
    assert Limits.current({"WORKINGSET_MAX_FILE_BYTES": "1_000_000"}).max_file_bytes == 1_000_000


def _state_with_page(number: str) -> dict:
    """The session state, its E000001 an output of several pages, recalled by H1 at page `number`."""
    state = make_state()
    payload = {"kind": "text", "language": "log", "text": "line of a long log\n" * 2_000}
    state["evidence"][0].update(payload=payload, content_hash=content_hash(_load_payload(payload)))
    state["recall"] = {
        "H1": {"evidence_refs": ["E000001"], "iteration": 0, "pages": [f"E000001:{number}"]}
    }
    return state


def _load_payload(payload: dict):  # type: ignore[no-untyped-def]
    from workingset.model.state import TextPayload

    return msgspec.convert(payload, TextPayload)


def _page_line(number: str, tmp_path: Path) -> str:
    with Investigation.create(tmp_path / f"s{number[:20]}.sqlite3", json.dumps(_state_with_page(number)),
                              encoder="v14:budget=20000") as inv:  # fmt: skip
        text = inv.next_request("H1").text
    return next(line for line in text.splitlines() if line.startswith("E000001 page "))


def test_a_stored_recall_page_of_hostile_length_renders_as_no_such_page(tmp_path: Path):
    """Before: `init` passed and every render of H1 crashed, for good."""
    line = _page_line(BIG, tmp_path)
    assert line.startswith(f"E000001 page {BIG}/") and line.endswith("chars: no such page")
    assert _page_line("99", tmp_path).endswith("chars: no such page")  # as any page the entry lacks
    shown = _page_line("2", tmp_path)
    assert shown.startswith("E000001 page 2/") and not shown.endswith("no such page")


def test_a_submitted_recall_page_of_hostile_length_is_rejected_and_kept(tmp_path: Path):
    """Before: `submit` crashed and the answer was not kept."""
    store = tmp_path / "s.sqlite3"
    with Investigation.create(store, json.dumps(make_state())) as inv:
        request = inv.next_request("H1").request_id
        answer = json.dumps(
            {"next": {"kind": "recall", "evidence_refs": ["E000001"], "pages": [f"E000001:{BIG}"]}}
        )
        with pytest.raises(WorkingsetError) as err:
            inv.submit(request, answer)
        assert err.value.code == "recall_page" and len(str(err.value)) < 300
    assert [e["request_id"] for e in answer_events(str(store))] == [request]
    res = invoke(
        "submit",
        "--analysis",
        "demo",
        "--request",
        request,
        answer,
        "--store",
        str(store),
        "--json",
    )
    assert res.exit_code == 2 and json.loads(res.stdout)["error"]["code"] == "recall_page"


def test_a_stored_context_whose_request_number_is_too_long_is_refused():
    ctx = msgspec.to_builtins(make_stored_context("demo-r0001", "v8", "H1", _load(make_state())))
    for digits, ok in (("0" * 3 + "7", True), ("1" * MAX_DIGITS, True), (BIG, False)):
        ctx["request_id"] = f"demo-r{digits}"
        data = json.dumps(ctx).encode()
        if ok:
            assert load_start(data)[1] == int(digits)
        else:
            assert _code(lambda d=data: load_start(d)) == "invalid_file"


def _load(state: dict):  # type: ignore[no-untyped-def]
    from workingset.model.state import load_state

    return load_state(json.dumps(state).encode())


def test_an_openhands_event_file_number_of_hostile_length_is_refused(tmp_path: Path):
    conv = tmp_path / "conv"
    shutil.copytree(DATA / "openhands-v1-astropy-14309.excerpt", conv)
    # A name holds at most 255 bytes, so no file name reaches int()'s limit: bounded all the same.
    (conv / "events" / f"event-{'1' * 200}-x.json").write_text("{}")
    with pytest.raises(WorkingsetError, match="event file number of more than") as err:
        import_trajectory("openhands", conv)
    assert err.value.code == "invalid_file"


def test_a_model_name_of_hostile_digits_is_no_breakpoint_family():
    assert breakpoint_family("gpt-5.6") and breakpoint_family("gpt-6")
    for name in (f"gpt-{BIG}", f"gpt-5.{BIG}", "gpt-٥.٦", "gpt-²"):
        breakpoint_family(name)  # no exception; the family is read from ASCII digits only
    assert not breakpoint_family("gpt-٥.٦")


def test_a_decision_row_reference_of_other_digits_names_no_row():
    from tests.helpers.factory import sample_state

    enc = get_encoder("v14")
    state = sample_state()
    assert enc.entry_text(state, "H1/1") is not None  # type: ignore[attr-defined]
    for k in ("٢", "²", BIG):
        assert enc.entry_text(state, f"H1/{k}") is None  # type: ignore[attr-defined]
