"""Make docs/report.png, the README's picture of `workingset report` on bug17.

Run: `.venv/bin/python docs/screenshot.py` (needs headless Chromium, see tests/helpers/browser.py).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from browser import chromium  # noqa: E402

TURN, STRATEGY = 11, "v13"


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        page = Path(tmp) / "report.html"
        subprocess.run([str(ROOT / ".venv" / "bin" / "workingset"), "report", "fixtures/bug17", "--out", str(page)],
                       cwd=ROOT, check=True)  # fmt: skip
        with chromium(window=(1400, 3000), scale=0.5) as driver:
            driver.get(page.as_uri())
            while driver.execute_script("return document.body.dataset.ready") != "true":
                pass
            driver.execute_script(f"""
                const t = document.getElementById('turn'); t.value = '{TURN}'; t.dispatchEvent(new Event('change'));
                const s = document.getElementById('strategy'); s.value = '{STRATEGY}'; s.dispatchEvent(new Event('change'));
                document.getElementById('context').scrollTop = 1500;""")
            driver.save_screenshot(str(ROOT / "docs" / "report.png"))


if __name__ == "__main__":
    main()
