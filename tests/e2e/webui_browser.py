"""Headless Chromium (Debian's chromium + chromium-driver) driven by Selenium, for the web playground's tests
(test_webui.py) and its screenshots (scripts/webui_screenshots.py).

Every request the page makes is recorded from Chrome's performance log (DevTools Network events), so a
test can insist that none left the machine. Nothing is downloaded: Selenium is told where the browser and
the driver are, so its driver manager never runs.
"""
import json
import shutil
import time
from pathlib import Path
from urllib.parse import urlsplit

CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser")
DRIVER_CANDIDATES = ("/usr/bin/chromedriver", "/usr/lib/chromium/chromedriver")
LOOPBACK_HOSTS = {"127.0.0.1", "localhost", "[::1]", "::1"}


def find_browser():
    """(chromium, chromedriver) paths, or None when either is missing."""
    chromium = next((p for p in CHROMIUM_CANDIDATES if Path(p).exists()), shutil.which("chromium"))
    driver = next((p for p in DRIVER_CANDIDATES if Path(p).exists()), shutil.which("chromedriver"))
    return (chromium, driver) if chromium and driver else None


class Browser:
    def __init__(self, download_dir, width=1280, height=860, dark=False):
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service

        chromium, driver = find_browser()
        options = webdriver.ChromeOptions()
        options.binary_location = chromium
        for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                         "--no-first-run", "--disable-extensions", "--disable-background-networking",
                         "--disable-component-update", "--disable-sync", "--disable-default-apps",
                         f"--window-size={width},{height}", "--hide-scrollbars"):
            options.add_argument(argument)
        if dark:
            options.add_argument("--force-dark-mode")
        options.set_capability("goog:loggingPrefs", {"performance": "ALL", "browser": "ALL"})
        options.add_experimental_option("prefs", {"download.default_directory": str(download_dir),
                                                  "download.prompt_for_download": False})
        self.driver = webdriver.Chrome(service=Service(driver), options=options)
        self.driver.execute_cdp_cmd("Browser.setDownloadBehavior",
                                    {"behavior": "allow", "downloadPath": str(download_dir)})
        self.requested_urls = []

    def emulate_phone(self, width, height):
        """A phone's viewport (a headless window is never narrower than 500 px)."""
        self.driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                                    {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": True})

    def quit(self):
        self.driver.quit()

    # ---- what the page asked for

    def collect_requests(self):
        """Every URL the page requested since the last call (kept in requested_urls too)."""
        urls = []
        for entry in self.driver.get_log("performance"):
            message = json.loads(entry["message"])["message"]
            if message.get("method") == "Network.requestWillBeSent":
                urls.append(message["params"]["request"]["url"])
        self.requested_urls += urls
        return urls

    def foreign_requests(self):
        """The recorded requests to anywhere but this machine (data: and blob: URLs stay in the page)."""
        self.collect_requests()
        foreign = []
        for url in self.requested_urls:
            parts = urlsplit(url)
            if parts.scheme in ("data", "blob"):
                continue
            if parts.scheme not in ("http", "https", "ws", "wss") or parts.hostname not in LOOPBACK_HOSTS:
                foreign.append(url)
        return foreign

    # ---- page helpers

    def js(self, script, *args):
        return self.driver.execute_script(script, *args)

    def by_id(self, element_id):
        from selenium.webdriver.common.by import By
        return self.driver.find_element(By.ID, element_id)

    def wait_for(self, predicate, timeout=30.0, interval=0.02, what="condition"):
        deadline = time.monotonic() + timeout
        while True:
            value = predicate()
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout}s waiting for {what}")
            time.sleep(interval)

    def open(self, url, api_key=None, expect_model=True):
        self.driver.get(url)
        self.wait_for(lambda: self.js("return document.body.dataset.ready === 'true'"), what="the page's start")
        if api_key is not None:
            field = self.by_id("api-key")
            field.clear()
            field.send_keys(api_key)
            self.js("arguments[0].dispatchEvent(new Event('change'))", field)
        if expect_model:
            self.wait_for(lambda: self.js("return document.getElementById('model-name').textContent"),
                          what="the model's name")

    def set_parameter(self, name, value=None):
        """Sets a sampling parameter to an explicit value, or (value None) back to the server's default."""
        from selenium.webdriver.support.ui import Select
        Select(self.by_id(f"mode-{name}")).select_by_value("default" if value is None else "set")
        if value is not None:
            field = self.by_id(f"value-{name}")
            field.clear()
            field.send_keys(str(value))

    def set_extra_fields(self, fields):
        self.js("document.getElementById('extra-fields').open = true")
        box = self.by_id("extra-json")
        box.clear()
        if fields:
            # Typed as one value: send_keys of JSON is slow and fights auto-indentation.
            self.js("arguments[0].value = arguments[1]; arguments[0].dispatchEvent(new Event('input'))",
                    box, json.dumps(fields))

    def send(self, text):
        box = self.by_id("composer-input")
        box.send_keys(text)
        self.by_id("send").click()

    def assistant_messages(self):
        return self.js("return [...document.querySelectorAll('#messages li.assistant')].map(li => ({"
                       "text: li.querySelector('.body').textContent,"
                       "streaming: li.querySelector('.meta').textContent.includes('streaming'),"
                       "meta: li.querySelector('.meta').textContent}))")

    def wait_idle(self, timeout=60.0):
        """Waits until no answer is streaming (the Send button is back)."""
        self.wait_for(lambda: self.js("return !document.getElementById('send').hidden"), timeout=timeout,
                      what="the answer to finish")
