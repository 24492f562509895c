"""A PostgreSQL handle outlives a server restart: the next call reconnects, and nothing is lost or doubled (issue 30, item 10)."""

from __future__ import annotations

import pytest

from tests.helpers.session_helpers import ANALYSIS, decision, make_state, query
from workingset import Investigation
from workingset.errors import WorkingsetError

pytestmark = pytest.mark.slow  # PostgreSQL, a server of its own


@pytest.fixture
def own_server():
    from tests.helpers import pg_server as pg

    if pg.missing() is not None:
        pytest.skip(
            pg.missing()
        )  # conftest's CI rule: the pg_server name makes CI=true fail instead
    server = pg.Server()
    yield server
    server.stop()


def test_an_open_handle_reconnects_after_a_server_restart(own_server, pg_server):
    url = own_server.database()
    inv = Investigation.create(url, make_state())
    req = inv.next_request()
    inv.submit(req.request_id, decision(query("select 1")))
    own_server.restart()  # every connection is dropped; the handle's too

    assert inv.show().status == "active"  # a read reconnects
    (action,) = inv.pending_actions()
    inv.record(action.action, payload={"kind": "text", "language": None, "text": "one row"})
    req2 = inv.next_request()
    own_server.restart()
    applied = inv.submit(req2.request_id, decision(query("select 2")))  # a write reconnects too
    assert applied.action is not None
    with pytest.raises(WorkingsetError) as again:  # applied once: the same answer again is stale
        inv.submit(req2.request_id, decision(query("select 2")))
    assert again.value.code == "stale_request"
    inv.close()

    with Investigation.open(url, ANALYSIS, read_only=True) as fresh:
        state = fresh.show().state
    queries = [h.text for hyp in state.hypotheses for h in hyp.history if h.kind == "query"]
    assert len(queries) == 2 and "select 1" in queries[0] and "select 2" in queries[1]


def test_a_server_that_stays_down_is_store_unavailable_and_the_handle_recovers_later(
    own_server, pg_server
):
    url = own_server.database()
    inv = Investigation.create(url, make_state())
    own_server.halt()
    for _ in range(2):  # every call while it is down says so, with a code a worker can act on
        with pytest.raises(WorkingsetError) as down:
            inv.show()
        assert down.value.code == "store_unavailable"
    own_server.start()
    assert inv.show().status == "active"
    inv.close()
