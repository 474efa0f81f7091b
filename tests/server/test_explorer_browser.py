"""The run explorer in headless Chromium: against `jeeves serve --offline --journal`, and a fake run.

One page load per test checks several things (the machine is small): the timeline, a
node's detail, critic rounds with their diff, costs, time travel, both window widths, and
the browser's console. Screenshots go to test-artifacts/viewer/ (or $JEEVES_TEST_ARTIFACTS).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from jeeves.events import SessionCompleted, SessionStarted, WatchdogVerdictEvent, event_to_json
from jeeves.server.gates import DecisionBody
from jeeves.server.viewer import viewer_routes
from tests.conftest import jeeves_serve
from tests.server import explorer_runs
from tests.server.conftest import live_server
from tests.server.test_viewer_browser import CHROMEDRIVER, CHROMIUM

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]


def artifacts() -> Path:
    where = Path(os.environ.get("JEEVES_TEST_ARTIFACTS") or ROOT / "test-artifacts") / "viewer"
    where.mkdir(parents=True, exist_ok=True)
    return where


@pytest.fixture
def chrome(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
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
        "--window-size=1280,900",
        f"--user-data-dir={tmp_path / 'chromium-profile'}",
    ):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(executable_path=str(CHROMEDRIVER)))
    try:
        yield driver
    finally:
        driver.quit()


def console_errors(driver: Any) -> list[str]:
    return [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]


def rect(element: Any) -> dict[str, float]:
    return element.parent.execute_script("return arguments[0].getBoundingClientRect().toJSON();", element)


def overlap(a: dict[str, float], b: dict[str, float]) -> bool:
    return a["left"] < b["right"] and b["left"] < a["right"]


@pytest.fixture
def served(tmp_path: Path) -> Iterator[str]:
    """`jeeves serve --offline --journal runs.jsonl` on a free port (the demo live, one recorded run)."""
    journal = tmp_path / "runs.jsonl"
    anyio.run(explorer_runs.record, journal)
    with jeeves_serve("--offline", "--journal", str(journal), cwd=tmp_path) as base:
        yield base


def test_the_explorer_shows_a_live_demo_and_travels_through_a_recorded_run(chrome: Any, served: str) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import Select, WebDriverWait

    driver = chrome
    wait = WebDriverWait(driver, 60)
    css = driver.find_elements
    driver.get(f"{served}/")
    wait.until(lambda d: Select(d.find_element(By.ID, "architecture")).options)
    wait.until(
        lambda d: d.find_element(By.ID, "recorded").find_elements(By.CSS_SELECTOR, "option[value=rec-1]")
    )
    driver.find_element(By.ID, "task").send_keys("Write is_palindrome.")
    driver.find_element(By.ID, "session-id").send_keys("demo-1")
    driver.find_element(By.ID, "start-button").click()
    wait.until(lambda d: d.find_element(By.ID, "run-status").get_attribute("textContent") == "completed")

    # 1. the timeline: one bar per session, and the two delegated workers overlap in time
    sessions = [li.get_attribute("data-session-id") for li in css(By.CSS_SELECTOR, "li.node")]
    rows = css(By.CSS_SELECTOR, ".tl-row")
    assert [r.get_attribute("data-session-id") for r in rows] == sessions
    assert all(len(r.find_elements(By.CSS_SELECTOR, ".tl-bar")) == 1 for r in rows)

    def bar_of(sid: str) -> Any:  # the timeline is redrawn on each render: look bars up when used
        return driver.find_element(By.CSS_SELECTOR, f'.tl-row[data-session-id="{sid}"] .tl-bar')

    def click_bar(sid: str) -> None:  # on the bar's top edge, above its call segments
        ActionChains(driver).move_to_element_with_offset(bar_of(sid), 0, -5).click().perform()

    assert overlap(rect(bar_of("demo-1__coder_0")), rect(bar_of("demo-1__researcher_0")))
    assert css(By.CSS_SELECTOR, '.tl-row[data-session-id="demo-1__researcher_0"] .tl-seg.tool')
    ActionChains(driver).move_to_element(bar_of("demo-1__coder_0")).perform()
    wait.until(lambda d: d.find_element(By.ID, "tip").is_displayed())
    tip = driver.find_element(By.ID, "tip").text
    assert "coder" in tip and "tok" in tip and "$" in tip and ("ms" in tip or " s" in tip)

    # 2. a node's detail: the request the model saw, its reply, tool calls as rows with JSON
    click_bar("demo-1__researcher_0")
    detail = driver.find_element(By.ID, "detail")
    wait.until(lambda d: detail.find_elements(By.CSS_SELECTOR, "details.call"))
    assert not detail.find_elements(By.CSS_SELECTOR, "details.call .msg-system")  # drawn when opened
    detail.find_element(By.CSS_SELECTOR, "details.call summary").click()
    wait.until(lambda d: detail.find_elements(By.CSS_SELECTOR, "details.call .msg-system"))  # requests loaded
    call = detail.find_element(By.CSS_SELECTOR, "details.call")
    wait.until(lambda d: call.find_element(By.CSS_SELECTOR, ".msg-system").is_displayed())
    assert "python_docs tool" in call.find_element(By.CSS_SELECTOR, ".msg-system").text
    assert "python_docs" in call.find_element(By.CSS_SELECTOR, ".request .offered .tool-name").text
    tools = call.find_elements(By.CSS_SELECTOR, ".tool-row")
    assert [t.find_element(By.CSS_SELECTOR, ".tool-name").text for t in tools] == [
        "python_docs",
        "python_docs",
    ]
    assert '"str.isalnum"' in tools[0].find_element(By.CSS_SELECTOR, ".tool-args").text
    assert "alphanumeric" in tools[0].find_element(By.CSS_SELECTOR, ".tool-result").text
    assert "scripted" in call.find_element(By.TAG_NAME, "summary").text

    # 3. critic rounds: draft next to verdict, score against the threshold, the best round, the diff
    click_bar("demo-1__coder_0")
    wait.until(lambda d: len(detail.find_elements(By.CSS_SELECTOR, ".rv-round")) == 2)
    r0, r1 = detail.find_elements(By.CSS_SELECTOR, ".rv-round")
    assert (
        "score 0.50 / threshold 0.80 ✗ not approved · hard fail"
        in r0.find_element(By.CSS_SELECTOR, ".rv-score").text
    )
    assert "not ignored" in r0.find_element(By.CSS_SELECTOR, ".rv-issues").text
    assert "best" in (r1.get_attribute("class") or "") and "★ best" in r1.find_element(By.TAG_NAME, "h4").text
    added = [d.text for d in r1.find_elements(By.CSS_SELECTOR, ".diff .d-add")]
    removed = [d.text for d in r1.find_elements(By.CSS_SELECTOR, ".diff .d-del")]
    assert "+     letters = [c.casefold() for c in text if c.isalnum()]" in added
    assert "-     return text == text[::-1]" in removed

    # 6. cost per role path (the demo's scripted models have no prices: bars show tokens)
    paths = [r.get_attribute("data-path") for r in css(By.CSS_SELECTOR, "#costs .cost-row")]
    assert set(paths) == {"lead", "lead.coder.actor", "lead.coder.critic", "lead.researcher"}
    kinds = {
        r.get_attribute("data-path"): r.get_attribute("class")
        for r in css(By.CSS_SELECTOR, "#costs .cost-row")
    }
    assert "critic" in kinds["lead.coder.critic"] and "actor" in kinds["lead.coder.actor"]
    assert "actor" in driver.find_element(By.CSS_SELECTOR, "#costs .cost-legend").text
    driver.save_screenshot(str(artifacts() / "explorer-live-1280x900.png"))

    # 7. search, filter, collapse, keyboard
    driver.find_element(By.ID, "search").send_keys("python_docs")
    wait.until(
        lambda d: (
            not bar_of("demo-1__coder_0").is_displayed()
            if False
            else len([li for li in css(By.CSS_SELECTOR, "li.node") if li.is_displayed()]) < len(sessions)
        )
    )
    shown = [
        li.get_attribute("data-session-id") for li in css(By.CSS_SELECTOR, "li.node") if li.is_displayed()
    ]
    assert "demo-1__researcher_0" in shown and "demo-1__coder_0" not in shown
    driver.find_element(By.ID, "search").send_keys(Keys.CONTROL, "a", Keys.BACK_SPACE)
    Select(driver.find_element(By.ID, "filter-role")).select_by_visible_text("critic")
    wait.until(
        lambda d: (
            not d.find_element(By.CSS_SELECTOR, 'li[data-session-id="demo-1__researcher_0"]').is_displayed()
        )
    )
    Select(driver.find_element(By.ID, "filter-role")).select_by_index(0)
    card = driver.find_element(By.CSS_SELECTOR, 'li[data-session-id="demo-1__coder_0"] > .card')
    wait.until(lambda d: card.is_displayed())
    card.find_element(By.CSS_SELECTOR, ".toggle").send_keys(Keys.ENTER)  # keyboard: collapse the coder
    wait.until(
        lambda d: not d.find_elements(By.CSS_SELECTOR, '.tl-row[data-session-id="demo-1__coder_0__actor_0"]')
    )
    assert not driver.find_element(
        By.CSS_SELECTOR, 'li[data-session-id="demo-1__coder_0__actor_0"]'
    ).is_displayed()
    root_card = driver.find_element(By.CSS_SELECTOR, 'li[data-session-id="demo-1"] > .card')
    root_card.send_keys(Keys.ENTER)  # a focused card opens its detail with Enter
    wait.until(
        lambda d: d.execute_script("return document.querySelector('#detail h2')?.textContent") == "lead"
    )

    # 5. a recorded run: every priced call shows its cost; scrubbing shows the tree as it was
    Select(driver.find_element(By.ID, "recorded")).select_by_value("rec-1")
    wait.until(lambda d: d.find_element(By.ID, "run-status").get_attribute("textContent") == "completed")
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, 'li[data-session-id="rec-1__critic_1"]'))
    assert driver.find_element(By.ID, "axis").get_attribute("value") == "seq"  # a replay's clock says nothing
    recorded_nodes = len(css(By.CSS_SELECTOR, "li.node"))
    assert len(css(By.CSS_SELECTOR, ".tl-row .tl-bar")) == recorded_nodes == 5
    click_bar("rec-1")
    wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#detail .rv-round")) == 2)
    assert "+     return a + b" in [d.text for d in css(By.CSS_SELECTOR, "#detail .rv-round .d-add")]
    page = driver.find_element(By.TAG_NAME, "body").text
    free = re.search(r"\$0\.0000(?!\d)", page)
    assert not free, page[max(0, free.start() - 300) : free.end() + 50]  # a priced call never reads as free
    assert "$0.000012" in page and "$0.000065" in page
    actor_cost = driver.find_element(
        By.CSS_SELECTOR, 'li[data-session-id="rec-1__actor_0"] > .card .cost'
    ).text
    assert actor_cost == "$0.000012"
    scrub = driver.find_element(By.ID, "scrub")
    total = int(scrub.get_attribute("max") or 0)
    scrub.send_keys(Keys.HOME)
    wait.until(lambda d: not d.find_elements(By.CSS_SELECTOR, "li.node"))
    for _ in range(6):
        scrub.send_keys(Keys.ARROW_RIGHT)
    wait.until(lambda d: "event 6 of" in d.find_element(By.ID, "scrub-label").text)
    early = [li.get_attribute("data-session-id") for li in css(By.CSS_SELECTOR, "li.node")]
    assert early and "rec-1__critic_1" not in early and len(early) < recorded_nodes
    root = driver.find_element(By.CSS_SELECTOR, 'li[data-session-id="rec-1"]')
    assert "running" in (root.get_attribute("class") or "")
    assert len(css(By.CSS_SELECTOR, ".tl-row")) == len(early)
    scrub.send_keys(Keys.END)
    wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "li.node")) == recorded_nodes)
    assert f"all {total} events" in driver.find_element(By.ID, "scrub-label").text
    driver.save_screenshot(str(artifacts() / "explorer-recorded-1280x900.png"))

    driver.set_window_size(420, 900)
    wait.until(lambda d: d.execute_script("return window.innerWidth") <= 420)
    assert driver.execute_script("return document.documentElement.scrollWidth <= window.innerWidth + 1")
    driver.save_screenshot(str(artifacts() / "explorer-recorded-420x900.png"))
    assert console_errors(driver) == []
    for name in (
        "explorer-live-1280x900.png",
        "explorer-recorded-1280x900.png",
        "explorer-recorded-420x900.png",
    ):
        assert (artifacts() / name).stat().st_size > 10_000


# ---- the watchdog rail and approval gates, against a fake run --------------------------------
def fake_events() -> list[str]:
    """A Goal run with one verdict of each kind, and two gates (one decided), as JSON lines."""
    sid = "fake"
    events: list[dict[str, Any]] = []

    def add(data: dict[str, Any]) -> None:
        data.update(seq=len(events) + 1, ts=1000.0 + len(events))
        events.append(data)

    add(
        json.loads(
            event_to_json(SessionStarted(session_id=sid, role="goal", architecture="goal", task="ship"))
        )
    )
    add(
        json.loads(
            event_to_json(
                SessionStarted(
                    session_id=f"{sid}__agent_0", parent_id=sid, role="agent", architecture="agent"
                )
            )
        )
    )
    reasons = {
        "PROGRESSING": "it found the failing test",
        "STUCK": "the same search three times",
        "MISLED": "it is fixing the wrong module",
        "ACHIEVED": "the tests pass",
    }
    for firing, (verdict, reason) in enumerate(reasons.items(), 1):
        event = WatchdogVerdictEvent(
            session_id=f"{sid}__agent_0",
            firing=firing,
            verdict=verdict,
            reason=reason,
            source="model",  # type: ignore[arg-type]
        )
        add(json.loads(event_to_json(event)))
    gate = {
        "type": "approval.requested",
        "session_id": f"{sid}__agent_0",
        "step": 3,
        "tool": "deploy",
        "tool_call_id": "c1",
        "arguments": {"env": "prod"},
        "mode": "ask",
        "arguments_hash": "h-1",
        "expires_at": None,
    }
    add({**gate, "gate_id": f"{sid}__agent_0#3"})
    add({**gate, "gate_id": f"{sid}__agent_0#2", "step": 2, "tool": "drop_table", "arguments_hash": "h-0"})
    add(
        {
            "type": "approval.decided",
            "session_id": f"{sid}__agent_0",
            "gate_id": f"{sid}__agent_0#2",
            "step": 2,
            "decision": "deny",
            "by": "ops",
            "at": 1.0,
            "note": None,
            "arguments_hash": "h-0",
        }
    )
    add(json.loads(event_to_json(SessionCompleted(session_id=f"{sid}__agent_0", output="done"))))
    return [json.dumps(e) for e in events]


def fake_app(posted: list[dict[str, Any]]) -> Starlette:
    async def architectures(request: Request) -> Response:
        return JSONResponse({"architectures": []})

    async def runs(request: Request) -> Response:
        return JSONResponse({"runs": [{"session_id": "fake", "architecture": "goal", "status": "running"}]})

    async def events(request: Request) -> Response:
        async def body() -> AsyncIterator[str]:
            for i, data in enumerate(fake_events(), 1):
                yield f"id: {i}\ndata: {data}\n\n"
            yield 'event: end\ndata: {"session_id": "fake", "status": "awaiting_approval"}\n\n'

        return StreamingResponse(body(), media_type="text/event-stream")

    async def decide(request: Request) -> Response:
        data = await request.json()
        posted.append({"gate_id": request.path_params["gate_id"], **data})
        decision = DecisionBody.model_validate(data).to_decision()  # the real endpoint's body and answer
        return JSONResponse(decision.model_dump(mode="json"))

    async def journal(request: Request) -> Response:
        return JSONResponse({"journal": None, "runs": []})

    return Starlette(
        routes=[
            *viewer_routes(),
            Route("/architectures", architectures),
            Route("/runs", runs),
            Route("/journal", journal),
            Route("/runs/{sid}/events", events),
            Route("/runs/{sid}/gates/{gate_id}", decide, methods=["POST"]),
        ]
    )


def test_the_watchdog_rail_and_a_pending_gate_approved_from_the_page(chrome: Any) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    driver = chrome
    posted: list[dict[str, Any]] = []
    with live_server(fake_app(posted)) as server:
        driver.get(f"{server.url}/#run=fake")
        wait = WebDriverWait(driver, 30)
        wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#rail .wd-mark")) == 4)
        marks = driver.find_elements(By.CSS_SELECTOR, "#rail .wd-mark")
        kinds = [m.get_attribute("class").split()[-1] for m in marks]
        colours = {m.value_of_css_property("background-color") for m in marks}
        lefts = [rect(m)["left"] for m in marks]
        ActionChains(driver).move_to_element(marks[1]).perform()
        wait.until(lambda d: d.find_element(By.ID, "tip").is_displayed())
        tip = driver.find_element(By.ID, "tip").text
        gates = driver.find_elements(By.CSS_SELECTOR, "#gates .gate")
        assert [g.get_attribute("data-gate-id") for g in gates] == [
            "fake__agent_0#3"
        ]  # the denied one is gone
        assert '"prod"' in gates[0].text and "deploy" in gates[0].text
        gates[0].find_element(By.CSS_SELECTOR, "button.approve").click()
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#gates .gate-decision"))
        decision = driver.find_element(By.CSS_SELECTOR, "#gates .gate-decision").text
        errors = console_errors(driver)
    assert kinds == ["progressing", "stuck", "misled", "achieved"]
    assert len(colours) == 4 and lefts == sorted(lefts) and lefts[0] < lefts[-1]
    assert "STUCK" in tip and "the same search three times" in tip
    assert posted == [
        {
            "gate_id": "fake__agent_0#3",
            "decision": "approve",
            "by": "viewer",
            "note": None,
            "arguments_hash": "h-1",
        }
    ]
    assert decision == "approved by you"
    assert errors == []


def test_a_journal_of_many_runs_lists_the_latest_500(chrome: Any, tmp_path: Path) -> None:
    """The page asks for the latest 501 runs and lists 500, saying so: a select of thousands
    helps no one, and `jeeves runs` lists every one."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    from jeeves.journal.records import SessionRecord
    from jeeves.journal.store import encode_record

    journal = tmp_path / "many.jsonl"
    records = [
        SessionRecord(session_id=f"run-{i:04d}", role="agent", architecture="agent") for i in range(1200)
    ]
    journal.write_text("".join(encode_record(r) + "\n" for r in records))
    with jeeves_serve("--offline", "--journal", str(journal), cwd=tmp_path) as base:
        chrome.get(f"{base}/")
        WebDriverWait(chrome, 60).until(
            lambda d: d.find_element(By.ID, "recorded").find_elements(
                By.CSS_SELECTOR, "option[value=run-1199]"
            )
        )
        values = [o.get_attribute("value") for o in chrome.find_elements(By.CSS_SELECTOR, "#recorded option")]
        label = chrome.find_element(By.ID, "recorded-label").get_attribute("textContent")
        errors = console_errors(chrome)
    assert values == ["", *(f"run-{i:04d}" for i in range(700, 1200))]
    assert label.startswith("Recorded run (many.jsonl, the latest 500)")
    assert errors == []
