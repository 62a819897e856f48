#!/usr/bin/python3
"""The console's records pages in headless Chromium (issue 45): a user signs in, creates a
zone and records, queries with a filter and a sort, follows a reference and sees its
referrers, edits into a conflict and resolves it side by side, and deletes an owner after
being told what the delete takes; an operator then acts as that user (recorded, read
only), and sees the cascade in a record's timeline.

A real `cumulus serve --console` answers on a loopback port; Selenium drives Debian's
chromium through chromium-driver. Screenshots of each step go to
.build/browser/records-*.png. Exits non-zero, with the reason, if any step fails.
"""
import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
import traceback
import urllib.request
from datetime import datetime, timedelta, timezone

from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import Select, WebDriverWait

from browser_support import arguments, chromium, fits_a_phone, free_port, post, run, sign_in, status_of, stop, token, wait_for

OPERATOR = "olivia"
USER = "bob"
CONTAINER = "iCloud.com.example.records"
PASSWORD = "correct horse battery"
# A 1x1 PNG, for an asset the record page previews.
PIXEL = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="


def add_field(driver, name, kind, value, action=None):
    """Adds a field row to the open editor and fills it."""
    driver.find_element(By.ID, "add-field").click()
    row = driver.find_elements(By.CSS_SELECTOR, "#editor-fields .field-row")[-1]
    row.find_element(By.CLASS_NAME, "field-name").send_keys(name)
    Select(row.find_element(By.CLASS_NAME, "field-type")).select_by_value(kind)
    row.find_element(By.CLASS_NAME, "field-value").send_keys(value)
    if action:
        Select(row.find_element(By.CLASS_NAME, "field-action")).select_by_value(action)


def full_page(driver, path):
    """A screenshot of the whole page, not only the window's part of it (DevTools)."""
    height = driver.execute_script("return document.documentElement.scrollHeight")
    shot = driver.execute_cdp_cmd("Page.captureScreenshot", {
        "captureBeyondViewport": True, "clip": {"x": 0, "y": 0, "width": 1280, "height": height, "scale": 1}})
    with open(path, "wb") as file:
        file.write(base64.b64decode(shot["data"]))


def scroll_to(driver, element_id):
    """Brings an element into the screenshot's view."""
    driver.execute_script("document.getElementById(arguments[0]).scrollIntoView({block: 'center'})", element_id)


def main():
    cumulus, shots = arguments()
    root = tempfile.mkdtemp(prefix="cumulus-records-")
    data = os.path.join(root, "data")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    process = None
    driver = None

    def shot(name):
        driver.save_screenshot(os.path.join(shots, f"records-{name}.png"))

    try:
        for name, extra in ((OPERATOR, ["--operator"]), (USER, [])):
            run(cumulus, "users", "add", "--data", data, "--name", name, *extra)
            run(cumulus, "users", "passwd", "--data", data, "--user", name, stdin=PASSWORD + "\n")
        api_token = token(run(cumulus, "tokens", "create", "--data", data, "--container", CONTAINER), "ckAPIToken")
        web_token = token(run(cumulus, "tokens", "create", "--data", data, "--user", USER, "--container", CONTAINER),
                          "ckWebAuthToken")
        database = f"{base}/database/1/{CONTAINER}/development/private"
        query = f"ckAPIToken={api_token}&ckWebAuthToken={web_token}"
        process = subprocess.Popen(
            [cumulus, "serve", "--data", data, "--host", "127.0.0.1", "--port", str(port), "--console"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for(lambda: status_of(f"{base}/healthz") == 200, "the server to listen")

        driver = chromium()
        # A page re-renders as it loads and after each change: a condition that met an
        # element just replaced is asked again, not failed.
        wait = WebDriverWait(driver, 120, ignored_exceptions=[StaleElementReferenceException])

        # A user signs in: the records page opens on the container's private database.
        driver.get(f"{base}/console")
        sign_in(driver, wait, USER, PASSWORD)
        wait.until(EC.presence_of_element_located((By.ID, "zones")))
        assert Select(driver.find_element(By.ID, "place-container")).first_selected_option.text == CONTAINER
        assert "_defaultZone" in driver.find_element(By.ID, "zones").text

        # A zone, made in the page; the URL moves to it.
        driver.find_element(By.ID, "new-zone").send_keys("Trip")
        driver.find_element(By.CSS_SELECTOR, "#create-zone button").click()
        wait.until(lambda d: "zone=Trip" in d.current_url)
        wait.until(EC.text_to_be_present_in_element((By.CSS_SELECTOR, "#zones li.current"), "Trip"))
        shot("1-zone")

        # Two records made in the page: an owner, and a place that goes with it.
        def create(record_type, name, fields):
            driver.find_element(By.ID, "query-type").clear()
            driver.find_element(By.ID, "query-type").send_keys(record_type)
            driver.find_element(By.ID, "new-record").click()
            wait.until(EC.presence_of_element_located((By.ID, "editor")))
            driver.find_element(By.ID, "editor-type").clear()
            driver.find_element(By.ID, "editor-type").send_keys(record_type)
            driver.find_element(By.ID, "editor-name").send_keys(name)
            for field in fields:
                add_field(driver, *field)
            driver.find_element(By.ID, "save-record").click()
            wait.until(EC.text_to_be_present_in_element((By.ID, "record-name"), name))

        create("Trip", "portugal", [("title", "STRING", "Portugal")])
        create_back = driver.find_element(By.LINK_TEXT, "← Records")
        create_back.click()
        wait.until(EC.presence_of_element_located((By.ID, "query")))
        create("Place", "lisbon", [("title", "STRING", "Lisbon"), ("rank", "INT64", "3"),
                                   ("trip", "REFERENCE", "portugal", "DELETE_SELF")])
        shot("2-record")
        # Two more through the Web Services API, as a client would.
        status, answer = post(f"{database}/records/modify?{query}", {"zoneID": {"zoneName": "Trip"}, "operations": [
            {"operationType": "create", "record": {"recordName": name, "recordType": "Place", "fields": {
                "title": {"value": title}, "rank": {"value": rank},
                "trip": {"value": {"recordName": "portugal", "action": "DELETE_SELF"}, "type": "REFERENCE"}}}}
            for name, title, rank in (("porto", "Porto", 1), ("faro", "Faro", 2))]})
        assert status == 200 and not any("serverErrorCode" in r for r in answer["records"]), answer
        status, answer = post(f"{database}/records/modify?{query}", {"zoneID": {"zoneName": "Trip"}, "operations": [
            {"operationType": "create", "record": {"recordName": "cloudkit.zoneshare", "recordType": "cloudkit.share",
             "fields": {}, "participants": [{"userIdentity": {"userRecordName": OPERATOR}, "permission": "READ_WRITE"}]}}]})
        assert status == 200 and "serverErrorCode" not in answer["records"][0], answer
        status, answer = post(f"{database}/subscriptions/modify?{query}", {"operations": [{"operationType": "create",
            "subscription": {"subscriptionID": "places-watch", "subscriptionType": "query",
                             "query": {"recordType": "Place"}, "firesOn": ["create", "update"]}}]})
        assert status == 200, answer

        # An asset: uploaded as a client does, then downloadable and previewed on its record.
        status, answer = post(f"{database}/assets/upload?{query}", {"zoneID": {"zoneName": "Trip"},
            "tokens": [{"recordName": "photo", "recordType": "Photo", "fieldName": "image"}]})
        assert status == 200, answer
        upload = urllib.request.Request(answer["tokens"][0]["url"], data=base64.b64decode(PIXEL))
        with urllib.request.urlopen(upload, timeout=30) as uploaded:
            file = json.loads(uploaded.read())["singleFile"]
        status, answer = post(f"{database}/records/modify?{query}", {"zoneID": {"zoneName": "Trip"}, "operations": [
            {"operationType": "create", "record": {"recordName": "photo", "recordType": "Photo", "fields": {
                "image": {"type": "ASSETID", "value": {key: file[key] for key in ("fileChecksum", "size", "receipt")}}}}}]})
        assert status == 200 and "serverErrorCode" not in answer["records"][0], answer
        driver.get(f"{base}/console#/record?container={CONTAINER}&zone=Trip&name=photo")
        wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, "#record-fields img.preview")))
        wait_for(lambda: driver.execute_script(
            "const i = document.querySelector('#record-fields img.preview'); return i && i.complete && i.naturalWidth > 0"),
            "the asset's preview to load", timeout=60)
        assert "download (" in driver.find_element(By.ID, "record-fields").text
        shot("2b-asset")
        driver.back()
        wait.until(EC.text_to_be_present_in_element((By.ID, "record-name"), "lisbon"))

        # A query with a filter and a sort, offered from the schema's indexes; the
        # user's subscription listed beside.
        driver.find_element(By.LINK_TEXT, "← Records").click()
        wait.until(EC.presence_of_element_located((By.ID, "query")))
        wait.until(EC.text_to_be_present_in_element((By.ID, "subscriptions"), "places-watch"))
        shares = driver.find_element(By.ID, "shares").text
        assert "the whole zone" in shares and f"{OPERATOR}: READ_WRITE" in shares, shares
        assert "Place" in driver.find_element(By.ID, "subscriptions").text
        driver.find_element(By.ID, "query-type").clear()
        driver.find_element(By.ID, "query-type").send_keys("Place")
        driver.find_element(By.ID, "add-filter").click()
        row = driver.find_element(By.CSS_SELECTOR, "#query-filters .filter-row")
        Select(row.find_element(By.CLASS_NAME, "filter-field")).select_by_value("rank")
        Select(row.find_element(By.CLASS_NAME, "filter-comparator")).select_by_value("GREATER_THAN")
        row.find_element(By.CLASS_NAME, "filter-value").send_keys("1")
        Select(driver.find_element(By.ID, "query-sort")).select_by_value("rank")
        Select(driver.find_element(By.ID, "query-order")).select_by_value("desc")
        driver.find_element(By.ID, "run-query").click()
        wait.until(EC.text_to_be_present_in_element((By.ID, "results-status"), "2 records"))
        names = [cell.text for cell in driver.find_elements(By.CSS_SELECTOR, "#results tbody tr td:first-child")]
        assert names == ["lisbon", "faro"], names
        assert "filter=rank%7CGREATER_THAN%7C1" in driver.current_url, driver.current_url
        # The whole page, as the README shows it (Docs/console.png is a copy of one).
        full_page(driver, os.path.join(shots, "records-3-query-full.png"))
        scroll_to(driver, "results")
        shot("3-query")
        driver.set_window_size(390, 844)
        fits_a_phone(driver, "the records page")
        shot("4-query-phone")
        scroll_to(driver, "shares")
        shot("4b-shares-phone")
        scroll_to(driver, "results")
        shot("4c-results-phone")
        driver.set_window_size(1280, 800)

        # A record, then its reference to its owner, whose page names every referrer.
        driver.find_element(By.LINK_TEXT, "lisbon").click()
        wait.until(EC.text_to_be_present_in_element((By.ID, "record-name"), "lisbon"))
        fields = driver.find_element(By.ID, "record-fields").text
        assert "INT64" in fields and "Lisbon" in fields and "portugal (DELETE_SELF)" in fields, fields
        driver.find_element(By.CSS_SELECTOR, "#record-fields a.reference").click()
        wait.until(EC.text_to_be_present_in_element((By.ID, "record-name"), "portugal"))
        wait.until(EC.presence_of_element_located((By.ID, "referrers")))
        referrers = driver.find_element(By.ID, "referrers").text
        assert all(name in referrers for name in ("lisbon", "porto", "faro")), referrers
        shot("5-referrers")

        # An edit that meets a change made meanwhile: both sides shown, mine kept.
        driver.find_element(By.LINK_TEXT, "lisbon").click()
        wait.until(EC.text_to_be_present_in_element((By.ID, "record-name"), "lisbon"))
        driver.find_element(By.ID, "edit-record").click()
        wait.until(EC.presence_of_element_located((By.ID, "editor")))
        status, answer = post(f"{database}/records/modify?{query}", {"zoneID": {"zoneName": "Trip"}, "operations": [
            {"operationType": "forceUpdate", "record": {"recordName": "lisbon", "recordType": "Place",
                                                        "fields": {"title": {"value": "Lisboa"}}}}]})
        assert status == 200, answer
        title = next(row for row in driver.find_elements(By.CSS_SELECTOR, "#editor-fields .field-row")
                     if row.find_element(By.CLASS_NAME, "field-name").get_attribute("value") == "title")
        title.find_element(By.CLASS_NAME, "field-value").clear()
        title.find_element(By.CLASS_NAME, "field-value").send_keys("Lisbon, mine")
        driver.find_element(By.ID, "save-record").click()
        wait.until(EC.presence_of_element_located((By.ID, "conflict")))
        side_by_side = driver.find_element(By.ID, "conflict-fields").text
        assert "Lisbon, mine" in side_by_side and "Lisboa" in side_by_side, side_by_side
        scroll_to(driver, "conflict")
        shot("6-conflict")
        driver.find_element(By.ID, "resolve-conflict").click()
        wait.until(EC.invisibility_of_element_located((By.ID, "conflict")))
        wait.until(EC.text_to_be_present_in_element((By.ID, "record-fields"), "Lisbon, mine"))

        # Deleting the owner: told first that it takes its three places, then done.
        driver.find_element(By.CSS_SELECTOR, "#record-fields a.reference").click()
        wait.until(EC.text_to_be_present_in_element((By.ID, "record-name"), "portugal"))
        driver.find_element(By.ID, "delete-record").click()
        wait.until(EC.text_to_be_present_in_element((By.ID, "deletion-count"), "deletes 4 records"))
        assert all(name in driver.find_element(By.ID, "deletion-records").text for name in ("lisbon", "porto", "faro"))
        shot("7-deletion")
        # The last moment before the delete, for "as of" below: the delete's commit is
        # stamped after it, since the click comes once the clock has moved past it.
        before_delete = datetime.now(timezone.utc)
        wait_for(lambda: datetime.now(timezone.utc) > before_delete + timedelta(milliseconds=2), "the clock to move on")
        driver.find_element(By.ID, "confirm-delete").click()
        wait.until(lambda d: "#/records" in d.current_url)
        wait.until(EC.presence_of_element_located((By.ID, "results-status")))
        wait.until(EC.text_to_be_present_in_element((By.ID, "results-status"), "0 records"))

        # A user is refused the operators' pages.
        driver.get(f"{base}/console#/acting")
        wait.until(EC.text_to_be_present_in_element((By.ID, "page-error"), "operators"))
        driver.find_element(By.ID, "signout").click()
        wait.until(EC.visibility_of_element_located((By.ID, "signin-form")))

        # An operator acts as the user: recorded, read only, and sees what they see.
        driver.get(f"{base}/console#/acting")
        sign_in(driver, wait, OPERATOR, PASSWORD)
        wait.until(EC.presence_of_element_located((By.ID, "act-form")))
        driver.find_element(By.ID, "act-user").send_keys(USER)
        driver.find_element(By.CSS_SELECTOR, "#act-form button").click()
        wait.until(EC.text_to_be_present_in_element((By.ID, "acting"), f"Acting as {USER}"))
        wait.until(EC.presence_of_element_located((By.ID, "zones")))
        assert "Trip" in driver.find_element(By.ID, "zones").text, "the operator sees the user's zones"
        refused = driver.execute_async_script(f"""
            const done = arguments[arguments.length - 1];
            const session = await (await fetch('/console/session')).json();
            const answer = await fetch('/console/database/1/{CONTAINER}/development/private/zones/modify', {{
              method: 'POST', credentials: 'same-origin',
              headers: {{'Content-Type': 'application/json', 'X-Cumulus-CSRF': session.csrf}},
              body: JSON.stringify({{operations: [{{operationType: 'create', zone: {{zoneID: {{zoneName: 'Sneaky'}}}}}}]}})}});
            done(answer.status);
        """)
        assert refused == 403, f"a write while acting answered {refused}"
        shot("8-acting")
        driver.get(f"{base}/console#/acting")
        wait.until(EC.presence_of_element_located((By.ID, "acting-records")))
        recorded = driver.find_element(By.ID, "acting-records").text
        assert OPERATOR in recorded and USER in recorded, recorded
        shot("9-acting-recorded")

        # As of the moment before the delete, the places are there again, read only.
        driver.get(f"{base}/console#/records?container={CONTAINER}&zone=Trip&type=Place")
        wait.until(EC.text_to_be_present_in_element((By.ID, "results-status"), "0 records"))
        point = before_delete.isoformat(timespec="milliseconds").replace("+00:00", "Z")
        driver.find_element(By.ID, "as-of-point").send_keys(point)
        driver.find_element(By.CSS_SELECTOR, "#as-of-form button").click()
        wait.until(EC.presence_of_element_located((By.ID, "as-of")))
        wait.until(EC.text_to_be_present_in_element((By.ID, "results-status"), "3 records"))
        names = sorted(cell.text for cell in driver.find_elements(By.CSS_SELECTOR, "#results tbody tr td:first-child"))
        assert names == ["faro", "lisbon", "porto"], names
        assert "asOf=" in driver.current_url and "read only" in driver.find_element(By.ID, "as-of").text
        scroll_to(driver, "results")
        shot("10-as-of")
        driver.find_element(By.LINK_TEXT, "lisbon").click()
        wait.until(EC.text_to_be_present_in_element((By.ID, "record-fields"), "Lisbon, mine"))
        assert not driver.find_elements(By.ID, "edit-record"), "the past is not edited"
        driver.find_element(By.ID, "back-to-now").click()
        wait.until(EC.text_to_be_present_in_element((By.ID, "record-error"), "lisbon"))

        # The cascade in a record's timeline, linked to the owner whose deletion took it.
        driver.get(f"{base}/console#/history?record=lisbon&zone=Trip")
        wait.until(EC.text_to_be_present_in_element((By.ID, "history-summary"), "deleted"))
        timeline = driver.find_element(By.ID, "history-versions").text
        assert "cascade" in timeline, timeline
        driver.find_element(By.LINK_TEXT, next(link.text for link in driver.find_elements(
            By.CSS_SELECTOR, "#history-versions a") if "cascade" in link.text)).click()
        wait.until(EC.text_to_be_present_in_element((By.ID, "history-summary"), "portugal"))
        shot("11-cascade-timeline")
        driver.find_element(By.ID, "stop-acting").click()
        wait.until(EC.invisibility_of_element_located((By.ID, "acting")))
        print("records in the browser: 1 passed, 0 failed")
        return 0
    except Exception as error:  # the reason, then a failing exit
        traceback.print_exc()
        if driver is not None:
            shot("failure")
            print(driver.page_source[-3000:], file=sys.stderr)
            for line in driver.get_log("browser"):
                print(f"browser: {line.get('message')}", file=sys.stderr)
        print(f"records in the browser failed: {type(error).__name__}: {error}", file=sys.stderr)
        print("records in the browser: 0 passed, 1 failed")
        return 1
    finally:
        if driver is not None:
            driver.quit()
        stop([process] if process is not None else [])
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
