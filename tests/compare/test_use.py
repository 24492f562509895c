"""`compare --use`: what each step used, whether each strategy showed it, and the bill with recalls (issue 31).

Hand-built runs whose answer is known: a name shown, masked, archived, paged; the
transcript in view on every run by construction; and, for the recall versions, a property
test that the simulated recall makes every needed identifier visible in the context after it.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.helpers.common import invoke
from workingset.compare.engine import baseline_renderers, version_renderer
from workingset.compare.recalls import compare_use, plan_recalls, recall_state, rerun_state
from workingset.compare.use import step_needs
from workingset.encoders import render
from workingset.importers._build import build_states
from workingset.importers._trajectory import Action, Thought, Trajectory
from workingset.model.harvest import harvest
from workingset.model.state import TextPayload
from workingset.model.used import harvest_used
from workingset.runs.layout import make_stored_context, write_run

SMALL = "v14:budget=24000"  # a page of 960 characters, a journal of a few outputs


def run_of(steps: list[tuple[str, str, str]], statement: str = "Fix the bug.") -> list:
    """A trajectory of (thought, command, output) steps, imported, as stored contexts."""
    items: list = []
    for thought, command, output in steps:
        if thought:
            items.append(Thought(text=thought))
        items.append(Action(query=command, origin="bash", output=output))
    traj = Trajectory(source="test", name="t", title="A test run", statement=statement, opened_at=None,
                      agent="mini-swe-agent", model=None, items=tuple(items))  # fmt: skip
    states = build_states(traj, "test-run")
    return [
        make_stored_context(f"test-run-r{k:04d}", "v14", "H1", s) for k, s in enumerate(states, 1)
    ]


def renderers(*names: str) -> dict:
    base = baseline_renderers()
    return {n: base[n] if n in base else version_renderer(n) for n in names}


def filler(k: int, size: int = 300) -> str:
    return (f"row {k}: nothing to see here " * (size // 20 + 2))[:size]


# -- the rule ------------------------------------------------------------------------------


def test_harvest_used_takes_paths_names_lines_and_hashes():
    text = ('cat src/app/models.py:123; python -c "import django.db.models"; grep cache_size x; '
            'File "x.py", line 42 raised ValueError in getUser at abc123f; see it and run ./run.sh')  # fmt: skip
    assert harvest_used(text) == ["src/app/models.py:123", "django.db.models", "cache_size", "x.py", "line 42",
                                  "ValueError", "getUser", "abc123f", "./run.sh"]  # fmt: skip


def test_harvest_used_leaves_out_plain_words_numbers_and_short_names():
    assert harvest_used("look at the file and retry 12345 times, e.g. a_b or i.e") == []


def test_harvest_is_unchanged_by_the_used_rule():
    # v14's frozen ids= rows: harvest keeps its own rule and its cap.
    text = "see src/app/models.py and cache_size, getUser"
    assert harvest(TextPayload(language=None, text=text)) == ["src/app/models.py"]


# -- hand-built runs -----------------------------------------------------------------------


def test_a_name_shown_is_in_view_everywhere():
    contexts = run_of([("", "ls src", "src/pkg/alpha_module.py\n"),
                       ("Open it.", "cat src/pkg/alpha_module.py", "x = 1\n")])  # fmt: skip
    needs, _ = step_needs(contexts)
    assert [n.value for n in needs[0]] == ["src/pkg/alpha_module.py"] and needs[1] == ()
    uc = compare_use(contexts, renderers("v14", "full-transcript", "masking-10"))
    for name in uc.strategies:
        assert uc.use(name).to_json() == {"used": 1, "in_view": 1, "recall_away": 0, "gone": 0, "steps": 1,
                                         "steps_needing_recall": 0, "steps_with_gone": 0}  # fmt: skip


def test_a_name_in_the_task_is_not_counted_as_used():
    contexts = run_of([("", "ls src", "src/pkg/alpha_module.py\n"), ("", "cat src/pkg/alpha_module.py", "x\n")],
                      statement="The bug is in src/pkg/alpha_module.py.")  # fmt: skip
    needs, _ = step_needs(contexts)
    assert needs[0] == ()


def test_a_masked_name_is_gone_for_masking_and_in_view_for_the_transcript_and_v14():
    steps = [("", "grep -rn core .", "./lib/core.py:7: beta_name_xyz = 3\n")]
    steps += [("", f"echo step {k}", filler(k)) for k in range(2, 14)]
    steps += [
        ("Back to it.", "sed -n 1,20p ./lib/core.py | grep beta_name_xyz", "beta_name_xyz = 3\n")
    ]
    contexts = run_of(steps)
    uc = compare_use(
        contexts, renderers("v14", "full-transcript", "masking-10"), cache=["anthropic"]
    )
    # The last step used two names of the first output (the path and the name), 13 outputs back.
    assert uc.steps["masking-10"][-2].use().gone == 2
    assert uc.use("masking-10").steps_with_gone == 1
    assert uc.use("full-transcript").share_in_view() == 1.0
    assert uc.use("v14").share_in_view() == 1.0
    assert uc.bills["anthropic"]["masking-10"].rerun_turns == 1
    assert uc.bills["anthropic"]["full-transcript"].rerun_turns == 0


def test_a_name_past_the_first_page_is_one_recall_of_that_page_away():
    long_output = filler(1, 3000) + "\nthe culprit: gamma_handler_fn\n" + filler(2, 600)
    contexts = run_of(
        [("", "cat big.log", long_output), ("Found it.", "grep -rn gamma_handler_fn src", "none\n")]
    )
    uc = compare_use(contexts, renderers(SMALL, "full-transcript"), cache=["anthropic"])
    step = uc.steps[SMALL][0]
    assert (
        [n.value for n in step.recall_away] == ["gamma_handler_fn"]
        and not step.in_view
        and not step.gone
    )
    assert uc.bills["anthropic"][SMALL].recall_turns == 1
    (turn,) = plan_recalls(
        step.recall_away, contexts[0].state, ("investigation_project_" + SMALL, True, True)
    )
    assert (
        turn[0] == ["E000001"] and turn[1][0].startswith("E000001:") and turn[1][0] != "E000001:1"
    )
    assert uc.use("full-transcript").share_in_view() == 1.0


def test_an_archived_name_is_one_recall_away_for_v14_and_gone_for_v10():
    steps = [("", "grep -rn delta_value_x .", "./a/b.py:1: delta_value_x = 9\n" + filler(0, 800))]
    steps += [("", f"cat file{k}.txt", filler(k, 900)) for k in range(2, 30)]
    steps += [("Now that one.", "python -c 'print(delta_value_x)'", "9\n")]
    contexts = run_of(steps)
    last = contexts[-2]
    assert "delta_value_x" not in render(last.state, "H1", "investigation_project_" + SMALL).text
    uc = compare_use(
        contexts, renderers(SMALL, "v10", "full-transcript"), cache=["anthropic", "openai-5.6"]
    )
    assert uc.steps[SMALL][-2].use().recall_away == 1
    assert uc.use("full-transcript").share_in_view() == 1.0
    for model in ("anthropic", "openai-5.6"):
        bill = uc.bills[model][SMALL]
        assert bill.recall_turns == 1 and bill.rerun_turns == 0 and bill.cost > bill.input.cost > 0


def test_a_rerun_shows_the_output_again():
    contexts = run_of([("", "cat notes.txt", "epsilon_key_z = 1\n"), ("", "echo hi", "hi\n")])
    state = contexts[-1].state
    again = rerun_state(state, "H1", "E000001")
    assert [e.id for e in again.evidence][-1] == "E000003"
    assert again.evidence[-1].payload == state.evidence[0].payload
    assert len(state.evidence) == 2  # the recorded state is untouched
    text = baseline_renderers()["masking-10"](again, "H1").text
    assert text.count("epsilon_key_z = 1") == 2


def test_the_bill_counts_the_output_tokens_of_every_answer():
    contexts = run_of([("", "ls src", "src/pkg/alpha_module.py\n"),
                       ("Open it.", "cat src/pkg/alpha_module.py", "x\n")])  # fmt: skip
    uc = compare_use(contexts, renderers("v14", "full-transcript"), cache=["anthropic"])
    bill = uc.bills["anthropic"]["v14"]
    assert bill.output_tokens > 0 and bill.output_price == 5.0
    assert bill.cost == pytest.approx(bill.input.cost + 5.0 * bill.output_tokens)


def test_compare_use_json_has_a_use_object_per_strategy(tmp_path):
    contexts = run_of([("", "ls src", "src/pkg/alpha_module.py\n"),
                       ("Open it.", "cat src/pkg/alpha_module.py", "x\n")])  # fmt: skip
    write_run(tmp_path / "run", contexts)
    out = invoke("compare", str(tmp_path / "run"), "--baselines", "--cache", "anthropic", "--use", "--json",
                 "--summary")  # fmt: skip
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert set(data["use"]) == set(data["strategies"])
    for counts in data["use"].values():
        assert set(counts) == {"used", "in_view", "recall_away", "gone", "steps", "steps_needing_recall",
                               "steps_with_gone"}  # fmt: skip
    assert data["with_recalls"]["anthropic"]["full-transcript"]["effective_cost"] > 0
    text = invoke(
        "compare",
        str(tmp_path / "run"),
        "--baselines",
        "--cache",
        "anthropic",
        "--use",
        "--summary",
    )
    assert (
        "verdict (with recalls): " in text.stdout
        and "billed under the anthropic cache model, recall and re-run turns" in text.stdout
        and "as recorded:" in text.stdout
    )


# -- the property ------------------------------------------------------------------------

_NAMES = st.from_regex(r"[a-z]{3,6}_[a-z]{3,6}", fullmatch=True)


@settings(max_examples=25, deadline=None)
@given(
    sizes=st.lists(st.integers(min_value=50, max_value=4000), min_size=3, max_size=14),
    picks=st.lists(st.tuples(st.integers(0, 13), st.integers(0, 13)), min_size=1, max_size=6),
    names=st.lists(_NAMES, min_size=14, max_size=14, unique=True),
    version=st.sampled_from([SMALL, "v11:budget=24000", "v13:budget=24000"]),
)
def test_a_simulated_recall_makes_every_needed_identifier_visible(sizes, picks, names, version):
    """Each output holds one name at a varied place; later steps use earlier names; every recall_away need shows after its recall."""
    steps = []
    for k, size in enumerate(sizes):
        body = filler(k, size)
        at = (k * 7919) % (len(body) + 1)
        steps.append(("", f"run {k}", body[:at] + f" {names[k]} " + body[at:]))
    for used, by in picks:
        if used < by < len(steps):
            steps[by] = (f"Use {names[used]}.", steps[by][1], steps[by][2])
    contexts = run_of(steps)
    uc = compare_use(contexts, renderers(version, "full-transcript"))
    assert uc.use("full-transcript").gone == 0 and uc.use("full-transcript").recall_away == 0
    name = "investigation_project_" + version
    paged = version.startswith("v14")
    for ctx, step in zip(contexts, uc.steps[version]):
        for refs, pages, group in plan_recalls(step.recall_away, ctx.state, (name, True, paged)):
            text = render(recall_state(ctx.state, "H1", refs, pages, paged), "H1", name).text
            assert all(need.value in text for need in group)


def test_many_runs_shards_and_merge_carry_use(tmp_path):
    first = run_of(
        [
            ("", "ls src", "src/pkg/alpha_module.py\n"),
            ("Open it.", "cat src/pkg/alpha_module.py", "x\n"),
        ]
    )
    steps = [("", "grep -rn core .", "./lib/core.py:7: beta_name_xyz = 3\n")]
    steps += [("", f"echo step {k}", filler(k)) for k in range(2, 14)]
    steps += [("Back to it.", "grep beta_name_xyz ./lib/core.py", "beta_name_xyz = 3\n")]
    second = run_of(steps)
    for name, contexts in (("a", first), ("b", second)):
        write_run(tmp_path / "runs" / name, contexts)
    args = ["--baselines", "--cache", "anthropic", "--use", "--json", "--summary"]
    whole = json.loads(invoke("compare", str(tmp_path / "runs"), *args).stdout)
    agg = whole["aggregate"]
    assert agg["use"]["full-transcript"]["share_in_view"] == 1.0
    masking = agg["use"]["masking-10"]
    assert masking["gone"] == 2 and masking["steps_with_gone"] == 1
    assert masking["worst_run"].endswith("b") and masking["worst_share_in_view"] == 0.0
    assert all("use" in row and "with_recalls" in row for row in agg["rows"])
    assert set(agg["with_recalls"]["anthropic"]) == set(agg["options"]["strategies"])
    shards = []
    for k in (1, 2):
        out = invoke("compare", str(tmp_path / "runs"), *args, "--shard", f"{k}/2")
        shards.append(tmp_path / f"shard{k}.json")
        shards[-1].write_text(out.stdout)
    merged = json.loads(invoke("compare", "--merge", *map(str, shards), "--json").stdout)[
        "aggregate"
    ]
    assert merged["use"] == agg["use"] and merged["with_recalls"] == agg["with_recalls"]
    edited = json.loads(shards[0].read_text())  # a shard whose use figures were edited is refused
    first_strategy = next(iter(edited["aggregate"]["use"]))
    edited["aggregate"]["use"][first_strategy]["gone"] += 1
    shards[0].write_text(json.dumps(edited))
    refused = invoke("compare", "--merge", *map(str, shards), "--json")
    assert refused.exit_code == 2 and "invalid_file" in refused.stdout + refused.stderr
    text = invoke(
        "compare", str(tmp_path / "runs"), "--baselines", "--cache", "anthropic", "--use"
    ).stdout
    assert "Bill with recalls under anthropic" in text and "worst run" in text


def test_the_recorded_requests_bill_as_compare_bills_them():
    from workingset.compare.engine import compare_contexts

    steps = [("", "grep -rn core .", "./lib/core.py:7: beta_name_xyz = 3\n")]
    steps += [("", f"echo step {k}", filler(k, 900)) for k in range(2, 24)]
    steps += [("Back to it.", "grep beta_name_xyz ./lib/core.py", "beta_name_xyz = 3\n")]
    contexts = run_of(steps)
    names = renderers(SMALL, "v10", "full-transcript", "masking-10")
    cmp = compare_contexts(contexts, names, cache=["anthropic", "openai-5.6"])
    uc = compare_use(contexts, names, cache=["anthropic", "openai-5.6"])
    for model in ("anthropic", "openai-5.6"):
        for name in names:
            assert uc.bills[model][name].as_recorded == cmp.cache_total(model, name)


def test_a_name_in_a_repeated_output_is_recalled_from_the_entry_that_holds_the_payload():
    # v14 writes a repeated payload as `same_as` the first item with it: recalling the repeat shows no payload.
    repeated = "./a/b.py:1: zeta_value_q = 9\n" + filler(0, 800)
    steps = [("", "grep -rn zeta .", repeated)]
    steps += [("", f"cat file{k}.txt", filler(k, 900)) for k in range(2, 30)]
    steps += [("", "grep -rn zeta .", repeated), ("", "echo hi", "hi\n")]
    steps += [("Now that one.", "python -c 'print(zeta_value_q)'", "9\n")]
    contexts = run_of(steps)
    step = compare_use(contexts, renderers(SMALL)).steps[SMALL][-2]
    assert [n.value for n in step.recall_away] == ["zeta_value_q"] and not step.gone
    (turn,) = plan_recalls(
        step.recall_away, contexts[-2].state, ("investigation_project_" + SMALL, True, True)
    )
    assert turn[0] == ["E000001"]
