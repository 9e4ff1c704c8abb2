"""The web console in a real browser: Debian's chromium driven by Playwright against a real
`orbitmq serve` and a real `orbitmq console` process.

Checks: the pages render, the lag chart moves when the consumer stops committing, a topic created in
the page appears in `orbitmq admin topicList`, a test message sent from the page is found by key with
its body. Saves docs/console.png (the README's screenshot) when ORBITMQ_UPDATE_SCREENSHOT=1.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from orbitmq.admin.api import AdminClient
from orbitmq.testing import ServerProcess, start_serve
from orbitmq.testing.console import console_process

pytestmark = pytest.mark.slow

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
# The README's screenshot is refreshed only on request (ORBITMQ_UPDATE_SCREENSHOT=1), so a test run leaves
# the work tree clean; otherwise the picture still has to be taken, into a temp file.
UPDATE_SCREENSHOT = os.environ.get("ORBITMQ_UPDATE_SCREENSHOT") == "1"
README_SCREENSHOT = Path(__file__).resolve().parents[3] / "docs" / "console.png"
GROUP = "console-g"
TOPIC = "ConsoleT"

if not os.path.exists(CHROMIUM):
    pytest.skip("chromium is not installed (scripts/install-dev installs Debian's)", allow_module_level=True)
playwright_sync = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (dev extra)")


@pytest.fixture(scope="module")
def serve(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    with start_serve(tmp_path_factory.mktemp("console-serve")) as proc:
        yield proc


@pytest.fixture(scope="module")
def console(serve: ServerProcess) -> Iterator[str]:
    with console_process(serve.namesrv_addr) as url:
        yield url


def admin_call(namesrv: str, work: Callable[[AdminClient], Awaitable[None]]) -> None:
    """Run admin work on its own loop in another thread (Playwright's sync API owns this thread's)."""

    async def run() -> None:
        async with AdminClient(namesrv) as admin:
            await work(admin)

    with ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, run()).result(timeout=60)


def send(namesrv: str, count: int) -> None:
    async def work(admin: AdminClient) -> None:
        for i in range(count):
            await admin.send_message(TOPIC, b"load %d" % i)

    admin_call(namesrv, work)


def consume_all(namesrv: str) -> None:
    """A consumer's work: pull from every queue with the group and commit up to the end."""

    async def work(admin: AdminClient) -> None:
        for mq in await admin.read_queues(TOPIC):
            _, max_offset = await admin.queue_offsets(mq)
            await admin.pull(mq, 0, 32, group=GROUP)
            await admin.commit_offset(GROUP, mq, max_offset)

    admin_call(namesrv, work)


def test_console_in_chromium(serve: ServerProcess, console: str, tmp_path: Path) -> None:
    namesrv = serve.namesrv_addr
    with playwright_sync.sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=CHROMIUM,
            args=[
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
            ],
        )
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 820})
            page.set_default_timeout(15_000)
            page.goto(console)
            # Cluster page: the broker row with its version and role.
            row = page.locator("#brokers tbody tr", has_text="broker-a")
            playwright_sync.expect(row).to_contain_text("V4_9_7")
            playwright_sync.expect(row).to_contain_text("ASYNC_MASTER")

            # Create a topic in the page; the admin CLI sees it.
            page.click("nav a[data-page=topics]")
            page.fill("#new-topic", TOPIC)
            page.click("#create-topic button")
            playwright_sync.expect(page.locator("#create-result")).to_contain_text(f"saved {TOPIC}")
            playwright_sync.expect(page.locator(f"#topic-list li[data-topic={TOPIC}]")).to_be_visible()
            listed = subprocess.run(
                [sys.executable, "-m", "orbitmq", "admin", "topicList", "-n", namesrv],
                capture_output=True,
                text=True,
                timeout=60,
                check=True,
            )
            assert TOPIC in listed.stdout.split()

            # Send a test message from the page, then find it by key: the body is shown.
            page.click("nav a[data-page=messages]")
            send_form = page.locator("#send-message")
            send_form.locator("input[name=topic]").fill(TOPIC)
            send_form.locator("input[name=keys]").fill("order-42")
            send_form.locator("textarea[name=body]").fill("hello from the console")
            send_form.locator("button").click()
            playwright_sync.expect(page.locator("#send-result")).to_contain_text("SEND_OK")
            page.fill("#find-topic", TOPIC)
            page.fill("#find-key", "order-42")
            page.click("#find-message button")
            playwright_sync.expect(page.locator(".msg-body")).to_have_text("hello from the console")

            # A consumer that keeps up: lag 0. Then it stops and messages arrive: the chart moves.
            send(namesrv, 5)
            consume_all(namesrv)
            page.click("nav a[data-page=groups]")
            page.click(f"#group-list li[data-group={GROUP}]")
            lag = page.locator("#lag-now")
            playwright_sync.expect(lag).to_have_attribute("data-lag", "0")
            send(namesrv, 7)
            playwright_sync.expect(lag).to_have_attribute("data-lag", "7")
            chart = page.locator("#lag-chart")
            playwright_sync.expect(chart).to_have_attribute("data-last", "7")
            points = chart.locator("polyline.lag").get_attribute("points") or ""
            heights = {p.split(",")[1] for p in points.split()}
            assert len(heights) >= 2, points  # the line rose: 0 before, 7 after
            page.wait_for_timeout(2500)  # a few more points for the screenshot
            shot = README_SCREENSHOT if UPDATE_SCREENSHOT else tmp_path / "console.png"
            page.screenshot(path=str(shot), full_page=True)
            assert shot.stat().st_size > 10_000  # a rendered page, not an empty picture

            # The cluster page's TPS chart shows the puts of the last minute.
            page.click("nav a[data-page=cluster]")
            page.wait_for_function("Number(document.querySelector('#tps-chart').dataset.last) > 0")
        finally:
            browser.close()
