"""The viewer page in headless Chromium (Debian's /usr/bin/chromium, driven by selenium)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from jeeves import Router
from jeeves.server import create_app
from tests.server.conftest import Gated, gated_model, live_server
from tests.server.nested import nested, nested_router

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
    assert critic.find_element(By.CSS_SELECTOR, ".score").text == "score 0.95 ✓"
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
    gate = threading.Event()
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
        gate.set()
        wait.until(lambda d: "completed" in (root.get_attribute("class") or ""))
        second = driver.find_element(By.CSS_SELECTOR, f'li[data-session-id="{session_id}__second_0"]')
        assert "four five six" in second.text
        assert not root.find_element(By.CSS_SELECTOR, ".spinner").is_displayed()
