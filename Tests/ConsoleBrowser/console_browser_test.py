"""The analyst console in headless Chromium (Debian) driven by Selenium.

Run by scripts/test-console, which starts issuerd over a seeded database and passes:
ISSUERD_CONSOLE_URL, ISSUERD_CONSOLE_KEY (analyst), ISSUERD_CONSOLE_IVR_KEY, ISSUERD_CONSOLE_VERSION,
ISSUERD_CONSOLE_RULES_DIR (the server's copy of the rules), ISSUERD_CONSOLE_SCREENSHOTS,
ISSUERD_CONSOLE_SERVER_LOG and ISSUERD_DATABASE_URL (checked with psql).
Every check compares what the page shows with what the database holds.
"""
import json
import os
import re
import secrets
import string
import subprocess
import sys
import time
import traceback
import urllib.error
import urllib.request
from datetime import datetime, timedelta, timezone

os.environ.setdefault("SE_OFFLINE", "true")  # never let Selenium Manager download anything
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import Select, WebDriverWait

BASE = os.environ["ISSUERD_CONSOLE_URL"]
KEY = os.environ["ISSUERD_CONSOLE_KEY"]
IVR_KEY = os.environ["ISSUERD_CONSOLE_IVR_KEY"]
VERSION = os.environ["ISSUERD_CONSOLE_VERSION"]
RULES_DIR = os.environ["ISSUERD_CONSOLE_RULES_DIR"]
SHOTS = os.environ["ISSUERD_CONSOLE_SCREENSHOTS"]
SERVER_LOG = os.environ["ISSUERD_CONSOLE_SERVER_LOG"]
DATABASE = os.environ["ISSUERD_DATABASE_URL"]


def sql(query):
    """One value (or row, '|'-separated) from the database."""
    return subprocess.run(["psql", "-X", "-qtA", "-d", DATABASE, "-c", query], check=True, capture_output=True, text=True).stdout.strip()


def iso(moment):
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def make_driver():
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--window-size=1360,1000",
                     "--disable-extensions", "--no-first-run", "--force-device-scale-factor=1"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(executable_path="/usr/bin/chromedriver"), options=options)


class Console:
    def __init__(self):
        self.driver = make_driver()
        self.wait = WebDriverWait(self.driver, 20)
        # Whole seeded hours, so the page's period and the SQL below cover the same attempts.
        now = datetime.now(timezone.utc).replace(minute=0, second=0, microsecond=0)
        self.until = now + timedelta(hours=1)
        self.since = now - timedelta(days=3)

    def open(self, path):
        self.driver.get(BASE + path)

    def css(self, selector):
        return self.wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, selector)))

    def all(self, selector):
        return self.driver.find_elements(By.CSS_SELECTOR, selector)

    def fetch(self, method, path, headers=None, body=None):
        """A fetch() from the page (same origin, the session cookie attached by the browser)."""
        return self.driver.execute_async_script(
            """
            const [method, path, headers, body, done] = arguments;
            fetch(path, {method, headers, body, credentials: 'same-origin'})
              .then(async (r) => done({status: r.status, body: await r.text()}))
              .catch((e) => done({status: 0, body: String(e)}));
            """, method, path, headers or {}, body)

    def sign_in(self, key):
        self.open("/console/sign-in")
        field = self.css("#key")
        field.clear()
        field.send_keys(key)
        self.css("#sign-in").click()

    def session_count(self):
        return int(sql("SELECT count(*) FROM console_sessions"))


def check(condition, message):
    if not condition:
        raise AssertionError(message)


def test_sign_in_refusals(c):
    c.open("/console/rules")
    c.wait.until(EC.url_contains("/console/sign-in"))
    check("next=/console/rules" in c.driver.current_url, "an unsigned visit is sent to sign in, keeping the page: " + c.driver.current_url)
    c.sign_in("isk_000000000000_" + "x" * 43)
    message = c.css("#message .error").text
    check("unknown or revoked" in message, "a wrong key is refused with a clear message: " + message)
    c.sign_in(IVR_KEY)
    message = c.wait.until(lambda d: d.find_element(By.CSS_SELECTOR, "#message .error").text if "analyst" in d.find_element(By.CSS_SELECTOR, "#message").text else False)
    check("analyst and admin" in message, "an ivr key may not sign in: " + message)
    check(c.session_count() == 0, "refused sign-ins create no session")
    request = urllib.request.Request(BASE + "/v1/admin/rules", headers={"Authorization": "Bearer " + IVR_KEY})
    try:
        urllib.request.urlopen(request)
        check(False, "an ivr key may not read the analyst routes")
    except urllib.error.HTTPError as error:
        check(error.code == 403, "a key of another role is refused with 403: %d" % error.code)
    log = open(SERVER_LOG).read()
    check("console sign-in refused" in log, "refusals are logged")
    check(re.search(r'"API key refused".*"reason":"role"', log) or re.search(r'"reason":"role".*"API key refused"', log),
          "a role refusal is logged with its reason")
    check(KEY not in log and IVR_KEY not in log and "x" * 43 not in log, "no key reaches the log")


def test_sign_in(c):
    c.sign_in(KEY)
    c.wait.until(EC.url_to_be(BASE + "/console/rules"))
    check(c.session_count() == 1, "one session row after signing in")
    cookie = c.driver.get_cookie("issuerd_console")
    check(cookie and cookie["httpOnly"] and cookie.get("sameSite") == "Strict", "the cookie is HttpOnly and SameSite=Strict: %r" % cookie)
    check(not cookie.get("secure"), "plain HTTP on loopback: no Secure flag (ISSUERD_CONSOLE_SECURE_COOKIES=auto)")
    check(c.driver.execute_script("return document.cookie").find("issuerd_console") < 0, "scripts cannot read the session cookie")
    check("browser analyst" in c.css("#user").text, "the signed-in analyst is named in the header")


def test_ruleset(c):
    c.open("/console/rules")
    check(c.css("#version").text == VERSION, "the live version is the one `issuerd rules check` computes")
    c.css("#rules-table tbody tr")
    rows = c.all("#rules-table tbody tr")
    expected = subprocess.run([os.path.join(os.getcwd(), ".build/debug/issuerd"), "rules", "check", "rules"], capture_output=True, text=True).stdout
    count = int(re.search(r"OK, (\d+) rules", expected).group(1))
    check(len(rows) == count, "every rule is listed: %d shown, %d in the ruleset" % (len(rows), count))
    crowded = c.css('#rules-table tr[data-rule="device.crowded"]').text
    check("shadow" in crowded and "yellow" in crowded and "policy/device.rules:" in crowded and "fraud_ops" in crowded,
          "a rule shows mode, outcome, owner and file:line: " + crowded)
    check("No reload on this instance" in c.css("#reload-ok").text, "no reload yet since start-up: " + c.css("#reload-ok").text)
    check(c.css('#rules-table tr[data-rule="device.blocked"]').find_elements(By.TAG_NAME, "td")[3].text == "—",
          "an orange rule offers no step-up")
    c.driver.save_screenshot(os.path.join(SHOTS, "console-ruleset.png"))


BROKEN = """rule browser.broken
  title   "A rule file the browser test breaks"
  outcome purple
  reason  BROKEN
  owner   browser_test
  when    request.channel == "tsp"
end
"""


def ruleset_panel(c, selector, contains, seconds=30):
    """Reloads the Ruleset page until `selector` shows `contains` (the server's file watcher
    reloads about a second after a rule file changes)."""
    deadline = datetime.now() + timedelta(seconds=seconds)
    while True:
        c.open("/console/rules")
        c.css("#version")
        panels = c.all(selector)
        if panels and contains in panels[0].text:
            return panels[0].text
        if datetime.now() > deadline:
            raise AssertionError("%s never showed %r: %s" % (selector, contains, [p.text for p in c.all(".panel")][:2]))
        time.sleep(0.5)


def test_failed_reload(c):
    broken = os.path.join(RULES_DIR, "policy", "zz_browser_broken.rules")
    with open(broken, "w") as handle:
        handle.write(BROKEN)
    try:
        shown = ruleset_panel(c, "#reload-failure", "zz_browser_broken.rules")
        check("policy/zz_browser_broken.rules:3:" in shown, "the failed reload names the file and line: " + shown)
        check("watcher via watcher" in shown and "keeps serving" in shown, "who reloaded, and that the version kept serving: " + shown)
        check(c.css("#version").text == VERSION, "the refused files changed nothing")
        check("rules reload failed" in open(SERVER_LOG).read(), "the refusal is logged")
    finally:
        os.remove(broken)
    shown = ruleset_panel(c, "#reload-ok", "unchanged")
    check("watcher via watcher" in shown, "the next reload, back to the same files, is shown with who ran it: " + shown)
    audited = sql("SELECT count(*) FROM audit_log WHERE action = 'rules.reloaded' AND subject = 'ruleset:%s'" % VERSION)
    check(int(audited) >= 1, "the successful reload is audited")


def test_decisions(c):
    path = "/console/decisions?since=%s&until=%s&channel=tsp&network=visa" % (iso(c.since), iso(c.until))
    c.open(path)
    c.css("#totals .tile.green")
    expected = dict(line.split("|") for line in sql(
        "SELECT flow, count(*) FROM provisioning_attempts WHERE created_at >= '%s' AND created_at < '%s' AND channel = 'tsp' "
        "AND inputs ->> 'card.network' = 'visa' GROUP BY flow" % (iso(c.since), iso(c.until))).splitlines())
    for flow in ("green", "yellow", "orange"):
        shown = c.css("#totals .tile.%s" % flow).get_attribute("data-count")
        check(int(shown) == int(expected.get(flow, 0)), "%s attempts, tsp and visa: page %s, database %s" % (flow, shown, expected.get(flow, 0)))
    bars = c.all("#chart rect.bar")
    check(len(bars) > 24, "the chart draws a bar per flow and hour: %d" % len(bars))
    # Every hour of the chart against the database, flow by flow.
    stored = {}
    for line in sql(
            "SELECT to_char(date_trunc('hour', created_at, 'UTC'), 'YYYY-MM-DD\"T\"HH24'), flow, count(*) FROM provisioning_attempts "
            "WHERE created_at >= '%s' AND created_at < '%s' AND channel = 'tsp' AND inputs ->> 'card.network' = 'visa' GROUP BY 1, 2"
            % (iso(c.since), iso(c.until))).splitlines():
        hour, flow, count = line.split("|")
        stored[(hour, flow)] = int(count)
    hours = c.all("#chart g.hour")
    check(len(hours) == 3 * 24 + 1, "one group per hour of the period: %d" % len(hours))
    for group in hours:
        hour = group.get_attribute("data-hour")[:13]
        for flow in ("green", "yellow", "orange"):
            shown = int(group.get_attribute("data-" + flow))
            check(shown == stored.get((hour, flow), 0), "%s %s: chart %d, database %d" % (hour, flow, shown, stored.get((hour, flow), 0)))
    # Unfiltered, last 3 days, for the docs' screenshot.
    c.open("/console/decisions?since=%s&until=%s" % (iso(c.since), iso(c.until)))
    total = int(sql("SELECT count(*) FROM provisioning_attempts WHERE created_at >= '%s' AND created_at < '%s'" % (iso(c.since), iso(c.until))))
    shown = sum(int(c.css("#totals .tile.%s" % flow).get_attribute("data-count")) for flow in ("green", "yellow", "orange"))
    check(shown == total, "all channels: page %d, database %d" % (shown, total))
    c.driver.save_screenshot(os.path.join(SHOTS, "console.png"))
    # From a custom period back to a range: choosing it clears since and until.
    Select(c.css("select[name=range]")).select_by_value("7d")
    check(c.css("[name=since]").get_attribute("value") == "" and c.css("[name=until]").get_attribute("value") == "", "a range clears since/until")
    c.css("form.filters button[type=submit]").click()
    c.wait.until(EC.url_contains("range=7d"))
    check("since=" not in c.driver.current_url, "the range is what is asked for: " + c.driver.current_url)
    c.css("#totals .tile.green")


def test_rule_hits(c):
    c.open("/console/rule-hits?since=%s&until=%s" % (iso(c.since), iso(c.until)))
    c.css("#live-hits")
    window = "a.created_at >= '%s' AND a.created_at < '%s'" % (iso(c.since), iso(c.until))
    hits = "FROM provisioning_attempts a, jsonb_array_elements(a.hits) h WHERE " + window
    for rule in ("customer.name_mismatch", "velocity.card_burst", "device.blocked"):
        row = c.css('#live-hits tr[data-rule="%s"]' % rule)
        expected = int(sql("SELECT count(*) %s AND h ->> 'rule' = '%s'" % (hits, rule)))
        check(int(row.get_attribute("data-hits")) == expected, "%s hits: page %s, database %d" % (rule, row.get_attribute("data-hits"), expected))
    # velocity.card_burst is the only orange hit of its attempts: each one decided the flow;
    # customer.name_mismatch beside device.blocked did not.
    burst = c.css('#live-hits tr[data-rule="velocity.card_burst"]')
    check(burst.get_attribute("data-changed") == burst.get_attribute("data-hits"), "a lone orange hit changed the flow every time")
    mismatch = c.css('#live-hits tr[data-rule="customer.name_mismatch"]')
    expected = int(sql("SELECT count(*) %s AND h ->> 'rule' = 'customer.name_mismatch' AND a.flow = 'yellow'" % hits))
    check(int(mismatch.get_attribute("data-changed")) == expected, "name_mismatch decided only its yellow attempts: page %s, database %d"
          % (mismatch.get_attribute("data-changed"), expected))
    crowded = c.css('#shadow-hits tr[data-rule="device.crowded"]')
    expected = int(sql("SELECT count(*) %s AND h ->> 'rule' = 'device.crowded' AND a.flow = 'green'" % hits))
    check(int(crowded.get_attribute("data-would")) == expected, "shadow device.crowded would move green attempts to yellow: page %s, database %d"
          % (crowded.get_attribute("data-would"), expected))
    c.driver.save_screenshot(os.path.join(SHOTS, "console-rule-hits.png"))
    # Drilling down: a rule's row opens the attempts it hit over the same period, newest first,
    # page by page; each page against the database's own list.
    c.css('#live-hits tr[data-rule="device.blocked"] a.rule-attempts').click()
    c.wait.until(EC.url_contains("/console/attempts?"))
    check("rule=device.blocked" in c.driver.current_url, "the link filters by the rule: " + c.driver.current_url)
    listed = ("SELECT attempt_id FROM provisioning_attempts a WHERE %s AND a.hits @> '[{\"rule\":\"device.blocked\"}]' "
              "ORDER BY a.created_at DESC, a.attempt_id DESC" % window)
    expected = sql(listed + " LIMIT 100").splitlines()
    check(len(expected) == 100, "the seed gives device.blocked more than two pages: %d" % len(expected))
    rows = c.wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#attempts-table tbody tr"))
    shown = [row.get_attribute("data-attempt") for row in rows]
    check(shown == expected[:50], "first page of device.blocked's attempts: page %s…, database %s…" % (shown[:2], expected[:2]))
    c.css("#next-page").click()
    c.wait.until(EC.url_contains("cursor="))
    rows = c.wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#attempts-table tbody tr"))
    shown = [row.get_attribute("data-attempt") for row in rows]
    check(shown == expected[50:], "second page of device.blocked's attempts: page %s…, database %s…" % (shown[:2], expected[50:52]))
    export = c.css("#export-csv").get_attribute("href")
    check("format=csv" in export and "rule=device.blocked" in export and "cursor" not in export, "the export lists the same filter: " + export)
    total = int(sql("SELECT count(*) FROM (%s) l" % listed))
    fetched = c.fetch("GET", export[export.index("/v1/"):])
    lines = [line for line in fetched["body"].split("\r\n") if line]
    check(fetched["status"] == 200 and len(lines) == total + 1, "the CSV holds every attempt of the filter: %d lines, database %d" % (len(lines), total))
    # And from the Decisions page: the orange tile lists the orange attempts of its period.
    c.open("/console/decisions?since=%s&until=%s&channel=tsp" % (iso(c.since), iso(c.until)))
    c.css("#totals a.tile.orange").click()
    c.wait.until(EC.url_contains("flow=orange"))
    rows = c.wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#attempts-table tbody tr"))
    expected = sql("SELECT attempt_id FROM provisioning_attempts a WHERE %s AND flow = 'orange' AND channel = 'tsp' "
                   "ORDER BY a.created_at DESC, a.attempt_id DESC LIMIT 50" % window).splitlines()
    check([row.get_attribute("data-attempt") for row in rows] == expected, "the orange tile's attempts match the database's")


def test_attempts(c):
    card, last_four = sql("SELECT c.card_id, c.last_four FROM cards c JOIN provisioning_attempts a ON a.card_id = c.card_id "
                          "GROUP BY 1, 2 HAVING count(*) > 1 ORDER BY 1 LIMIT 1").split("|")
    c.open("/console/attempts?q=" + last_four)
    rows = c.wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#attempts-table tbody tr"))
    expected = int(sql("SELECT count(*) FROM provisioning_attempts WHERE card_id IN (SELECT card_id FROM cards WHERE last_four = '%s')" % last_four))
    check(len(rows) == min(50, expected), "attempts of cards ending in %s: page %d, database %d" % (last_four, len(rows), expected))
    check(all(("•••• " + last_four) in row.text for row in rows), "each row shows the last four only")
    device = sql("SELECT device_id FROM provisioning_attempts WHERE device_id IS NOT NULL ORDER BY created_at DESC LIMIT 1")
    for query in (card, sql("SELECT customer_id FROM cards WHERE card_id = '%s'" % card), device):
        c.open("/console/attempts?q=" + query)
        rows = c.wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#attempts-table tbody tr"))
        expected = int(sql("SELECT count(*) FROM provisioning_attempts WHERE card_id = '%s' OR customer_id = '%s' OR device_id = '%s'"
                           % (query, query, query)))
        check(len(rows) == min(50, expected), "attempts for %s: page %d, database %d" % (query, len(rows), expected))
    # Times are shown in the console's time zone (scripts/test-console sets Asia/Seoul), with the offset.
    first = rows[0]
    stored = sql("SELECT to_char(created_at AT TIME ZONE 'Asia/Seoul', 'YYYY-MM-DD HH24:MI:SS') FROM provisioning_attempts "
                 "WHERE attempt_id = '%s'" % first.get_attribute("data-attempt"))
    shown = first.find_elements(By.CSS_SELECTOR, "td")[1].text
    check(shown == stored + " +09:00", "the attempt's time in Asia/Seoul with its offset: page %s, database %s +09:00" % (shown, stored))
    c.open("/console/attempts?q=nothing-matches-this")
    check(c.css("#no-attempts"), "an empty search says so")


def test_card_number_in_link(c):
    """A card number in a link's q is not put back anywhere: search box, title, page, address bar."""
    for q in ("4111111111111111", "4111-1111-1111-1111", "4111%201111%201111%201111", "4111.1111.1111.1111x",
              "%EF%BC%94%EF%BC%91%EF%BC%91%EF%BC%91%EF%BC%91%EF%BC%91%EF%BC%91%EF%BC%91%EF%BC%91%EF%BC%91%EF%BC%91%EF%BC%91"):
        c.open("/console/attempts?q=" + q + "&limit=5")
        c.wait.until(lambda d: d.find_element(By.ID, "pan-refused").text)
        rows = c.wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#attempts-table tbody tr, #no-attempts"))
        check(rows, "the newest attempts are listed instead (%s)" % q)
        check(c.css("#q").get_attribute("value") == "", "the search box is empty (%s)" % q)
        digits = re.sub(r"[^0-9\uFF10-\uFF19]", "", c.driver.page_source + c.driver.title + c.driver.current_url)
        check("411111111111" not in digits.replace("\uFF14", "4").replace("\uFF11", "1"),
              "no card number in the page, its title or its address (%s)" % q)
        check("q=" not in c.driver.current_url, "the address bar lost q (%s): %s" % (q, c.driver.current_url))


def test_attempt_page(c):
    attempt = sql("SELECT attempt_id FROM provisioning_attempts WHERE flow = 'orange' AND jsonb_array_length(hits) >= 2 LIMIT 1")
    c.open("/console/attempts?q=" + attempt)
    c.css("#attempts-table a").click()
    c.wait.until(EC.url_contains("/console/attempts/" + attempt))
    check(c.css("#flow").text == sql("SELECT flow FROM provisioning_attempts WHERE attempt_id = '%s'" % attempt), "the flow is the stored one")
    check(c.css("#ruleset-version").text == VERSION, "the deciding version is shown")
    rules = sql("SELECT string_agg(h ->> 'rule', ',' ORDER BY h ->> 'rule') FROM provisioning_attempts a, jsonb_array_elements(a.hits) h "
                "WHERE attempt_id = '%s'" % attempt).split(",")
    shown = sorted(row.get_attribute("data-rule") for row in c.all("#hits-table tbody tr"))
    check(shown == rules, "every hit is explained: page %s, database %s" % (shown, rules))
    check("device.id = seed-dev" in c.css("#hits-table").text, "the values a rule read are shown")
    check(c.css("#methods").text.startswith("none"), "an orange attempt offered no step-up")
    c.driver.save_screenshot(os.path.join(SHOTS, "console-attempt.png"))
    yellow, card, customer = sql("SELECT attempt_id, card_id, customer_id FROM provisioning_attempts "
                                 "WHERE flow = 'yellow' AND card_id IS NOT NULL LIMIT 1").split("|")
    c.open("/console/attempts/" + yellow)
    check(c.css("#methods").text == "sms, email", "a yellow attempt names the step-up methods offered")
    check("No one-time code was requested" in c.css("#step-up").text, "before any code: " + c.css("#step-up").text)
    # What happened to the step-up: the token the attempt created, a locked SMS code, then a verified e-mail one.
    sql("INSERT INTO tokens (token_reference, card_id, status, attempt_id) VALUES ('BROWSER-TOKEN', '%s', 'active', '%s')" % (card, yellow))
    sql("INSERT INTO challenges (challenge_id, token_reference, card_id, customer_id, method, destination_masked, key_version, status, "
        "failed_attempts, max_attempts, expires_at, created_at, verified_at) VALUES "
        "(gen_random_uuid(), 'BROWSER-TOKEN', '{0}', '{1}', 'sms', '+44 •••• ••12', 1, 'locked', 3, 3, now(), now() - interval '2 minutes', NULL), "
        "(gen_random_uuid(), 'BROWSER-TOKEN', '{0}', '{1}', 'email', 'c•••@example.test', 1, 'verified', 0, 3, now(), now() - interval '1 minute', now())"
        .format(card, customer))
    # Each code's delivery: the SMS refused by the handset's network, the e-mail taken by the relay.
    sql("INSERT INTO challenge_deliveries (challenge_id, state, provider, message_id, detail) "
        "SELECT challenge_id, CASE method WHEN 'sms' THEN 'undeliverable' ELSE 'sent' END, "
        "CASE method WHEN 'sms' THEN 'smpp' ELSE 'smtp' END, CASE method WHEN 'sms' THEN 'a1b2c3' ELSE 'Q42' END, "
        "CASE method WHEN 'sms' THEN 'SMS centre receipt: UNDELIV' END FROM challenges WHERE token_reference = 'BROWSER-TOKEN'")
    c.open("/console/attempts/" + yellow)
    panel = c.css("#step-up").text
    check("BROWSER-TOKEN (active)" in panel and "The cardholder completed a step-up." in panel, "the token and the outcome: " + panel)
    rows = [row.text for row in c.all("#step-up tbody tr")]
    stored = sql("SELECT string_agg(method || ' ' || status || ' ' || failed_attempts, ',' ORDER BY created_at) FROM challenges "
                 "WHERE token_reference = 'BROWSER-TOKEN'").split(",")
    check(len(rows) == len(stored) and all(m in row and st in row and n in row for row, (m, st, n) in zip(rows, (x.split(" ") for x in stored))),
          "each code sent, in order, as stored: page %r, database %r" % (rows, stored))
    check("undeliverable smpp a1b2c3" in rows[0] and "SMS centre receipt: UNDELIV" in rows[0] and "sent smtp Q42" in rows[1],
          "each code's delivery with its provider, message id and why: %r" % rows)
    body = c.css("body").text
    check(not re.search(r"\d{12,19}", body), "no card number on the page")
    c.open("/console/attempts/00000000-0000-0000-0000-000000000000")
    check("No such attempt" in c.css(".error").text, "an unknown attempt is a clear message")



def test_review_queue(c):
    """Walk the queue: list it, filter by an owner, open a case, take it, close it as fraud."""
    c.open("/console/cases")
    rows = c.wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#cases-table tbody tr"))
    expected = int(sql("SELECT count(*) FROM review_cases WHERE status = 'open'"))
    check(expected > 0 and len(rows) == min(100, expected), "open cases: page %d, database %d" % (len(rows), expected))
    oldest = sql("SELECT case_id FROM review_cases WHERE status = 'open' ORDER BY opened_at, case_id LIMIT 1")
    check(rows[0].get_attribute("data-case") == oldest, "oldest first: page %s, database %s" % (rows[0].get_attribute("data-case"), oldest))
    owner = sql("SELECT o FROM review_cases, unnest(owners) o WHERE status = 'open' GROUP BY o ORDER BY count(*) DESC, o LIMIT 1")
    c.css('#queues a[data-queue="owner:%s"]' % owner).click()
    c.wait.until(EC.url_contains("queue=owner"))
    rows = c.wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#cases-table tbody tr"))
    expected = int(sql("SELECT count(*) FROM review_cases WHERE status = 'open' AND '%s' = ANY(owners)" % owner))
    check(len(rows) == min(100, expected), "%s's queue: page %d, database %d" % (owner, len(rows), expected))
    case = rows[0].get_attribute("data-case")
    attempt = rows[0].get_attribute("data-attempt")
    rows[0].find_element(By.CSS_SELECTOR, "a").click()
    c.wait.until(EC.url_contains("/console/cases/" + case))
    hits = sorted(row.get_attribute("data-rule") for row in c.wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#case-hits tbody tr")))
    stored = sorted(sql("SELECT string_agg(h ->> 'rule', ',') FROM provisioning_attempts a, jsonb_array_elements(a.hits) h "
                        "WHERE attempt_id = '%s'" % attempt).split(","))
    check(hits == stored, "the rules that hit: page %s, database %s" % (hits, stored))
    c.css("#take").click()
    c.wait.until(lambda d: "You hold this case" in d.find_element(By.ID, "case-actions").text)
    holder = sql("SELECT assignee FROM review_cases WHERE case_id = %s" % case)
    check(holder.startswith("apikey:"), "the case is held by the signed-in analyst: " + holder)
    c.open("/console/cases?queue=mine")
    mine = [row.get_attribute("data-case") for row in c.wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#cases-table tbody tr"))]
    check(mine == [case], "my queue holds the case: %s" % mine)
    c.open("/console/cases/" + case)
    c.css("#note").send_keys("cardholder denies adding the card")
    c.css("#close-fraud").click()
    c.wait.until(lambda d: d.find_elements(By.ID, "case-outcome"))
    check(c.css("#case-outcome").text == "fraud", "the closed case shows its outcome")
    stored = sql("SELECT outcome || '|' || source || '|' || note FROM attempt_outcomes WHERE attempt_id = '%s' AND is_current" % attempt)
    check(stored == "fraud|analyst|cardholder denies adding the card", "the outcome was recorded on the attempt: " + stored)
    check(sql("SELECT status FROM review_cases WHERE case_id = %s" % case) == "closed", "the case is closed")
    # Closing it again is refused (409), from the page's own session.
    csrf = json.loads(c.fetch("GET", "/console/session")["body"])["csrfToken"]
    answer = c.fetch("POST", "/v1/admin/cases/%s/close" % case, {"Content-Type": "application/json", "X-CSRF-Token": csrf},
                     '{"outcome":"legitimate"}')
    check(answer["status"] == 409 and "case_closed" in answer["body"], "closing a closed case is 409: %s" % answer)
    c.driver.save_screenshot(os.path.join(SHOTS, "console-case.png"))
    # The Rule hits page now counts that fraud against the rules that decided the attempt.
    c.open("/console/rule-hits?since=%s&until=%s" % (iso(c.since), iso(c.until)))
    c.css("#performance")
    decided = sql("SELECT h ->> 'rule' FROM provisioning_attempts a, jsonb_array_elements(a.hits) h WHERE attempt_id = '%s' "
                  "AND coalesce(h ->> 'mode', 'live') = 'live' AND h ->> 'outcome' = a.flow LIMIT 1" % attempt)
    row = c.css('#performance-table tr[data-rule="%s"][data-mode="live"]' % decided)
    check(int(row.get_attribute("data-fraud")) >= 1, "%s decided a confirmed fraud" % decided)


def test_reissue_panel(c):
    """A case's card panel shows the card's reissue, old card to new, and each token's network, action and state,
    a refused move with its error; a case whose card was never reissued says so."""
    cases = "review_cases r JOIN provisioning_attempts a USING (attempt_id) JOIN cards k USING (card_id)"
    case, card = sql("SELECT r.case_id, k.card_id FROM %s ORDER BY r.opened_at DESC, r.case_id LIMIT 1" % cases).split("|")
    other = sql("SELECT r.case_id FROM %s WHERE k.card_id <> '%s' ORDER BY r.opened_at DESC LIMIT 1" % (cases, card))
    reissue, new_card = "6f1b3c9e-0d2a-4e5f-9a8b-7c6d5e4f3a21", card + "-r"
    sql("INSERT INTO cards (card_id, customer_id, pan_ciphertext, pan_key_version, pan_fingerprint, last_four, expiration, "
        "cardholder_name, payment_network, primary_account_identifier, country, status, created_at) "
        "SELECT '%s', customer_id, pan_ciphertext, pan_key_version, pan_fingerprint, last_four, '12/33', cardholder_name, "
        "payment_network, primary_account_identifier, country, 'inactive', now() FROM cards WHERE card_id = '%s'" % (new_card, card))
    sql("INSERT INTO card_reissues (reissue_id, reason, old_card_id, new_card_id, apply_at, notify_wallet, pan_changed, status, actor, "
        "created_at, applied_at) VALUES ('%s', 'lost', '%s', '%s', 'now', true, true, 'in_progress', 'browser test', now(), now())"
        % (reissue, card, new_card))
    tokens = {"DWSPMCBROWSER0000000000000000000000000000000000A1": ("mdes", "move", "confirmed", None, "mastercard"),
              "DWSPMCBROWSER0000000000000000000000000000000000A2": ("mdes", "move", "failed", "E0010020 Field does not match the schema", "mastercard"),
              "tsp-browser-token-3": ("tsp", "delete", "pending", None, "tsp")}
    for token, (service, action, state, error, _) in tokens.items():
        sql("INSERT INTO card_reissue_tokens (reissue_id, token_reference, service, action, state, error, updated_at) "
            "VALUES ('%s', '%s', '%s', '%s', '%s', %s, now())" % (reissue, token, service, action, state, "'%s'" % error if error else "NULL"))
    c.open("/console/cases/" + case)
    panel = c.css('#reissues .reissue[data-reissue="%s"]' % reissue)
    check("lost" in panel.text and "%s → %s" % (card, new_card) in panel.text and "in_progress" in panel.text,
          "the reissue's reason, cards and status: %r" % panel.text)
    rows = {row.get_attribute("data-token"): [cell.text for cell in row.find_elements(By.CSS_SELECTOR, "td")]
            for row in panel.find_elements(By.CSS_SELECTOR, "#reissue-tokens tbody tr")}
    check(sorted(rows) == sorted(tokens), "one row per token: %s" % sorted(rows))
    for token, (_, action, state, error, network) in tokens.items():
        check(rows[token] == [token, network, action, state, error or "–"], "%s: %s" % (token, rows[token]))
    check(panel.find_element(By.CSS_SELECTOR, '[data-token$="A2"] .badge').get_attribute("class") == "badge orange",
          "a failed move stands out")
    c.driver.save_screenshot(os.path.join(SHOTS, "console-case-reissue.png"))
    c.open("/console/cases/" + other)
    c.css("#case-actions")
    c.wait.until(lambda d: "Not reissued." in d.find_element(By.TAG_NAME, "main").text)
    check(not c.all("#reissues"), "a card never reissued shows no reissue")


CANDIDATE = """rule test.tsp_decline
  title   "Decline every TSP authorization"
  outcome orange
  reason  TEST_TSP
  owner   browser_test
  when    request.channel == "tsp"
end
"""


def run_backtest(c, text, since, until):
    prepared = open(SERVER_LOG).read().count("backtest period prepared")
    c.open("/console/backtest")
    # Opening the page reads its default period ahead (POST /v1/admin/rules/backtest/prepare).
    c.wait.until(lambda d: open(SERVER_LOG).read().count("backtest period prepared") > prepared)
    area = c.css("#files textarea")
    area.send_keys(text)
    c.css("[name=since]").send_keys(iso(since))
    c.css("[name=until]").send_keys(iso(until))
    c.css("#run").click()


def test_backtest(c):
    until = c.until
    since = until - timedelta(hours=6)
    run_backtest(c, CANDIDATE, since, until)
    report = WebDriverWait(c.driver, 120).until(EC.presence_of_element_located((By.ID, "backtest-report")))
    window = "created_at >= '%s' AND created_at < '%s'" % (iso(since), iso(until))
    total = int(sql("SELECT count(*) FROM provisioning_attempts WHERE " + window))
    tsp = int(sql("SELECT count(*) FROM provisioning_attempts WHERE channel = 'tsp' AND " + window))
    replayed = int(c.css("#replayed").get_attribute("data-count"))
    check(replayed == total, "every attempt of the window is replayed: page %d, database %d" % (replayed, total))
    candidate = {row.get_attribute("data-flow"): int(row.find_elements(By.TAG_NAME, "td")[2].text.replace(",", ""))
                 for row in c.all("#flows-table tbody tr")}
    check(candidate["orange"] == tsp, "the candidate declines exactly the TSP attempts: page %d, database %d" % (candidate["orange"], tsp))
    check(candidate["green"] + candidate["yellow"] == total - tsp, "and no other")
    check(len(c.all("#transitions-table tbody tr")) >= 1 and len(c.all("#examples-table tbody tr")) >= 1, "flow changes with example attempts")
    for row in c.all("#examples-table tbody tr"):
        channel = sql("SELECT channel FROM provisioning_attempts WHERE attempt_id = '%s'" % row.get_attribute("data-attempt"))
        check((row.get_attribute("data-after") == "orange") == (channel == "tsp"), "an example's new flow is orange exactly when it is a TSP attempt")
    c.driver.save_screenshot(os.path.join(SHOTS, "console-backtest.png"))
    # The run was a job with a progress bar; its changed attempts download as CSV: a line's new
    # flow is orange exactly when it is a TSP attempt, the card by its last four, no card number.
    changed = int(c.css("#changed").get_attribute("data-count"))
    link = c.css("#changed-csv")
    check(link.get_attribute("download") == "backtest-changed.csv", "the CSV is a download")
    answer = c.fetch("GET", link.get_attribute("href"))
    lines = [line for line in answer["body"].split("\r\n") if line]
    check(answer["status"] == 200 and lines[0] == "attempt_id,time,channel,card_last_four,before,after,rules",
          "the CSV starts with its header: %r" % answer["body"][:200])
    check(len(lines) == changed + 1, "one line per changed attempt: %d lines, %d changed" % (len(lines) - 1, changed))
    for line in lines[1:]:
        cells = line.split(",")
        check((cells[5] == "orange") == (cells[2] == "tsp") and re.fullmatch(r"[0-9]{4}", cells[3]),
              "a changed attempt turns orange exactly when it is a TSP one, with the card's last four: " + line)
        last_four = sql("SELECT c.last_four FROM provisioning_attempts a JOIN cards c USING (card_id) WHERE a.attempt_id = '%s'" % cells[0])
        check(cells[3] == last_four, "the last four are the card's: " + line)
        check(not re.search(r"\d(?:[ .-]?\d){11}", ",".join(cells[1:])), "no card number in a line: " + line)
    # The same candidate uploaded as a file instead of pasted: the same answer.
    upload = os.path.join(SHOTS, "tsp.rules")
    with open(upload, "w") as handle:
        handle.write(CANDIDATE)
    c.open("/console/backtest")
    c.css("#upload").send_keys(upload)
    c.wait.until(lambda d: d.find_element(By.CSS_SELECTOR, "#files .path").get_attribute("value") == "tsp.rules")
    c.css("[name=since]").send_keys(iso(since))
    c.css("[name=until]").send_keys(iso(until))
    c.css("#run").click()
    WebDriverWait(c.driver, 120).until(EC.presence_of_element_located((By.ID, "backtest-report")))  # as long as the first run may take
    uploaded = {row.get_attribute("data-flow"): int(row.find_elements(By.TAG_NAME, "td")[2].text.replace(",", ""))
                for row in c.all("#flows-table tbody tr")}
    check(uploaded == candidate, "an uploaded candidate gives the pasted one's answer: %r, %r" % (uploaded, candidate))
    os.remove(upload)
    # A candidate that does not compile: its positioned errors on the page.
    run_backtest(c, CANDIDATE.replace('"tsp"', "tsp").replace("outcome orange", "outcome purple"), since, until)
    c.css("#diagnostics")
    text = "\n".join(row.text for row in c.all("#diagnostics tr.diagnostic"))
    check(re.search(r"candidate\.rules:\d+:\d+", text), "each error names file:line:column: " + text)


# Words a box broke inside (two letters or digits of one text node on two lines), and boxes that
# cut their text without its full text in their title.
LAYOUT_SCRIPT = """
const broken = [], cut = [];
const word = (ch) => /[\\p{L}\\p{N}]/u.test(ch);
for (const box of document.querySelectorAll(arguments[0])) {
  const walker = document.createTreeWalker(box, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    let previous = null;
    for (let i = 0; i < node.textContent.length; i++) {
      const range = document.createRange();
      range.setStart(node, i);
      range.setEnd(node, i + 1);
      const rects = range.getClientRects();
      if (!rects.length) continue;
      const ch = node.textContent[i];
      if (previous && rects[0].top > previous.top + 2 && word(previous.ch) && word(ch)) broken.push(box.textContent.slice(0, 80));
      previous = { top: rects[0].top, ch };
    }
  }
  if (box.scrollWidth > box.clientWidth + 1 && getComputedStyle(box).overflowX !== 'auto' && box.title !== box.textContent) cut.push(box.textContent.slice(0, 80));
}
return [broken, cut, document.documentElement.scrollWidth - window.innerWidth];
"""


def test_layout(c):
    # Tile and table texts once broke inside words ('31 (2 shado / w)',
    # 'REQUIRE_ADDITIONAL_AUT / HENTICATION'); the page must read at 1280 and at 768 px.
    yellow = sql("SELECT attempt_id FROM provisioning_attempts WHERE flow = 'yellow' LIMIT 1")
    sql("UPDATE provisioning_attempts SET decision = 'REQUIRE_ADDITIONAL_AUTHENTICATION' WHERE attempt_id = '%s'" % yellow)
    try:
        for width in (1280, 768):
            c.driver.set_window_size(width, 1000)
            for path in ("/console/rules", "/console/decisions?range=24h", "/console/rule-hits?range=24h", "/console/attempts",
                         "/console/attempts/" + yellow):
                c.open(path)
                c.css("main .panel table, main svg#chart")
                broken, cut, overflow = c.driver.execute_script(LAYOUT_SCRIPT, ".tile .value, .tile .label, td, th, h1, h2")
                check(not broken, "%d px %s: words broken inside: %r" % (width, path, broken))
                check(not cut, "%d px %s: text cut without its full text on hover: %r" % (width, path, cut))
                check(overflow <= 0, "%d px %s: the page is %d px wider than the window" % (width, path, overflow))
            c.driver.save_screenshot(os.path.join(SHOTS, "console-attempt-%d.png" % width))
    finally:
        c.driver.set_window_size(1360, 1000)
    # On the 24 h period, attempts of the last minutes only are bars of a readable width, not one
    # sliver at the right edge; at 768 px the chart is drawn at its width (its text unscaled).
    sql("INSERT INTO provisioning_attempts (attempt_id, channel, card_id, customer_id, inputs, features, hits, flow, decision, ruleset_version, created_at) "
        "SELECT gen_random_uuid(), 'in_app', card_id, customer_id, '{\"card.network\": \"jcb\"}', '{}', '[]', 'green', 'APPROVED', 'layout', "
        "now() - make_interval(secs => i * 20) FROM cards, generate_series(1, 5) i WHERE card_id = (SELECT min(card_id) FROM cards)")
    try:
        for width in (1280, 768):
            c.driver.set_window_size(width, 1000)
            c.open("/console/decisions?range=24h&network=jcb")
            chart = c.css("svg#chart")
            bars = [bar for bar in c.all("#chart rect.bar")]
            check(bars, "the new attempts are drawn")
            chart_width = chart.rect["width"]
            narrowest = min(bar.rect["width"] for bar in bars)
            check(narrowest >= chart_width / 20, "%d px: bars of %.0f px in a chart of %.0f px" % (width, narrowest, chart_width))
            check("No attempt from" in c.css("#chart-note").text, "the chart says where it starts")
            label = c.all("#chart text.axis")[0]
            check(label.rect["height"] >= 10, "%d px: axis text %.1f px high" % (width, label.rect["height"]))
            c.driver.save_screenshot(os.path.join(SHOTS, "console-new-data-%d.png" % width))
    finally:
        c.driver.set_window_size(1360, 1000)
        sql("DELETE FROM provisioning_attempts WHERE ruleset_version = 'layout'")


def test_csrf_refused(c):
    before = int(sql("SELECT count(*) FROM audit_log"))
    body = json.dumps({"rules": CANDIDATE, "since": iso(c.since), "until": iso(c.until)})
    answer = c.fetch("POST", "/v1/admin/rules/backtest", {"Content-Type": "application/json"}, body)
    check(answer["status"] == 403 and "csrf_token_invalid" in answer["body"], "a backtest without the CSRF token is refused: %r" % answer)
    answer = c.fetch("POST", "/v1/admin/rules/backtest/jobs", {"Content-Type": "application/json"}, body)
    check(answer["status"] == 403 and "csrf_token_invalid" in answer["body"], "a backtest job without the CSRF token is refused: %r" % answer)
    answer = c.fetch("DELETE", "/v1/admin/rules/backtest/jobs/00000000-0000-0000-0000-000000000000")
    check(answer["status"] == 403 and "csrf_token_invalid" in answer["body"], "a cancel without the CSRF token is refused: %r" % answer)
    body = json.dumps({"since": iso(c.since), "until": iso(c.until)})
    answer = c.fetch("POST", "/v1/admin/rules/backtest/prepare", {"Content-Type": "application/json"}, body)
    check(answer["status"] == 403 and "csrf_token_invalid" in answer["body"], "a preparation without the CSRF token is refused: %r" % answer)
    answer = c.fetch("DELETE", "/console/session", {"X-CSRF-Token": "A" * 43})
    check(answer["status"] == 403 and "csrf_token_invalid" in answer["body"], "a sign-out with a wrong CSRF token is refused: %r" % answer)
    check(c.session_count() == 1, "nothing changed: the session is still there")
    check(int(sql("SELECT count(*) FROM audit_log")) == before, "nothing audited")
    check("\"reason\":\"csrf\"" in open(SERVER_LOG).read(), "the refusal is logged")


def test_forged_cookie(c):
    good = c.driver.get_cookie("issuerd_console")
    c.driver.delete_cookie("issuerd_console")
    c.driver.add_cookie({"name": "issuerd_console", "value": "".join(secrets.choice(string.ascii_letters) for _ in range(43)), "path": "/"})
    c.open("/console/decisions")
    c.wait.until(EC.url_contains("/console/sign-in?reason=invalid"))
    check("not valid" in c.css("#message .notice").text, "a forged cookie is refused and said so")
    answer = c.fetch("GET", "/v1/admin/rules")
    check(answer["status"] == 401, "the JSON routes refuse it too: %r" % answer)
    c.driver.delete_cookie("issuerd_console")
    c.driver.add_cookie({"name": "issuerd_console", "value": good["value"], "path": "/", "sameSite": "Strict", "httpOnly": True})


def test_session_ended_while_open(c):
    # The session ends (signed out elsewhere) while a page is open: the page's next request is
    # refused, and the sign-in page says the session is not valid, not that it expired.
    c.open("/console/backtest")
    c.css("#files textarea").send_keys(CANDIDATE)
    sql("DELETE FROM console_sessions")
    c.css("#run").click()
    c.wait.until(EC.url_contains("/console/sign-in?reason=invalid"))
    check("next=%2Fconsole%2Fbacktest" in c.driver.current_url, "the refused page is where the analyst returns: " + c.driver.current_url)
    check("not valid" in c.css("#message .notice").text, "an ended session is said to be not valid")
    c.sign_in(KEY)
    c.wait.until(EC.url_to_be(BASE + "/console/rules"))


def test_expired_session(c):
    c.open("/console/rules")
    c.css("#version")
    sql("UPDATE console_sessions SET expires_at = now() - interval '1 minute'")
    answer = c.fetch("GET", "/v1/admin/rules")
    check(answer["status"] == 401 and "session_expired" in answer["body"], "an expired session is refused by the JSON routes: %r" % answer)
    c.open("/console/attempts")
    c.wait.until(EC.url_contains("/console/sign-in?reason=expired"))
    check("expired" in c.css("#message .notice").text, "the sign-in page says the session expired")
    check("next=/console/attempts" in c.driver.current_url, "and brings the analyst back afterwards")


def test_sign_out(c):
    c.sign_in(KEY)
    c.wait.until(EC.url_to_be(BASE + "/console/rules"))
    count = c.session_count()
    c.css("#sign-out").click()
    c.wait.until(EC.url_contains("reason=signed-out"))
    check(c.session_count() == count - 1, "signing out deletes the session row")
    c.open("/console/rules")
    c.wait.until(EC.url_contains("/console/sign-in"))


def test_security_headers(c):
    with urllib.request.urlopen(BASE + "/console/sign-in") as response:
        policy = response.headers["Content-Security-Policy"]
        page = response.read().decode()
    check("script-src 'self'" in policy and "style-src 'self'" in policy and "unsafe-inline" not in policy
          and "frame-ancestors 'none'" in policy, "a strict CSP: " + policy)
    check("<script>" not in page and "style=" not in page, "no inline script or style in the page")
    violations = [entry for entry in c.driver.get_log("browser") if "Content Security Policy" in entry.get("message", "")]
    check(not violations, "no CSP violation while walking the console: %r" % violations)


GOVERNED = """rule test.governed_watch
  title   "Watches added through the TSP (browser test)"
  outcome yellow
  reason  TEST_GOVERNED
  owner   browser_test
  mode    shadow
  when    request.channel == "tsp" and device.type == "watch"
end
"""


def test_rule_change(c):
    """Propose (a rule file saved: the watcher proposes it, as ISSUERD_RULES_AUTHOR), review it
    on the Rule changes pages, approve it as the analyst, and see it serve and in the audit log."""
    path = os.path.join(RULES_DIR, "policy", "zz_browser_governed.rules")
    with open(path, "w") as handle:
        handle.write(GOVERNED)
    deadline = datetime.now() + timedelta(seconds=30)
    while not sql("SELECT change_id FROM rule_changes WHERE status = 'proposed'"):
        check(datetime.now() < deadline, "the watcher did not propose the saved file within 30 s")
        time.sleep(0.5)
    change, version, proposer = sql("SELECT change_id, version, proposed_by FROM rule_changes WHERE status = 'proposed'").split("|")
    check(proposer == "browser author", "proposed by ISSUERD_RULES_AUTHOR: " + proposer)
    # Proposed, not served.
    c.open("/console/rules")
    check(c.css("#version").text == VERSION, "the proposal does not serve")
    c.open("/console/changes?status=proposed")
    row = c.css('#changes-table tr[data-change="%s"]' % change)
    check("browser author" in row.text and "proposed" in row.text, "the list shows the proposal: " + row.text)
    row.find_element(By.CSS_SELECTOR, "a").click()
    c.wait.until(EC.url_contains("/console/changes/" + change))
    diff = c.css('#diff-table tr[data-rule="test.governed_watch"]')
    check("added" in diff.text and 'device.type == "watch"' in diff.text, "the diff shows the added rule: " + diff.text)
    examples = c.css("#change-tests").text
    passed = int(sql("SELECT tests ->> 'passed' FROM rule_changes WHERE change_id = '%s'" % change))
    check("{:,} passed, 0 failed".format(passed) in examples, "the example results: " + examples)
    backtest = c.css("#change-backtest").text.lower()
    check("attempts replayed" in backtest or "another one is running" in backtest, "the backtest summary: " + backtest)
    c.driver.save_screenshot(os.path.join(SHOTS, "console-change.png"))
    c.css("#note").send_keys("shadow only; reviewed in the browser")
    c.css("#approve").click()
    c.wait.until(lambda d: d.find_elements(By.ID, "decided"))
    stored = sql("SELECT status || '|' || decided_by || '|' || note FROM rule_changes WHERE change_id = '%s'" % change)
    check(stored == "approved|browser analyst|shadow only; reviewed in the browser", "the approval is stored: " + stored)
    c.wait.until(lambda d: d.find_elements(By.ID, "decision"))
    c.open("/console/rules")
    check(c.css("#version").text == version, "the approved version serves: %s (expected %s)" % (c.css("#version").text, version))
    # Each step is in the audit log, shown on its page.
    c.open("/console/audit?kind=rules")
    actions = [row.get_attribute("data-action") for row in c.wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#audit-table tbody tr"))]
    check("rules.approved" in actions and "rules.proposed" in actions, "the audit page lists the proposal and the approval: %s" % actions[:6])
    approved = c.css('#audit-table tr[data-action="rules.approved"]').text
    check("browser analyst" in approved and "test.governed_watch" in approved, "the approval's person and diff: " + approved)


TESTS = [test_sign_in_refusals, test_sign_in, test_ruleset, test_failed_reload, test_decisions, test_rule_hits, test_attempts, test_card_number_in_link, test_attempt_page,
         test_review_queue, test_reissue_panel,
         test_backtest, test_rule_change, test_layout, test_csrf_refused, test_forged_cookie, test_session_ended_while_open, test_expired_session, test_sign_out, test_security_headers]


def main():
    console = Console()
    failed = 0
    try:
        for test in TESTS:
            try:
                test(console)
                print("✔ console browser: %s" % test.__name__)
            except Exception:
                failed += 1
                print("✘ console browser: %s failed" % test.__name__)
                traceback.print_exc()
                console.driver.save_screenshot(os.path.join(SHOTS, "failed-%s.png" % test.__name__))
    finally:
        console.driver.quit()
    print("console browser: %d passed, %d failed" % (len(TESTS) - failed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
