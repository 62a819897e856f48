#!/usr/bin/python3
"""Browser sign-in in headless Chromium (issue 41): a web app on one origin signs a
user in through Cumulus's sign-in page on another, as CloudKit JS does, saves a record
with the session, and signs out.

The app page (app.html) plays CloudKit JS's part: users/caller answers 421, its
redirectURL opens in a popup, the user types a user name and password there, the page
posts {ckSession} to the app's window; the app subscribes, takes a push token and its
webcourierURL from the device module, saves a record in the private database, reads the
save's notification from the webcourierURL, and then signs out. Selenium drives Debian's chromium through chromium-driver; a real
`cumulus serve` process answers on a loopback port. Screenshots of each step go to
.build/browser/. Exits non-zero, with the reason, if any step fails.
"""
import functools
import http.server
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import urllib.error
import urllib.request

from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import WebDriverWait

from browser_support import arguments, chromium, free_port, run, wait_for

CONTAINER = "iCloud.com.example.browser"
USER = "alice"
PASSWORD = "correct horse battery"
HERE = os.path.dirname(os.path.abspath(__file__))




def request(url, body=None):
    """(status, JSON) of a GET, or of a POST of `body`."""
    data = None if body is None else json.dumps(body).encode()
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data=data), timeout=30) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null")



def main():
    cumulus, shots = arguments()
    data = tempfile.mkdtemp(prefix="cumulus-browser-")
    api_port, app_port = free_port(), free_port()
    # Two origins: the API at 127.0.0.1, the app at localhost (another site to a browser).
    api = f"http://127.0.0.1:{api_port}"
    app_origin = f"http://localhost:{app_port}"
    server = app_server = driver = None
    try:
        run(cumulus, "users", "add", "--data", data, "--name", USER, "--container", CONTAINER)
        run(cumulus, "users", "passwd", "--data", data, "--user", USER, stdin=PASSWORD + "\n")
        minted = run(cumulus, "tokens", "create", "--data", data, "--container", CONTAINER, "--origin", app_origin)
        token = next(line.split(":", 1)[1].strip() for line in minted.splitlines() if line.startswith("ckAPIToken"))

        server = subprocess.Popen(
            [cumulus, "serve", "--data", data, "--host", "127.0.0.1", "--port", str(api_port), "--public-url", api],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

        def listening():
            try:
                return request(f"{api}/healthz")[0] == 200
            except OSError:
                return False
        wait_for(listening, "the server to listen")

        class Quiet(http.server.SimpleHTTPRequestHandler):
            def log_message(self, *args):
                pass
        handler = functools.partial(Quiet, directory=HERE)
        app_server = http.server.ThreadingHTTPServer(("127.0.0.1", app_port), handler)
        threading.Thread(target=app_server.serve_forever, daemon=True).start()

        driver = chromium()
        wait = WebDriverWait(driver, 60)

        driver.get(f"{app_origin}/app.html?api={api}&container={CONTAINER}&token={token}")
        wait.until(EC.text_to_be_present_in_element((By.ID, "status"), "signed out"))
        driver.save_screenshot(os.path.join(shots, "1-app-signed-out.png"))

        app_window = driver.current_window_handle
        driver.find_element(By.ID, "signin").click()
        wait.until(EC.number_of_windows_to_be(2))
        driver.switch_to.window(next(h for h in driver.window_handles if h != app_window))
        wait.until(EC.presence_of_element_located((By.ID, "password")))
        assert driver.current_url.startswith(f"{api}/signin?"), driver.current_url
        assert app_origin in driver.page_source, "the page names the app it signs in to"
        driver.find_element(By.ID, "user").send_keys(USER)
        driver.find_element(By.ID, "password").send_keys(PASSWORD)
        driver.save_screenshot(os.path.join(shots, "2-signin-page.png"))
        driver.find_element(By.CSS_SELECTOR, "button[type=submit]").click()

        # The page posts the session to the app and closes itself.
        wait.until(EC.number_of_windows_to_be(1))
        driver.switch_to.window(app_window)
        wait.until(EC.text_to_be_present_in_element((By.ID, "status"), f"signed in as {USER}"))
        wait.until(EC.text_to_be_present_in_element((By.ID, "saved"), "from-browser"))
        # The save's notification, read by the app from its webcourierURL across origins.
        wait.until(EC.text_to_be_present_in_element((By.ID, "notified"), "db"))
        driver.save_screenshot(os.path.join(shots, "3-app-saved.png"))

        session = driver.execute_script("return window.appSession")
        base = f"{api}/database/1/{CONTAINER}/development"
        status, found = request(
            f"{base}/private/records/lookup?ckAPIToken={token}&ckWebAuthToken={session}",
            {"records": [{"recordName": "from-browser"}]})
        title = found["records"][0]["fields"]["title"]["value"]
        assert status == 200 and title == "written in Chromium", found

        driver.find_element(By.ID, "signout").click()
        wait.until(EC.text_to_be_present_in_element((By.ID, "status"), "the session is revoked"))
        driver.save_screenshot(os.path.join(shots, "4-app-signed-out-again.png"))
        status, _ = request(f"{base}/public/users/caller?ckAPIToken={token}&ckWebAuthToken={session}")
        assert status == 401, f"a revoked session answered {status}"
        print("browser sign-in: 1 passed, 0 failed")
        return 0
    except Exception as error:  # the reason, then a failing exit
        if driver is not None:
            driver.save_screenshot(os.path.join(shots, "failure.png"))
            print(driver.page_source[-2000:], file=sys.stderr)
        print(f"browser sign-in failed: {type(error).__name__}: {error}", file=sys.stderr)
        print("browser sign-in: 0 passed, 1 failed")
        return 1
    finally:
        if driver is not None:
            driver.quit()
        if app_server is not None:
            app_server.shutdown()
        if server is not None:
            server.terminate()
            server.wait(timeout=30)
        shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
