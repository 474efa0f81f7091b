"""The viewer page in headless Chromium (Debian's /usr/bin/chromium, driven by selenium)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from jeeves import ActorCritic, Agent, LLMCritic, Router, ScriptedModel
from jeeves.critics import FunctionCritic, Verdict
from jeeves.messages import Usage, format_usd
from jeeves.server import create_app
from jeeves.testing import Reply
from tests.server.conftest import Gated, gated_model, live_server
from tests.server.nested import nested, nested_router
from tests.waiting import ThreadGate

pytestmark = pytest.mark.browser

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")


@pytest.fixture
def browser(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    if not (CHROMIUM.exists() and CHROMEDRIVER.exists()):
        pytest.skip("needs Debian's chromium and chromium-driver (.ci/apt installs them)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    monkeypatch.setenv("SE_AVOID_STATS", "true")
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--window-size=1280,1500",
        f"--user-data-dir={tmp_path / 'chromium-profile'}",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=Service(executable_path=str(CHROMEDRIVER)))
    try:
        yield driver
    finally:
        driver.quit()


def test_the_viewer_starts_a_nested_run_and_shows_workers_and_critic_scores(
    browser: object, tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.remote.webdriver import WebDriver
    from selenium.webdriver.support.ui import Select, WebDriverWait

    driver: WebDriver = browser  # type: ignore[assignment]
    app = create_app({"nested": nested}, router=nested_router, token="viewer-token")
    with live_server(app) as server:
        driver.get(f"{server.url}/#token=viewer-token")
        wait = WebDriverWait(driver, 30)
        wait.until(lambda d: Select(d.find_element(By.ID, "architecture")).options)
        driver.find_element(By.ID, "task").send_keys("Write and document add.")
        driver.find_element(By.ID, "session-id").send_keys("browser-run")
        driver.find_element(By.ID, "start-button").click()
        wait.until(lambda d: d.find_element(By.ID, "run-status").get_attribute("textContent") == "completed")
        wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, ".score")) >= 3)
        shot = tmp_path / "viewer.png"
        driver.save_screenshot(str(shot))
        nodes = {
            li.get_attribute("data-session-id"): li for li in driver.find_elements(By.CSS_SELECTOR, "li.node")
        }
        summary = app.state.runs.get("browser-run").summary()

    assert shot.stat().st_size > 10_000
    assert summary["status"] == "completed"
    coder, writer = nodes["browser-run__coder_0"], nodes["browser-run__writer_0"]
    assert coder.find_element(By.CSS_SELECTOR, ".role").text == "coder"
    assert writer.find_element(By.CSS_SELECTOR, ".role").text == "writer"
    critic = nodes["browser-run__coder_0__critic_1"]
    assert critic.find_element(By.CSS_SELECTOR, ".score").text == "verdict 0.95 ✓"
    rounds = [r.text for r in coder.find_elements(By.CSS_SELECTOR, ":scope > .card .round")]
    assert rounds == ["r0 0.30 ✗", "r1 0.95 ✓"]
    assert "def add(a, b): return a + b" in nodes["browser-run__coder_0__actor_1"].text
    assert nodes["browser-run"].find_element(By.CSS_SELECTOR, ".status").text.lower() == "completed"
    assert "tok" in coder.find_element(By.CSS_SELECTOR, ".tokens").text


def test_the_viewer_updates_live_while_a_run_is_going(browser: object, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.remote.webdriver import WebDriver
    from selenium.webdriver.support.ui import WebDriverWait

    driver: WebDriver = browser  # type: ignore[assignment]
    gate = ThreadGate()
    app = create_app({"gated": Gated(gate)}, router=lambda: Router({"default": gated_model()}))
    with live_server(app) as server:
        session_id = httpx.post(f"{server.url}/runs", json={"architecture": "gated", "task": "count"}).json()[
            "session_id"
        ]
        driver.get(f"{server.url}/#run={session_id}")
        wait = WebDriverWait(driver, 30)
        first = f'li[data-session-id="{session_id}__first_0"].completed'
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, first))
        root = driver.find_element(By.CSS_SELECTOR, f'li[data-session-id="{session_id}"]')
        assert "running" in (root.get_attribute("class") or "")
        assert root.find_element(By.CSS_SELECTOR, ".spinner").is_displayed()
        driver.save_screenshot(str(tmp_path / "viewer-running.png"))
        gate.open()
        wait.until(lambda d: "completed" in (root.get_attribute("class") or ""))
        second = driver.find_element(By.CSS_SELECTOR, f'li[data-session-id="{session_id}__second_0"]')
        assert "four five six" in second.text
        assert not root.find_element(By.CSS_SELECTOR, ".spinner").is_displayed()


def failing_tests_critic(task: str, output: str) -> Verdict:
    return Verdict(score=0.2, issues=["1 of 5 tests pass"], summary="add subtracts")


def reviewed() -> ActorCritic:
    """An actor checked by a code critic and an LLM reviewer; the verdict is their minimum."""
    return ActorCritic(
        Agent("Write add."), [FunctionCritic(failing_tests_critic, name="tests"), LLMCritic()], max_rounds=0
    )


def priced(cost: float) -> Usage:
    return Usage(input_tokens=20, output_tokens=10, model_calls=1, cost_usd=cost)


def reviewed_router() -> Router:
    return Router(
        {
            "default": ScriptedModel(
                {
                    "actor": [Reply(text="\n\ndef add(a, b): return a - b", usage=priced(0.000012))],
                    "critic": [
                        Reply(text='{"score": 0.4, "issues": ["uses minus"]}', usage=priced(0.000019))
                    ],
                }
            )
        }
    )


def test_the_viewer_shows_the_task_the_verdict_with_its_issues_and_sub_cent_costs(browser: object) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.remote.webdriver import WebDriver
    from selenium.webdriver.support.ui import WebDriverWait

    driver: WebDriver = browser  # type: ignore[assignment]
    app = create_app({"reviewed": reviewed}, router=reviewed_router)
    task = "Write add(a, b)\nthat returns the sum."
    with live_server(app) as server:
        sid = httpx.post(f"{server.url}/runs", json={"architecture": "reviewed", "task": task}).json()[
            "session_id"
        ]
        driver.get(f"{server.url}/#run={sid}")
        wait = WebDriverWait(driver, 30)
        wait.until(lambda d: d.find_element(By.ID, "run-status").get_attribute("textContent") == "completed")
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, ".issues li"))
        run_task = driver.find_element(By.ID, "run-task").get_attribute("textContent")
        run_usage = driver.find_element(By.ID, "run-usage").text
        loop = driver.find_element(By.CSS_SELECTOR, f'li[data-session-id="{sid}"] > .card')
        critic = driver.find_element(By.CSS_SELECTOR, f'li[data-session-id="{sid}__critic_0"] > .card')
        actor = driver.find_element(By.CSS_SELECTOR, f'li[data-session-id="{sid}__actor_0"] > .card')
        texts = [
            pre.get_attribute("textContent") or ""
            for pre in driver.find_elements(By.CSS_SELECTOR, "pre.text")
        ]
        verdict = {
            "loop": loop.find_element(By.CSS_SELECTOR, ".score").text,
            "critic": critic.find_element(By.CSS_SELECTOR, ".score").text,
            "round": loop.find_element(By.CSS_SELECTOR, ".round").text,
        }
        issues = [li.text for li in critic.find_elements(By.CSS_SELECTOR, ".issues li")]
        summary = critic.find_element(By.CSS_SELECTOR, ".verdict .summary").text
        label = critic.find_element(By.CSS_SELECTOR, ".text-label").text
        reply = critic.find_element(By.CSS_SELECTOR, "pre.text").get_attribute("textContent")
        actor_cost = actor.find_element(By.CSS_SELECTOR, ".cost").text
        costs = [0.000031, 0.0104, 1.25, 0.0, 0.0099999, 1.2e-10, 0.000123456]
        in_js = driver.execute_script("return arguments[0].map(formatUsd);", costs)

    assert run_task == task
    assert verdict == {"loop": "verdict 0.20 ✗", "critic": "verdict 0.20 ✗", "round": "r0 0.20 ✗"}
    assert any("1 of 5 tests pass" in i for i in issues) and any("uses minus" in i for i in issues)
    assert "add subtracts" in summary
    assert label.lower() == "raw reply" and reply == '{"score": 0.4, "issues": ["uses minus"]}'
    assert "$0.000031" in run_usage
    assert actor_cost == "$0.000012"
    assert in_js == [format_usd(c) for c in costs]
    assert texts == ["", "def add(a, b): return a - b", reply]  # the root's box is empty, so hidden
