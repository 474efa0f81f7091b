"""The viewer's approval gates and watchdog rail in headless Chromium, against LIVE runs.

`jeeves serve --offline --journal` serves two ready specs: `refund_desk.toml`, whose refund
waits at an approval gate (the server is the approver: the page decides), and
`ops_goal.toml`, whose watchdog fires along the run. The page starts each run itself, so
everything it shows came from the real run's event stream, not from prepared events. Every
wait is for a DOM condition; screenshots go to test-artifacts/viewer/.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.conftest import jeeves_serve
from tests.server.test_explorer_browser import ROOT, artifacts, console_errors, rect
from tests.server.test_explorer_browser import chrome as chrome  # the fixture, used by name

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`jeeves serve refund_desk.toml ops_goal.toml --offline --journal runs.jsonl` on a free port."""
    where = tmp_path_factory.mktemp("served")
    specs = [str(ROOT / "architectures" / name) for name in ("refund_desk.toml", "ops_goal.toml")]
    with jeeves_serve(*specs, "--offline", "--journal", "runs.jsonl", cwd=where) as base:
        yield base


def start(driver: Any, url: str, architecture: str, session_id: str) -> None:
    """Open the page and start `architecture` from its form, with its demo task."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select, WebDriverWait

    driver.get(f"{url}/")
    wait = WebDriverWait(driver, 60)
    wait.until(
        lambda d: architecture in [o.text for o in Select(d.find_element(By.ID, "architecture")).options]
    )
    Select(driver.find_element(By.ID, "architecture")).select_by_visible_text(architecture)
    driver.find_element(By.ID, "task").send_keys("Do the demo's task.")
    driver.find_element(By.ID, "session-id").send_keys(session_id)
    driver.find_element(By.ID, "start-button").click()


def status(driver: Any) -> str:
    from selenium.webdriver.common.by import By

    return str(driver.find_element(By.ID, "run-status").get_attribute("textContent"))


def test_a_live_run_waits_at_its_gate_until_the_page_approves_it_then_finishes(
    chrome: Any, served: str
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    driver = chrome
    wait = WebDriverWait(driver, 60)
    start(driver, served, "refund_desk", "gate-1")

    # The run reaches the refund's gate and waits there: the page lists it with its arguments.
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#gates .gate button.approve"))
    (gate,) = driver.find_elements(By.CSS_SELECTOR, "#gates .gate")
    gate_id = gate.get_attribute("data-gate-id")
    assert gate_id.startswith("gate-1") and "#" in gate_id
    assert "issue_refund" in gate.text and "destructive" in gate.text
    arguments = gate.text
    assert '"881"' in arguments and "42" in arguments
    assert status(driver) == "running"
    with httpx.Client(base_url=served, timeout=30) as client:  # the server holds the same gate
        (pending,) = client.get("/runs/gate-1/gates").json()
    assert pending["gate_id"] == gate_id and pending["arguments"] == {"order_id": "881", "amount": 42.0}
    driver.save_screenshot(str(artifacts() / "live-gate-pending-1280x900.png"))

    gate.find_element(By.CSS_SELECTOR, "button.approve").click()

    # The decision reaches the run: the tool runs once, and the run completes.
    wait.until(lambda d: status(d) == "completed")
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#gates .gate-decision"))
    decision = driver.find_element(By.CSS_SELECTOR, "#gates .gate-decision")
    assert decision.text == "approved by you"
    assert "approve" in decision.get_attribute("class")
    assert not driver.find_elements(By.CSS_SELECTOR, "#gates button.approve")  # nothing left to decide
    tree = driver.find_element(By.ID, "tree").text
    assert "← refunded 42.00 on order 881" in tree  # the tool's result, in the session's transcript
    driver.save_screenshot(str(artifacts() / "live-gate-approved-1280x900.png"))
    with httpx.Client(base_url=served, timeout=30) as client:
        run = client.get("/runs/gate-1").json()
        events = client.get("/runs/gate-1/events").text
    assert run["status"] == "completed" and "pending_gates" not in run
    decided = [
        json.loads(line[len("data: ") :]) for line in events.splitlines() if '"approval.decided"' in line
    ]
    assert [(e["gate_id"], e["decision"], e["by"]) for e in decided] == [(gate_id, "approve", "viewer")]
    assert events.count('"name":"issue_refund"') >= 1 and events.count('"type":"tool.completed"') == 2
    # The stream's `approval.decided` may reach the page before or after the POST's answer; in
    # either order the page keeps the decision it made on show (here: the event once more, late).
    driver.execute_script("apply(arguments[0]); scheduleRender();", decided[0])
    wait.until(lambda d: not d.execute_script("return view.pending"))
    assert [e.text for e in driver.find_elements(By.CSS_SELECTOR, "#gates .gate-decision")] == [
        "approved by you"
    ]
    assert console_errors(driver) == []


def test_the_watchdog_rail_marks_a_live_goal_runs_verdicts_in_their_colours(chrome: Any, served: str) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    driver = chrome
    wait = WebDriverWait(driver, 60)
    start(driver, served, "ops_goal", "goal-1")
    wait.until(lambda d: status(d) not in ("", "running"))
    assert status(driver) == "completed"
    with httpx.Client(base_url=served, timeout=30) as client:
        events = client.get("/runs/goal-1/events").text
    fired = [
        json.loads(line[len("data: ") :]) for line in events.splitlines() if '"watchdog.verdict"' in line
    ]
    assert {e["verdict"] for e in fired} >= {"STUCK", "PROGRESSING"}  # the offline script's story

    wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#rail .wd-mark")) == len(fired))
    marks = driver.find_elements(By.CSS_SELECTOR, "#rail .wd-mark")
    assert [m.get_attribute("data-verdict") for m in marks] == [e["verdict"] for e in fired]
    colour = {m.get_attribute("data-verdict"): m.value_of_css_property("background-color") for m in marks}
    assert colour["STUCK"] != colour["PROGRESSING"]
    lefts = [rect(m)["left"] for m in marks]
    assert lefts == sorted(lefts)  # along the run, in firing order
    track = rect(driver.find_element(By.CSS_SELECTOR, "#rail .rail-track"))
    assert all(track["left"] <= x <= track["right"] for x in lefts)

    for mark, event in zip(marks, fired, strict=True):  # hovering a mark shows its verdict and reason
        ActionChains(driver).move_to_element(mark).perform()
        wait.until(lambda d, e=event: e["reason"] in d.find_element(By.ID, "tip").text)
        tip = driver.find_element(By.ID, "tip").text
        assert (
            event["verdict"] in tip
            and ("loop signal" if event["source"] == "signal" else "model review") in tip
        )
    driver.save_screenshot(str(artifacts() / "live-watchdog-rail-1280x900.png"))
    assert console_errors(driver) == []
