"""The trimmed real trajectories in `tests/data/` (sources in its README), with their formats and agent actions."""

from __future__ import annotations

from tests.helpers.common import DATA

SWE_0X = DATA / "swe-agent-0.x-pydicom-1458.excerpt.traj"
SWE_1X = DATA / "swe-agent-function_calling_simple.excerpt.traj"
MINI_1X = DATA / "mini-swe-agent-1.15-pylint-6386.excerpt.traj.json"
MINI_2X = DATA / "mini-swe-agent-2.2-sqlfluff-1625.excerpt.traj.json"
MINI_23 = DATA / "mini-swe-agent-2.3-astropy-12907.excerpt.traj.json"
OPENHANDS = DATA / "openhands-v1-astropy-14309.excerpt"
EXCERPTS = {  # path -> (format, agent actions)
    SWE_0X: ("swe-agent", 5),
    SWE_1X: ("swe-agent", 3),
    MINI_1X: ("mini-swe-agent", 4),
    MINI_2X: ("mini-swe-agent", 4),
    MINI_23: ("mini-swe-agent", 3),
    OPENHANDS: ("openhands", 5),
}
