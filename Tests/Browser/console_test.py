#!/usr/bin/python3
"""The web console in headless Chromium (issue 45): an operator signs in on a leader that
has a follower and sees, on the cluster page, the leader, its follower and the follower's
lag, at a desktop's and at a phone's width; watches a save appear in the live log; signs
out; a user who is no operator signs in and is refused the node's page; a write without
the session's CSRF token is refused.

Real `cumulus serve` processes answer on loopback ports (a leader with --console and a
follower streaming from it); Selenium drives Debian's chromium through chromium-driver.
Screenshots of each step go to .build/browser/console-*.png. Exits non-zero, with the
reason, if any step fails.
"""
import os
import shutil
import subprocess
import sys
import tempfile
import traceback
from datetime import datetime, timezone

from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import WebDriverWait

from browser_support import arguments, chromium, fits_a_phone, free_port, no_table_scrolls, post, run, sign_in, status_of, stop, token, wait_for

OPERATOR = "olivia"
CONTAINER = "iCloud.com.example.console"
USER = "bob"
PASSWORD = "correct horse battery"


def main():
    cumulus, shots = arguments()
    root = tempfile.mkdtemp(prefix="cumulus-console-")
    leader_data, follower_data = os.path.join(root, "leader"), os.path.join(root, "follower")
    secret = os.path.join(root, "secret")
    with open(os.open(secret, os.O_WRONLY | os.O_CREAT, 0o600), "w") as file:
        file.write("console-test-replication-secret\n")
    leader_port, follower_port = free_port(), free_port()
    leader = f"http://127.0.0.1:{leader_port}"
    processes = []
    driver = None
    try:
        run(cumulus, "users", "add", "--data", leader_data, "--name", OPERATOR, "--operator")
        run(cumulus, "users", "passwd", "--data", leader_data, "--user", OPERATOR, stdin=PASSWORD + "\n")
        run(cumulus, "users", "add", "--data", leader_data, "--name", USER)
        run(cumulus, "users", "passwd", "--data", leader_data, "--user", USER, stdin=PASSWORD + "\n")
        api_token = token(run(cumulus, "tokens", "create", "--data", leader_data, "--container", CONTAINER), "ckAPIToken")
        web_token = token(
            run(cumulus, "tokens", "create", "--data", leader_data, "--user", OPERATOR, "--container", CONTAINER),
            "ckWebAuthToken")

        def serve(*extra):
            processes.append(subprocess.Popen(
                [cumulus, "serve", "--host", "127.0.0.1", "--replication-secret-file", secret, *extra],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        serve("--data", leader_data, "--port", str(leader_port), "--console", "--public-url", leader)
        wait_for(lambda: status_of(f"{leader}/healthz") == 200, "the leader to listen")
        serve("--data", follower_data, "--port", str(follower_port), "--follow", leader, "--name", "follower-1")
        wait_for(lambda: status_of(f"http://127.0.0.1:{follower_port}/healthz") == 200, "the follower to listen")

        driver = chromium()
        # A page re-renders as it loads and after each change: a condition that met an
        # element just replaced is asked again, not failed.
        wait = WebDriverWait(driver, 120, ignored_exceptions=[StaleElementReferenceException])

        # No credential in the URL, ever: the page alone, then a form.
        driver.get(f"{leader}/console#/cluster")
        wait.until(EC.visibility_of_element_located((By.ID, "signin-form")))
        assert not driver.find_element(By.ID, "nav").is_displayed(), "the pages' links show only once signed in"
        driver.save_screenshot(os.path.join(shots, "console-1-signin.png"))
        sign_in(driver, wait, OPERATOR, PASSWORD)
        assert "(operator)" in driver.find_element(By.ID, "who").text
        assert PASSWORD not in driver.current_url and "session" not in driver.current_url, driver.current_url

        # The cluster page: this node leads; its follower reports, with its lag.
        wait.until(EC.text_to_be_present_in_element((By.ID, "node"), "leader"))

        def after_refresh(element_id, check):
            """Reloads the page until `element_id` is there and `check()` holds."""
            def refreshed():
                driver.refresh()
                try:
                    WebDriverWait(driver, 30).until(EC.presence_of_element_located((By.ID, element_id)))
                    return check()
                except Exception:
                    return False
            return refreshed
        wait_for(after_refresh("node", lambda: "follower-1" in driver.find_element(By.ID, "page").text),
                 "the follower on the cluster page")
        rows = driver.find_elements(By.CSS_SELECTOR, "#followers tbody tr")
        assert len(rows) == 1 and "follower-1" in rows[0].text, [row.text for row in rows]
        cells = rows[0].find_elements(By.TAG_NAME, "td")
        assert cells[2].text.isdigit() and cells[3].text.lstrip("-").isdigit(), [cell.text for cell in cells]
        history = driver.find_element(By.ID, "history").text
        assert "leader" in history and "opened" in history, history
        # Charts of the last minutes, drawn as SVG, the follower's lag among them once sampled.
        wait_for(after_refresh("chart-requests", lambda: bool(
            driver.find_elements(By.CSS_SELECTOR, "#chart-lag path[data-series='follower-1']"))),
            "the follower's lag on a chart")
        for chart in ("chart-requests", "chart-latency", "chart-groups", "chart-fsync", "chart-lag-ms"):
            assert driver.find_elements(By.CSS_SELECTOR, f"#{chart} svg path.series"), chart
        driver.execute_script("document.getElementById('chart-requests').scrollIntoView({block: 'center'})")
        driver.save_screenshot(os.path.join(shots, "console-2b-charts.png"))
        driver.execute_script("window.scrollTo(0, 0)")
        driver.save_screenshot(os.path.join(shots, "console-2-cluster.png"))
        driver.set_window_size(390, 844)
        fits_a_phone(driver, "the cluster page")
        driver.save_screenshot(os.path.join(shots, "console-3-cluster-phone.png"))
        driver.set_window_size(1280, 800)

        # The live log: a save made now appears at its top.
        driver.get(f"{leader}/console#/log")
        wait.until(EC.text_to_be_present_in_element((By.ID, "log-status"), "Live"))
        database = f"{leader}/database/1/{CONTAINER}/development/private"
        query = f"ckAPIToken={api_token}&ckWebAuthToken={web_token}"
        status, answer = post(f"{database}/zones/modify?{query}",
                              {"operations": [{"operationType": "create", "zone": {"zoneID": {"zoneName": "Lists"}}}]})
        assert status == 200, answer
        status, answer = post(f"{database}/records/modify?{query}", {"zoneID": {"zoneName": "Lists"}, "operations": [
            {"operationType": "create", "record": {"recordName": "seen-live", "recordType": "Item",
                                                   "fields": {"title": {"value": "from the test"}}}}]})
        assert status == 200, answer
        wait.until(EC.text_to_be_present_in_element((By.ID, "log"), "seen-live"))
        first_row = driver.find_element(By.CSS_SELECTOR, "#log tbody tr").text
        assert "seen-live" in first_row and "recordSaved" in first_row and OPERATOR in first_row, first_row
        driver.save_screenshot(os.path.join(shots, "console-5-log.png"))

        # The chain: verified with progress, a range exported for auditors (checked
        # against the log, then downloaded), and a commit read whole from its row.
        driver.find_element(By.ID, "verify-chain").click()
        wait.until(EC.text_to_be_present_in_element((By.ID, "verify-result"), "The chain holds"))
        driver.find_element(By.CSS_SELECTOR, "#audit-form button").click()
        wait.until(EC.presence_of_element_located((By.ID, "audit-download")))
        assert "match the log" in driver.find_element(By.ID, "audit-result").text
        exported = driver.execute_async_script("""
            const done = arguments[arguments.length - 1];
            fetch(document.getElementById('audit-download').href, {credentials: 'same-origin'})
              .then(r => r.text()).then(t => done(t));
        """)
        assert "seen-live" in exported and exported.count("\n") >= 3, exported[:300]
        driver.save_screenshot(os.path.join(shots, "console-14-log-chain.png"))
        row = next(r for r in driver.find_elements(By.CSS_SELECTOR, "#log tbody tr") if "seen-live" in r.text)
        row.find_element(By.CSS_SELECTOR, "td:first-child a").click()
        wait.until(EC.presence_of_element_located((By.ID, "commit-events")))
        assert "seen-live" in driver.find_element(By.ID, "commit-events").text
        assert len(driver.find_element(By.ID, "commit").text) > 64
        no_table_scrolls(driver, "the commit page")
        driver.save_screenshot(os.path.join(shots, "console-15-commit.png"))
        driver.back()
        wait.until(EC.text_to_be_present_in_element((By.ID, "log"), "seen-live"))

        # Its timeline, from the log's link: created by the operator, then updated.
        status, answer = post(f"{database}/records/modify?{query}", {"zoneID": {"zoneName": "Lists"}, "operations": [
            {"operationType": "forceUpdate", "record": {"recordName": "seen-live", "recordType": "Item",
                                                        "fields": {"title": {"value": "edited"}}}}]})
        assert status == 200, answer
        driver.find_element(By.LINK_TEXT, "seen-live").click()
        wait.until(EC.text_to_be_present_in_element((By.ID, "history-summary"), "2 versions"))
        timeline = driver.find_element(By.ID, "history-versions").text
        assert "created" in timeline and "updated" in timeline and '"from the test" → "edited"' in timeline, timeline
        driver.save_screenshot(os.path.join(shots, "console-6-history.png"))
        # What changed between the first commit and now: the record, created.
        # A point past the head is said to be.
        driver.get(f"{leader}/console#/diff?from=1&to=1000000")
        wait.until(EC.text_to_be_present_in_element((By.ID, "diff-error"), "past the head"))
        driver.get(f"{leader}/console#/diff")
        wait.until(EC.presence_of_element_located((By.ID, "diff-form")))
        driver.find_element(By.ID, "diff-from").send_keys("1")
        driver.find_element(By.ID, "diff-to").send_keys(datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z"))
        driver.find_element(By.CSS_SELECTOR, "#diff-form button").click()
        wait.until(EC.presence_of_element_located((By.ID, "diff-summary")))
        assert "seen-live" in driver.find_element(By.ID, "diff-records").text
        driver.save_screenshot(os.path.join(shots, "console-16-diff.png"))
        driver.find_element(By.LINK_TEXT, "seen-live").click()
        wait.until(EC.text_to_be_present_in_element((By.ID, "history-summary"), "2 versions"))
        # When a query's result first changed: the commit that edited the title.
        driver.get(f"{leader}/console#/bisect")
        wait.until(EC.presence_of_element_located((By.ID, "bisect-form")))
        driver.find_element(By.ID, "bisect-type").send_keys("Item")
        driver.find_element(By.ID, "bisect-query").send_keys("title == 'edited'")
        driver.find_element(By.CSS_SELECTOR, "#bisect-form button").click()
        wait.until(EC.presence_of_element_located((By.ID, "bisect-found")))
        assert "seen-live" in driver.find_element(By.ID, "bisect-found").text
        driver.save_screenshot(os.path.join(shots, "console-18-bisect.png"))

        # The same pages at a phone's width, and the history page empty and refused.
        driver.set_window_size(390, 844)
        fits_a_phone(driver, "the bisect page")
        driver.save_screenshot(os.path.join(shots, "console-7b-bisect-phone.png"))
        driver.get(f"{leader}/console#/history?record=seen-live&zone=Lists")
        wait.until(EC.text_to_be_present_in_element((By.ID, "history-summary"), "2 versions"))
        fits_a_phone(driver, "the history page")
        driver.save_screenshot(os.path.join(shots, "console-7-history-phone.png"))
        driver.get(f"{leader}/console#/log")
        wait.until(EC.text_to_be_present_in_element((By.ID, "log"), "seen-live"))
        fits_a_phone(driver, "the log page")
        driver.save_screenshot(os.path.join(shots, "console-8-log-phone.png"))
        driver.set_window_size(1280, 800)
        driver.get(f"{leader}/console#/history")
        wait.until(EC.presence_of_element_located((By.ID, "history-form")))
        driver.save_screenshot(os.path.join(shots, "console-9-history-empty.png"))
        driver.get(f"{leader}/console#/history?record=nobody")
        wait.until(EC.text_to_be_present_in_element((By.ID, "history-error"), "nobody"))
        driver.save_screenshot(os.path.join(shots, "console-10-history-unknown.png"))

        # The schema: a refusal marked at its line, an import, the difference from
        # production, and a deploy that leaves none.
        driver.get(f"{leader}/console#/schema")
        wait.until(EC.presence_of_element_located((By.ID, "schema-text")))
        editor = driver.find_element(By.ID, "schema-text")
        driver.execute_script("arguments[0].value = arguments[1]", editor,
                              "DEFINE SCHEMA\n    RECORD TYPE Place (\n        title STRNG\n    );\n")
        driver.find_element(By.ID, "schema-import").click()
        wait.until(EC.text_to_be_present_in_element((By.ID, "schema-error"), "line 3"))
        marked = driver.find_element(By.ID, "schema-error-line").text
        assert "3 |" in marked and "STRNG" in marked and "^" in marked, marked
        driver.execute_script("document.getElementById('schema-error-line').scrollIntoView({block: 'center'})")
        driver.save_screenshot(os.path.join(shots, "console-11-schema-refused.png"))
        driver.execute_script("arguments[0].value = arguments[1]", editor,
                              'DEFINE SCHEMA\n    RECORD TYPE Place (\n        "___recordID" REFERENCE QUERYABLE,\n'
                              '        title STRING QUERYABLE SEARCHABLE,\n        GRANT READ TO "_world"\n    );\n')
        driver.find_element(By.ID, "schema-import").click()
        wait.until(EC.text_to_be_present_in_element((By.ID, "schema-notice"), "Imported"))
        diff = driver.find_element(By.ID, "schema-diff").text
        assert "+ " in diff and "RECORD TYPE Place" in diff, diff
        driver.execute_script("document.getElementById('schema-diff').scrollIntoView({block: 'center'})")
        driver.save_screenshot(os.path.join(shots, "console-12-schema-diff.png"))
        driver.find_element(By.ID, "schema-deploy").click()
        driver.find_element(By.ID, "schema-confirm-button").click()
        wait.until(EC.text_to_be_present_in_element((By.ID, "schema-notice"), "Deployed"))
        wait.until(EC.presence_of_element_located((By.ID, "schema-same")))
        assert "RECORD TYPE Place" in driver.find_element(By.ID, "schema-production").text
        driver.set_window_size(390, 844)
        fits_a_phone(driver, "the schema page")
        driver.set_window_size(1280, 800)

        # A client's change token, pasted: what it names, and that it is still good.
        status, answer = post(f"{database}/changes/zone?{query}", {"zones": [{"zoneID": {"zoneName": "Lists"}}]})
        assert status == 200, answer
        driver.get(f"{leader}/console#/change-token")
        wait.until(EC.presence_of_element_located((By.ID, "token-text")))
        driver.find_element(By.ID, "token-text").send_keys(answer["zones"][0]["syncToken"])
        driver.find_element(By.CSS_SELECTOR, "#token-form button").click()
        wait.until(EC.text_to_be_present_in_element((By.ID, "token-verdict"), "Valid"))
        described = driver.find_element(By.ID, "token-report").text
        assert "zone token" in described and "Lists" in described and "up to date" in described, described
        driver.save_screenshot(os.path.join(shots, "console-13-change-token.png"))

        # Credentials: an API token minted with an allowed origin, shown once, then revoked.
        driver.get(f"{leader}/console#/credentials")
        wait.until(EC.presence_of_element_located((By.ID, "mint-api-token")))
        tokens_before = len(driver.find_elements(By.CSS_SELECTOR, "#api-tokens tbody tr"))
        form = driver.find_element(By.ID, "mint-api-token")
        form.find_element(By.NAME, "container").send_keys(CONTAINER)
        form.find_element(By.NAME, "origins").send_keys("https://app.example.com")
        form.find_element(By.CSS_SELECTOR, "button").click()
        wait.until(EC.presence_of_element_located((By.ID, "minted-token")))
        assert len(driver.find_element(By.ID, "minted-token").text) == 64
        rows = driver.find_elements(By.CSS_SELECTOR, "#api-tokens tbody tr")
        assert len(rows) == tokens_before + 1, [row.text for row in rows]
        driver.save_screenshot(os.path.join(shots, "console-17-credentials.png"))
        next(row for row in rows if "app.example.com" in row.text).find_element(By.CSS_SELECTOR, "button.revoke").click()
        wait.until(lambda d: "app.example.com" not in d.execute_script(
            "return document.getElementById('api-tokens')?.innerText ?? ''"))

        # A write without the session's CSRF token: refused, and the session lives on.
        refused = driver.execute_async_script("""
            const done = arguments[arguments.length - 1];
            fetch('/console/session', {method: 'DELETE', credentials: 'same-origin'}).then(r => done(r.status));
        """)
        assert refused == 403, f"a DELETE without the CSRF token answered {refused}"
        # The cookie is the server's alone: no script reads it.
        assert "cumulus_console" not in driver.execute_script("return document.cookie")

        driver.find_element(By.ID, "signout").click()
        wait.until(EC.visibility_of_element_located((By.ID, "signin-form")))

        # A user who is no operator signs in, and is refused the operators' pages.
        sign_in(driver, wait, USER, PASSWORD)
        wait.until(EC.text_to_be_present_in_element((By.ID, "page-error"), "operators"))
        driver.get(f"{leader}/console#/cluster")
        wait.until(EC.text_to_be_present_in_element((By.ID, "page-error"), "the node's pages are for operators"))
        driver.save_screenshot(os.path.join(shots, "console-4-user-refused.png"))
        print("console in the browser: 1 passed, 0 failed")
        return 0
    except Exception as error:  # the reason, then a failing exit
        traceback.print_exc()
        if driver is not None:
            driver.save_screenshot(os.path.join(shots, "console-failure.png"))
            print(driver.page_source[-2000:], file=sys.stderr)
            for line in driver.get_log("browser"):
                print(f"browser: {line.get('message')}", file=sys.stderr)
        print(f"console in the browser failed: {type(error).__name__}: {error}", file=sys.stderr)
        print("console in the browser: 0 passed, 1 failed")
        return 1
    finally:
        if driver is not None:
            driver.quit()
        stop(processes)
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
