"""The browser of the example web apps' tests: headless Chromium driven by Selenium, and
helpers to wait for what a page shows and photograph it.

Every page a test photographs goes to ``build/screenshots/`` (gitignored), on every run. The
browser is the system's: ``/usr/bin/chromium`` with ``/usr/bin/chromedriver`` (``python3
dev.py test`` installs them with apt-get when it can); Selenium is given the driver's path so
it never downloads one. Without them the tests are skipped, saying so;
``ESMAPPER_SKIP_BROWSER_TESTS=1`` skips them on any machine. The ``driver`` fixture of the
package's conftest (one browser per test module) is :func:`browser`.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

import dev

webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed")

from selenium.common.exceptions import TimeoutException, WebDriverException  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.remote.webdriver import WebDriver  # noqa: E402
from selenium.webdriver.remote.webelement import WebElement  # noqa: E402
from selenium.webdriver.support import expected_conditions as ec  # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402

#: What the test modules take from Selenium: through here, so that they are skipped (by the
#: importorskip above) rather than broken when Selenium is missing.
__all__ = [
    "By",
    "Select",
    "WebDriver",
    "PNG_MAGIC",
    "SCREENSHOTS",
    "WRITTEN",
    "click",
    "click_link",
    "browser",
    "fill",
    "heading",
    "shot",
    "wait_text",
    "workers_seen",
]

ROOT = Path(__file__).resolve().parents[3]
SCREENSHOTS = ROOT / "build" / "screenshots"
CHROMEDRIVER = os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver")
BROWSERS = ("/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome")
#: How long a page may take to show what a test waits for (a condition, not a sleep).
WAIT = 20
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

#: The screenshots written by this run.
WRITTEN: set[Path] = set()


def _find_browser() -> str | None:
    for path in (os.environ.get("CHROME_BINARY", ""), *BROWSERS):
        if path and os.path.exists(path):
            return path
    return shutil.which("chromium") or shutil.which("chromium-browser")


def browser() -> Iterator[WebDriver]:
    """Headless Chromium, quit at the end (skips the test when there is none)."""
    if dev.browser_tests_skipped():
        pytest.skip(f"browser tests skipped: {dev.SKIP_BROWSER} is set")
    found = _find_browser()
    if found is None or not os.path.exists(CHROMEDRIVER):
        pytest.skip(
            "browser tests skipped: no Chromium and chromedriver on this machine "
            "(python3 dev.py test installs them with apt-get when run as root; or "
            "apt-get install chromium chromium-driver)"
        )
    options = webdriver.ChromeOptions()
    options.binary_location = found
    for argument in (
        "--headless=new",
        "--no-sandbox",  # root in containers
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--window-size=1280,1000",
    ):
        options.add_argument(argument)
    # the answers' headers (X-Worker: which process served a page) in the performance log
    options.set_capability("goog:loggingPrefs", {"performance": "ALL"})
    os.environ.setdefault("SE_OFFLINE", "true")  # Selenium Manager must not go online
    chrome = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        yield chrome
    finally:
        chrome.quit()


# -- helpers -----------------------------------------------------------------------------


def shot(driver: WebDriver, name: str) -> None:
    """Photograph the page as ``build/screenshots/<name>.png``."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    assert driver.save_screenshot(str(path))
    WRITTEN.add(path)


def _wait(driver: WebDriver) -> WebDriverWait:  # type: ignore[type-arg]
    """A wait that polls through a page being replaced: while a click's navigation loads,
    chromium may answer "Node with given id does not belong to the document" (a
    WebDriverException, not a stale element) for an element of the old page."""
    return WebDriverWait(driver, WAIT, ignored_exceptions=(WebDriverException,))


def wait_text(driver: WebDriver, css: str, text: str) -> WebElement:
    """The element ``css`` once it contains ``text``."""
    try:
        _wait(driver).until(ec.text_to_be_present_in_element((By.CSS_SELECTOR, css), text))
    except TimeoutException:
        shown = driver.find_element(By.TAG_NAME, "body").text
        raise AssertionError(f"{css!r} never showed {text!r}; the page shows:\n{shown}") from None
    return driver.find_element(By.CSS_SELECTOR, css)


def heading(driver: WebDriver, text: str) -> None:
    wait_text(driver, "h1", text)


def click(driver: WebDriver, css: str) -> None:
    """Click ``css`` once the page shows it (the previous click may still be loading)."""
    _wait(driver).until(ec.element_to_be_clickable((By.CSS_SELECTOR, css))).click()


def click_link(driver: WebDriver, text: str) -> None:
    driver.find_element(By.LINK_TEXT, text).click()


def fill(driver: WebDriver, values: dict[str, str]) -> None:
    for name, value in values.items():
        element = driver.find_element(By.NAME, name)
        element.clear()
        element.send_keys(value)


def workers_seen(driver: WebDriver) -> set[str]:
    """The ``X-Worker`` of every page answer since the last call (the performance log)."""
    seen = set()
    log = driver.get_log("performance")  # type: ignore[attr-defined]
    for entry in log:
        event = json.loads(entry["message"])["message"]
        if event.get("method") == "Network.responseReceived":
            headers = {k.lower(): v for k, v in event["params"]["response"]["headers"].items()}
            if "x-worker" in headers:
                seen.add(headers["x-worker"])
    return seen
