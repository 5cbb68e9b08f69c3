#!/usr/bin/env python3
"""Screenshots of the web playground for the README: docs/webui/{desktop,phone}-{light,dark}.png.

Starts `tempered serve` on SmolLM2 (TEMPERED_BIN, default build/tempered), asks one question greedily in
headless Chromium, and captures the page at desktop and phone width in both themes (at phone width the dark
shot has the sampling panel open). Usage: TEMPERED_BIN=build/tempered .venv/bin/python scripts/webui_screenshots.py
"""
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "e2e"))

from helpers import model_args, running_server  # noqa: E402
from webui_browser import Browser  # noqa: E402

OUT = ROOT / "docs" / "webui"
QUESTION = "Write a Python function that returns the sum of a list, with one line of explanation."
SIZES = {"desktop": (1280, 780), "phone": (390, 780)}


def ask(browser, base_url):
    browser.open(base_url + "/")
    # As the panel saves them (at phone width it is folded away).
    settings = {"temperature": {"explicit": True, "value": "0"}, "max_tokens": {"explicit": True, "value": "90"}}
    browser.js("localStorage.setItem('tempered.sampling.v1', arguments[0])", json.dumps(settings))
    browser.open(base_url + "/")
    browser.send(QUESTION)
    browser.wait_idle(timeout=120)


def capture(browser, base_url, name, theme, open_side=False):
    browser.js("localStorage.setItem('tempered.theme', arguments[0])", theme)
    browser.open(base_url + "/")
    browser.wait_for(lambda: browser.js("return document.getElementById('stat-tokens-s') !== null"),
                     what="two metrics polls")
    if open_side:
        browser.by_id("toggle-side").click()
    browser.js("document.activeElement.blur()")
    path = OUT / f"{name}-{theme}.png"
    browser.driver.save_screenshot(str(path))
    print(f"{path.relative_to(ROOT)}: {path.stat().st_size // 1024} KB")


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    with running_server(model_args(), name="screenshots") as server, tempfile.TemporaryDirectory() as downloads:
        for name, (width, height) in SIZES.items():
            browser = Browser(downloads, width=max(width, 500), height=height)
            if name == "phone":
                browser.emulate_phone(width, height)
            try:
                ask(browser, server.base_url)
                capture(browser, server.base_url, name, "light")
                capture(browser, server.base_url, name, "dark", open_side=(name == "phone"))
                assert browser.foreign_requests() == [], json.dumps(browser.foreign_requests())
            finally:
                browser.quit()


if __name__ == "__main__":
    main()
