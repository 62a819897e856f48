"""What the browser tests share: loopback ports, running the `cumulus` binary, waiting
for a condition with a deadline, plain HTTP calls, a headless Chromium driven through
chromium-driver, and the console's sign-in."""
import argparse
import json
import os
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request

from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC


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


def post(url, body):
    """(status, JSON) of a POST of `body`."""
    request = urllib.request.Request(url, data=json.dumps(body).encode())
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null")


def status_of(url):
    """The HTTP status of a GET of `url`; `None` when nothing answers."""
    try:
        with urllib.request.urlopen(url, timeout=30) as answer:
            return answer.status
    except urllib.error.HTTPError as error:
        return error.code
    except OSError:
        return None


def token(output, name):
    """The value after `name:` in a `cumulus` command's output."""
    return next(line.split(":", 1)[1].strip() for line in output.splitlines() if line.startswith(name))


def sign_in(driver, wait, user, password):
    """Signs `user` in on the console's form and waits until the page says who is in."""
    wait.until(EC.visibility_of_element_located((By.ID, "user")))
    driver.find_element(By.ID, "user").clear()
    driver.find_element(By.ID, "user").send_keys(user)
    driver.find_element(By.ID, "password").send_keys(password)
    driver.find_element(By.CSS_SELECTOR, "#signin-form button[type=submit]").click()
    wait.until(EC.text_to_be_present_in_element((By.ID, "who"), user))


def fits_a_phone(driver, what):
    """The page is no wider than a phone's screen, and no table is wider than its box:
    each row shows as a card of labelled cells, not columns scrolled out of sight."""
    wait_for(lambda: driver.execute_script("return window.innerWidth") <= 400, "the window to narrow", timeout=30)
    width = driver.execute_script("return document.documentElement.scrollWidth")
    assert width <= 400, f"{what} is {width} px wide at a phone's width"
    no_table_scrolls(driver, what)
    unlabelled = driver.execute_script(
        "return [...document.querySelectorAll('table tbody td')].filter((c) => c.offsetParent !== null && c.dataset.label === undefined).length")
    assert unlabelled == 0, f"{what}: {unlabelled} cells without their column's label"
    # A label that wraps must make its line taller, not run into the next line.
    overflowing = driver.execute_script(
        "return [...document.querySelectorAll('table tbody td')].filter((c) => c.offsetParent !== null"
        " && parseFloat(getComputedStyle(c, '::before').height) > c.clientHeight + 1).map((c) => c.dataset.label)")
    assert not overflowing, f"{what}: labels taller than their cells: {overflowing}"


def no_table_scrolls(driver, what):
    """No table on the page is wider than the box it sits in."""
    wide = driver.execute_script(
        "return [...document.querySelectorAll('table')]"
        ".filter((t) => t.offsetParent !== null && t.parentElement.scrollWidth > t.parentElement.clientWidth + 1)"
        ".map((t) => `${t.id}: ${t.parentElement.scrollWidth} px in ${t.parentElement.clientWidth}`)")
    assert not wide, f"{what}: tables scroll sideways: {wide}"


def stop(processes):
    """Ends each `cumulus` process: a terminate, then a kill if it has not gone in 30 s."""
    for process in processes:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
