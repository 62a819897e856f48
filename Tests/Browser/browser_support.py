"""What the browser tests share: loopback ports, running the `cumulus` binary, waiting
for a condition with a deadline, and a headless Chromium driven through chromium-driver."""
import argparse
import os
import shutil
import socket
import subprocess
import time

from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service


def free_port():
    """A loopback port nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(cumulus, *args, stdin=None):
    """`cumulus ARGS…`'s standard output; a failure raises."""
    done = subprocess.run([cumulus, *args], input=stdin, capture_output=True, text=True, check=True)
    return done.stdout


def wait_for(condition, what, timeout=180):
    """Waits until `condition()` holds; raises naming `what` past `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def chromium():
    """Headless Debian chromium at 1280x800, keeping the page's console messages."""
    options = Options()
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1280,800"):
        options.add_argument(flag)
    return webdriver.Chrome(service=Service(shutil.which("chromedriver") or "/usr/bin/chromedriver"), options=options)


def arguments():
    """The `cumulus` binary (absolute) and the screenshot folder (made) a test was given."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--cumulus", default=".build/debug/cumulus")
    parser.add_argument("--screenshots", default=".build/browser")
    args = parser.parse_args()
    os.makedirs(args.screenshots, exist_ok=True)
    return os.path.abspath(args.cumulus), args.screenshots
