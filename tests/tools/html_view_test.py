#!/usr/bin/env python3
"""Checks an HTML report (`ojx report --html`) in headless Chromium, driven over W3C WebDriver (chromedriver),
as an engineer would use it:

  - the page loads from file:// within 10 s, logs no console error and requests nothing but itself (the
    performance log's Network.requestWillBeSent, and performance.getEntriesByType('resource'));
  - the header says what an estimate needs (objects digested whole or comparisons) and how many of the tracked
    objects were digested whole, and how many the digest budgets left out;
  - the planted context (a context whose allocation site or type is NAME) has a box in the flame view, wide
    enough to see, and a row in the table;
  - every context is coloured, ranked and labelled by its estimate (its largest identical group's share, from
    objects digested whole or from comparisons): its box and its row's swatch take the colour of that share,
    grey only with no estimate; the ranks follow the low end of the share's interval;
  - a click on its box shows its numbers in the details panel: the share and its interval as in the page's data,
    and θ, its interval and [ω, γ] only where the context has comparisons (never a θ of 0 % [0 %, 100 %]
    standing for none), and zooms into it (Reset zoom undoes that); a click on the frame NAME lists it, Back
    undoes that zoom;
  - the sites pooled over their calling contexts have a row each, with their share, interval and contexts;
  - a frame above the contexts of one site alone (two or more) takes the colour of the site's share pooled over
    them, and its details panel lists the pooled site with its share, interval and contexts;
  - it keeps a box whichever width is chosen (bytes saved, heap saved, bytes, evidence);
  - searching for NAME highlights its box and row and reports a matched share;
  - a click on a column header sorts the table by that column (and a second click reverses it);
  - a page whose data has a copy section shows its copies view: a row per edge in the data, the top edge's
    bytes and interval and its nodes' names, each clone pair's and carrier site's bytes and sites' names, and
    each hot copy chain's bytes and nodes in order; a page without one has no copies view at all. --copies or --no-copies says which the page must be. With --copies the planted
    context's details panel says where its contents were copied from: each source of the data with its share,
    name and bytes; without a copy section no context's panel says so;
  - pairs of sites holding the same contents whole: two rows a pair, each side named, with its share and
    interval, and no section where the data has none;
  - the heap view: the header names the heap moment where the data has one; every row's "Heap saved" cell is the
    low end of what sharing saves among the site's objects alive then ('–' without an estimate), and a details
    panel shows that saving with its interval and share, and the churn saving (per second of the run);
  - --shared (the fixture's pages) says the page must have a pair of sites holding the same contents and a site
    with a heap estimate.

Screenshots go to ARTEFACT_DIR. Standard library only.

usage: html_view_test.py [--copies | --no-copies] [--shared] PAGE.html NAME ARTEFACT_DIR
exit status: 0 passed, 1 failed, 2 bad usage, 77 skipped (Chromium or chromedriver not installed)
"""
import base64
import ctypes
import json
import os
import pathlib
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

SKIP = 77
LOAD_SECONDS = 10
BROWSER_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    # Without these Chromium reaches for the network (updates, sync, field trials), which is closed here.
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage", "--window-size=1600,1000",
]


class Failure(Exception):
    """A check that failed; the message says what was expected and what was found."""


def find_program(names):
    for name in names:
        path = shutil.which(name)
        if path:
            return path
    return None


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def die_with_parent():
    # chromedriver (and the browser it starts) must not outlive this script, even if it is killed outright
    # (a CTest timeout): the kernel sends SIGKILL to chromedriver when this process dies.
    libc = ctypes.CDLL(None, use_errno=True)
    pr_set_pdeathsig = 1
    libc.prctl(pr_set_pdeathsig, signal.SIGKILL)


class WebDriver:
    """The few W3C WebDriver commands the checks use, over HTTP to a local chromedriver."""

    def __init__(self, artefacts):
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log_path = os.path.join(artefacts, "chromedriver.log")
        # Localhost, never through a proxy the environment may name.
        self.opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        self.profile_dir = None
        self.process = None
        self.session = None

    def start(self, driver, browser):
        """Starts chromedriver and a session of the browser with a fresh profile."""
        self.profile_dir = tempfile.mkdtemp(prefix="ojx-html-view-")
        # Its own process group, so that the browser's processes are stopped with it.
        self.process = subprocess.Popen([driver, f"--port={self.port}", f"--log-path={self.log_path}"],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                        start_new_session=True, preexec_fn=die_with_parent)
        deadline = time.monotonic() + 15
        while True:
            try:
                if self.call("GET", "/status").get("ready"):
                    break
            except (OSError, Failure):
                pass
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise Failure(f"chromedriver did not start (see {self.log_path})")
            time.sleep(0.1)
        capabilities = {
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": browser, "args": BROWSER_ARGS + [f"--user-data-dir={self.profile_dir}"]},
            "goog:loggingPrefs": {"browser": "ALL", "performance": "ALL"},
        }
        self.session = self.call("POST", "/session", {"capabilities": {"alwaysMatch": capabilities}})["sessionId"]

    def call(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.base + path, data=data, method=method,
                                         headers={"Content-Type": "application/json; charset=utf-8"})
        try:
            with self.opener.open(request, timeout=60) as response:
                return json.loads(response.read())["value"]
        except urllib.error.HTTPError as error:
            body = error.read()
            try:
                value = json.loads(body).get("value", {})
            except ValueError:
                value = {"error": f"HTTP {error.code}", "message": body.decode(errors="replace")}
            raise Failure(f"WebDriver {method} {path}: {value.get('error')}: {value.get('message', '')[:500]}")

    def command(self, method, path, body=None):
        return self.call(method, f"/session/{self.session}{path}", body)

    def script(self, source, *args):
        return self.command("POST", "/execute/sync", {"script": source, "args": list(args)})

    def find_one(self, css):
        found = self.command("POST", "/elements", {"using": "css selector", "value": css})
        if not found:
            raise Failure(f"no element matches {css}")
        return next(iter(found[0].values()))  # the element reference, under W3C's fixed key

    def click(self, element):
        self.command("POST", f"/element/{element}/click", {})

    def text(self, element):
        return self.command("GET", f"/element/{element}/text")

    def log(self, kind):
        return self.command("POST", "/se/log", {"type": kind})

    def screenshot(self, path):
        pathlib.Path(path).write_bytes(base64.b64decode(self.command("GET", "/screenshot")))
        return path

    def close(self):
        if self.session:
            try:
                self.call("DELETE", f"/session/{self.session}")
            except (OSError, Failure):
                pass
        if self.process:
            try:
                os.killpg(self.process.pid, signal.SIGTERM)
                self.process.wait(timeout=5)
            except ProcessLookupError:
                pass
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        if self.profile_dir:
            shutil.rmtree(self.profile_dir, ignore_errors=True)


def percents(text):
    return [float(x) / 100 for x in re.findall(r"(-?\d+(?:\.\d+)?)%", text)]


def expect_close(what, shown, expected):
    # The page prints percentages with one decimal.
    if len(shown) != len(expected) or any(abs(s - e) > 0.00051 for s, e in zip(shown, expected)):
        raise Failure(f"{what}: the page shows {[f'{100 * s:.1f}%' for s in shown]}, the data says "
                      f"{[f'{100 * e:.2f}%' for e in expected]}")


def wait_for(driver, condition, what, seconds=5):
    deadline = time.monotonic() + seconds
    while True:
        value = driver.script(condition)
        if value:
            return value
        if time.monotonic() > deadline:
            raise Failure(f"timed out waiting for {what}")
        time.sleep(0.05)


# The node id of the widest frame box named arguments[0], or null.
WIDEST_FRAME_BOX = """
    const boxes = [...document.querySelectorAll('#flame-nodes .node[data-kind="frame"]')]
        .filter(e => e.textContent === arguments[0])
        .sort((a, b) => b.getBoundingClientRect().width - a.getBoundingClientRect().width);
    return boxes.length ? boxes[0].dataset.nodeId : null;"""


def share_of(context):
    """The number the page colours and sorts a context by: its largest group's share from whole objects, the
    middle of [omega, gamma] from comparisons, None with no estimate."""
    if context["evidence"] == "whole_objects":
        return context["largest_share"]
    if context["evidence"] == "comparisons":
        return sum(context["largest_share_ci"]) / 2
    return None


# For each context (arguments[0]: their shares, null for no estimate), the computed background colours of its
# boxes in the flame view and of its table row's swatch, and the colour the page gives its share (no estimate's
# grey for null), as the browser resolves them.
COLOURS = """
    const probe = document.createElement('div');
    document.body.append(probe);
    const result = arguments[0].map((share, index) => {
        probe.style.background = share === null ? 'hsl(210, 8%, 82%)'
            : 'hsl(' + Math.round(230 * (1 - share)) + ', 78%, 66%)';
        const colours = css => [...document.querySelectorAll(css)].map(e => getComputedStyle(e).backgroundColor);
        return [colours('#flame-nodes .node[data-kind="context"][data-context-index="' + index + '"]'),
                colours('#contexts tbody tr[data-context-index="' + index + '"] .swatch'),
                getComputedStyle(probe).backgroundColor];
    });
    probe.remove();
    return result;"""


def check_estimates_shown(driver, data, steps):
    """Every context's box and row swatch in the colour of its share (grey only with no estimate), and the ranks
    in the order of the estimates: estimated first, then by the low end of the share's interval, then its high
    end."""
    shares = [share_of(c) for c in data["contexts"]]
    coloured = 0
    for context, share, (boxes, swatches, wanted) in zip(data["contexts"], shares, driver.script(COLOURS, shares)):
        for what, found in (("box", boxes), ("row swatch", swatches)):
            if any(colour != wanted for colour in found):
                raise Failure(f"context #{context['rank']} ({context['evidence']}, share {share}): its {what} is "
                              f"{found[0]}, its estimate's colour {wanted}")
        if not swatches:
            raise Failure(f"context #{context['rank']} has no swatch in its table row")
        coloured += share is not None
    ranked = sorted(data["contexts"], key=lambda c: c["rank"])
    for before, after in zip(ranked, ranked[1:]):
        key = lambda c: (c["evidence"] != "none", c["largest_share_ci"][0] if c["evidence"] != "none" else 0,
                         c["largest_share_ci"][1] if c["evidence"] != "none" else 0)
        if key(after) > key(before):
            raise Failure(f"context #{after['rank']} ranks below #{before['rank']} with a better estimate: "
                          f"{key(after)} against {key(before)}")
    whole = sum(c["evidence"] == "whole_objects" and c["equal"] + c["different"] == 0 for c in data["contexts"])
    steps.append(f"estimates: {coloured} contexts coloured by their share ({whole} from whole objects alone, no "
                 f"comparison), the rest grey; ranks follow the estimates")


def check_pooled(driver, data, steps):
    """The sites pooled over their calling contexts: a row for each in the page's data, with its share, interval
    and number of contexts; no section at all where the data has none."""
    pooled = data["pooled"]
    shown = driver.script("return !document.getElementById('pooled-section').hidden")
    if shown != bool(pooled):
        raise Failure(f"the pooled sites' section is {'shown' if shown else 'hidden'} with {len(pooled)} in the data")
    for index, site in enumerate(pooled):
        driver.find_one(f'#pooled tr[data-pooled-index="{index}"]')
        field = lambda f: driver.text(driver.find_one(f'#pooled tr[data-pooled-index="{index}"] [data-field="{f}"]'))
        expect_close(f"pooled site {index}'s share", percents(field("pooled-share")), [share_of(site)])
        expect_close(f"pooled site {index}'s interval", percents(field("pooled-share-ci")), site["largest_share_ci"])
        if field("pooled-contexts") != f"{site['pooled_contexts']:,}":
            raise Failure(f"pooled site {index} shows {field('pooled-contexts')!r} contexts, the data "
                          f"{site['pooled_contexts']}")
        if data["strings"][site["frames"][0]] != field("pooled-site"):
            raise Failure(f"pooled site {index} is named {field('pooled-site')!r}")
    steps.append(f"pooled sites: {len(pooled)} row(s), each with its share, interval and contexts" if pooled
                 else "pooled sites: none in the data, no section")


def check_shared_contents(driver, data, steps, required):
    """Pairs of sites holding the same contents whole: two rows a pair, each side named as the data names it, with
    its share and interval; no section where the data has none. `required`: the page must have a pair."""
    pairs = data["shared_contents"]
    shown = driver.script("return !document.getElementById('shared-section').hidden")
    if shown != bool(pairs):
        raise Failure(f"the shared contents' section is {'shown' if shown else 'hidden'} with {len(pairs)} pairs "
                      "in the data")
    if required and not pairs:
        raise Failure("the page's data has no pair of sites holding the same contents, and this page must have one")
    for index, pair in enumerate(pairs):
        for side_index, side in enumerate(pair["sides"]):
            row = f'#shared tr[data-shared-index="{index}"][data-shared-side="{side_index}"]'
            driver.find_one(row)
            field = lambda f: driver.text(driver.find_one(f'{row} [data-field="{f}"]'))
            if data["strings"][side["frame"]] != field("shared-site"):
                raise Failure(f"shared pair {index}, side {side_index} is named {field('shared-site')!r}, the data "
                              f"{data['strings'][side['frame']]!r}")
            expect_close(f"shared pair {index}, side {side_index}'s share", percents(field("shared-share")),
                         [side["share"]])
            expect_close(f"shared pair {index}, side {side_index}'s interval", percents(field("shared-share-ci")),
                         side["share_ci"])
    steps.append(f"shared contents: {len(pairs)} pair(s), both sides named with their share and interval" if pairs
                 else "shared contents: none in the data, no section")


# For each frame pool key, the computed background colours of the frame boxes coloured by it.
POOL_COLOURS = """
    return Object.fromEntries(arguments[0].map(key => [key,
        [...document.querySelectorAll('#flame-nodes .node[data-kind="frame"][data-pool="' + key + '"]')]
            .map(e => getComputedStyle(e).backgroundColor)]));"""

# The colour the page gives a frame of share arguments[0], as the browser resolves it.
FRAME_COLOUR = """
    const probe = document.createElement('div');
    document.body.append(probe);
    probe.style.background = 'hsl(' + Math.round(230 * (1 - arguments[0])) + ', 78%, 80%)';
    const colour = getComputedStyle(probe).backgroundColor;
    probe.remove();
    return colour;"""


def check_frame_pools(driver, data, steps):
    """Frames coloured by their sites pooled over the contexts below them: a frame above contexts of one site
    only, reached from two or more of them, takes the colour of that site's pooled share (whatever the widths),
    and its details panel lists the pooled site with its share, interval and contexts, as the data says."""
    single = {}
    for pool in data["frame_pools"]:
        if pool["depth"] == 0 or len(pool["sites"]) != 1 or pool["sites"][0]["contexts"] != pool["contexts"]:
            continue
        share = share_of(pool["sites"][0])
        if share is not None:
            single[f"{pool['first']}:{pool['depth']}"] = (pool, share)
    if not single:
        steps.append(f"frame pools: {len(data['frame_pools'])} in the data, none above one estimated site alone")
        return
    # In every width (a narrow frame is not drawn in some), the same colour: one site's pooled share needs no
    # weights.
    set_width = lambda mode: driver.script("const s = document.getElementById('width-mode'); s.value = arguments[0];"
                                           "s.dispatchEvent(new Event('change'))", mode)
    drawn = {}  # a key, and a width it is drawn in
    for mode in ("evidence", "bytes", "heap", "saved"):
        set_width(mode)
        for key, colours in driver.script(POOL_COLOURS, list(single)).items():
            pool, share = single[key]
            wanted = driver.script(FRAME_COLOUR, share)
            if any(colour != wanted for colour in colours):
                raise Failure(f"frame pool {key} (one site, {pool['contexts']} contexts, pooled share {share}), "
                              f"width by {mode}: its frame boxes are {colours}, its pooled estimate's colour {wanted}")
            if colours:
                drawn[key] = mode
    if not drawn:  # among hundreds of contexts a few small ones' frames can be under a pixel in every width
        steps.append(f"frame pools: {len(single)} above one site, none wider than a pixel in any width")
        set_width("saved")
        return
    single = {key: single[key] for key in drawn}
    # The details of the widest such frame list the pooled site as the data says.
    key = max(single, key=lambda k: single[k][0]["sites"][0]["objects"])
    pool, share = single[key]
    set_width(drawn[key])
    boxes = driver.script("return [...document.querySelectorAll('#flame-nodes .node[data-kind=\"frame\"]"
                          "[data-pool=\"' + arguments[0] + '\"]')].map(e => e.dataset.nodeId)", key)
    # A click as the view receives it (the box may be a pixel or two wide, too narrow for WebDriver to hit).
    driver.script("document.querySelector('#flame-nodes .node[data-node-id=\"' + arguments[0] + '\"]')"
                  ".dispatchEvent(new MouseEvent('click', { bubbles: true }))", boxes[-1])
    wait_for(driver, "return document.querySelector('#details .frame-pools') !== null",
             "the frame's details to list its pooled sites")
    site = pool["sites"][0]
    field = lambda f: driver.text(driver.find_one(f'#details .frame-pools li [data-field="{f}"]'))
    expect_close(f"frame pool {key}'s share", percents(field("frame-pool-share")), [share])
    expect_close(f"frame pool {key}'s interval", percents(field("frame-pool-ci")), site["largest_share_ci"])
    if field("frame-pool-contexts") != f"{site['contexts']:,}":
        raise Failure(f"frame pool {key} shows {field('frame-pool-contexts')!r} contexts, the data {site['contexts']}")
    driver.click(driver.find_one("#zoom-reset"))
    set_width("saved")
    steps.append(f"frame pools: {len(drawn)} frame pool(s) above one site drawn, each in its pooled share's colour "
                 f"in every width; the details of {key} list its pooled site")


def check_exact(driver, data, steps):
    """The exact counts: the section shown where the page's data has them (hidden where not), its summary with the
    totals, and a row per listed site, most objects first, each with the data's count and site."""
    exact = data.get("exact")
    shown = driver.script("return !document.getElementById('exact-section').hidden")
    if shown != bool(exact):
        raise Failure(f"the exact counts section is {'shown' if shown else 'hidden'}, the data "
                      f"{'has' if exact else 'has no'} exact counts")
    if not exact:
        steps.append("exact counts: none in the data, no section")
        return
    summary = driver.text(driver.find_one("#exact-summary"))
    for number in (exact["objects"], exact["increments"], exact["sites_total"]):
        if f"{number:,}" not in summary:
            raise Failure(f"the exact counts summary lacks {number:,}: {summary!r}")
    counts = [s["objects"] for s in exact["sites"]]
    if counts != sorted(counts, reverse=True):
        raise Failure(f"the data's exact sites are not most objects first: {counts}")
    for index, site in enumerate(exact["sites"]):
        field = lambda f: driver.text(driver.find_one(f'#exact tr[data-exact-index="{index}"] [data-field="{f}"]'))
        if field("exact-objects") != f"{site['objects']:,}":
            raise Failure(f"exact site {index} shows {field('exact-objects')!r} objects, the data {site['objects']}")
        if field("exact-site") != data["strings"][site["frame"]]:
            raise Failure(f"exact site {index} is named {field('exact-site')!r}")
        elements = f"{site['elements']:,}" if "elements" in site else "–"
        if field("exact-elements") != elements:
            raise Failure(f"exact site {index} shows {field('exact-elements')!r} elements, the data {elements}")
        if exact["jvm_reported"]:
            for f, key in (("exact-allocated", "jvm_allocated"), ("exact-not-allocated", "not_allocated")):
                if field(f) != f"{site[key]:,}":
                    raise Failure(f"exact site {index} shows {field(f)!r} for {key}, the data {site[key]}")
    columns = driver.script("return [...document.querySelectorAll('#exact th.jvm-reported')].filter(th => !th.hidden).length")
    if columns != (2 if exact["jvm_reported"] else 0):
        raise Failure(f"the exact counts table shows {columns} of the JVM's columns, the data "
                      f"{'has' if exact['jvm_reported'] else 'has no'} JVM-reported allocations")
    if exact["jvm_reported"] and f"{exact['not_allocated']:,} objects counted were never allocated" not in summary:
        raise Failure(f"the exact counts summary lacks the {exact['not_allocated']:,} never allocated: {summary!r}")
    # A context whose site was counted: its details say the site's count and, split, its part.
    counted = [c for c in data["contexts"] if c.get("exact")]
    for context in counted[:3]:
        index = data["contexts"].index(context)
        driver.click(driver.find_one(f'#contexts tbody tr[data-context-index="{index}"]'))
        row = driver.text(driver.find_one('#details [data-field="exact-row"]'))
        wanted = f"{context['exact']['site']:,} objects counted at its bytecode site"
        if wanted not in row or (context["exact"]["split"] and f"about {context['exact']['part']:,} of them" not in row):
            raise Failure(f"context #{context['rank']}'s exact count row reads {row!r}, the data {context['exact']}")
    if not counted:
        raise Failure("no context of the page has its site's exact count, though the data has exact counts")
    rows = driver.script("return document.querySelectorAll('#exact tbody tr').length")
    if rows != len(exact["sites"]):
        raise Failure(f"the exact counts table has {rows} rows for {len(exact['sites'])} sites")
    steps.append(f"exact counts: {rows} site(s) of {exact['sites_total']}, most objects first, summary with the totals, "
                 f"{len(counted)} context(s) with their site's count in the details"
                 + (", the JVM's allocations and those never allocated per site" if exact["jvm_reported"] else ""))


def planted_context(data, name):
    """The first (best ranked) context allocated at NAME, else of type NAME, else with NAME among its frames."""
    strings = data["strings"]
    tests = [lambda c: c["frames"] and strings[c["frames"][0]] == name,
             lambda c: strings[c["type"]] == name,
             lambda c: any(strings[f] == name for f in c["frames"])]
    for test in tests:
        for index, context in enumerate(data["contexts"]):
            if test(context):
                return index, context
    raise Failure(f"no context in the page's data is allocated at, or of type, {name!r}")


def table_order(driver):
    return driver.script("return [...document.querySelectorAll('#contexts tbody tr')]"
                         ".map(r => Number(r.dataset.contextIndex))")


def check_sorting(driver, data, key, value, steps):
    """Clicks the header of column `key` twice: largest first, then smallest first, by `value` of a context."""
    ranked = table_order(driver)
    header = driver.find_one(f'#contexts th[data-sort-key="{key}"]')
    for direction in ("descending", "ascending"):
        driver.click(header)
        order = table_order(driver)
        values = [value(data["contexts"][i]) for i in order]
        wanted = sorted(values, reverse=direction == "descending")
        if values != wanted:
            raise Failure(f"after a click on the {key} header the table is not {direction} by {key}: {values[:12]}…")
        if sorted(order) != sorted(ranked):
            raise Failure(f"sorting by {key} lost or duplicated rows")
        sort_state = driver.script(f"return document.querySelector('#contexts th[data-sort-key=\"{key}\"]')"
                                   ".getAttribute('aria-sort')")
        if sort_state != direction:
            raise Failure(f"the {key} header says aria-sort={sort_state!r} after sorting {direction}")
        steps.append(f"table sorted by {key}, {direction}: first rows {order[:5]}")
    if order == ranked:
        raise Failure(f"sorting by {key} did not reorder the table")


BYTE_UNITS = {"B": 1, "KiB": 1024, "MiB": 1024 ** 2, "GiB": 1024 ** 3, "TiB": 1024 ** 4}


def expect_bytes(what, shown, expected):
    """`shown` is the page's text for `expected` bytes: "512 B", "30.0 KiB" (one decimal, rounded)."""
    found = re.fullmatch(r"(\d+(?:\.\d)?) (B|KiB|MiB|GiB|TiB)", shown.strip())
    if not found:
        raise Failure(f"{what}: {shown!r} is not an amount of bytes")
    unit = BYTE_UNITS[found[2]]
    half_step = unit / 2 if unit == 1 else unit / 20
    if abs(float(found[1]) * unit - expected) > half_step + 1e-9 * expected:
        raise Failure(f"{what}: the page shows {shown!r}, the data says {expected} bytes")


def node_names(driver, css):
    return driver.script("return [...document.querySelectorAll(arguments[0])].map(e => e.textContent)", css)


def check_copied_from(driver, data, context, expected, steps):
    """The details panel shown (the planted context's): where its contents were copied from, as its data says."""
    copied = context.get("copied_from")
    if expected and copied is None:
        raise Failure("the planted context's data says nothing of where its contents were copied from")
    if copied is None or data.get("copies") is None:
        if copied is not None or driver.script("return document.getElementById('copied-from') !== null"):
            raise Failure("a page without a copy section says where a context's contents were copied from")
        return
    item = '#copied-from li[data-source-index="{}"]'
    shown = driver.script("return document.querySelectorAll('#copied-from li[data-source-index]').length")
    if shown != len(copied["sources"]):
        raise Failure(f"the details panel lists {shown} sources of the contents, the data {len(copied['sources'])}")
    for index, source in enumerate(copied["sources"]):
        css = item.format(index)
        share = driver.text(driver.find_one(f'{css} [data-field="copied-share"]'))
        expect_close(f"source {index}'s share", percents(share), [source["share"]])
        names = node_names(driver, f'{css} [data-field="copy-node"]')
        if names != [source["from"]["name"]]:
            raise Failure(f"source {index} is named {names}, the data {source['from']['name']!r}")
        amount = re.fullmatch(r"~(.+) \[(.+), (.+)\]",
                              driver.text(driver.find_one(f'{css} [data-field="copied-bytes"]')))
        if not amount:
            raise Failure(f"source {index}'s bytes are not '~bytes [low, high]'")
        for shown_bytes, expected_bytes in zip(amount.groups(), [source["estimate"]["bytes"]] +
                                               source["estimate"]["bytes_ci"]):
            expect_bytes(f"source {index}'s bytes", shown_bytes, expected_bytes)
    first = copied["sources"][0]
    steps.append(f"details: contents copied from {len(copied['sources'])} source(s), the first "
                 f"{first['from']['name']} ({100 * first['share']:.1f}%)")


def check_site_lists(driver, copies, steps):
    """The clone pairs and carrier sites: an item per entry of the data, in its order, each with its bytes and its
    sites' names; "None." where the data has none."""
    lists = [("clone pairs", "#copy-clone-pairs", "pair", copies["clone_pairs"], lambda e: e["estimate"]["bytes"],
              lambda e: [e["from"]["name"], e["to"]["name"]]),
             ("carrier sites", "#copy-carriers", "carrier", copies["carriers"], lambda e: e["copied_out"]["bytes"],
              lambda e: [e["site"]["name"]])]
    for what, css, key, entries, entry_bytes, entry_names in lists:
        shown = driver.script(f"return document.querySelectorAll('{css} li[data-{key}-index]').length")
        if shown != len(entries):
            raise Failure(f"the copies view lists {shown} {what}, the data {len(entries)}")
        if not entries and driver.script(f"return document.querySelector('{css}') !== null"):
            raise Failure(f"the data has no {what}, yet the page shows their list")
        for index, entry in enumerate(entries):
            item = f'{css} li[data-{key}-index="{index}"]'
            expect_bytes(f"{what} {index + 1}'s bytes",
                         driver.text(driver.find_one(f'{item} [data-field="{key}-bytes"]')), entry_bytes(entry))
            names = node_names(driver, f'{item} [data-field="copy-node"]')
            if names != entry_names(entry):
                raise Failure(f"{what} {index + 1} shows {names}, the data {entry_names(entry)}")
        steps.append(f"copies: {len(entries)} {what}" +
                     (f", the first {' -> '.join(entry_names(entries[0]))}" if entries else ""))


def check_copies(driver, data, expected, artefacts, steps):
    """The copies view: as the data's copy section says where it has one, absent where it has none."""
    copies = data.get("copies")
    if expected is not None and (copies is not None) != expected:
        raise Failure(f"the page's data {'lacks' if expected else 'has'} a copy section")
    if copies is None:
        if driver.script("return document.getElementById('copies-section') !== null || "
                         "document.getElementById('copy-edges') !== null"):
            raise Failure("a page without a copy section has a copies view")
        steps.append("copies: no copy section, no copies view")
        return
    section = driver.find_one("#copies-section")
    if not driver.command("GET", f"/element/{section}/displayed"):
        raise Failure("the copies view is not displayed")
    rows = driver.script("return document.querySelectorAll('#copy-edges tbody tr[data-edge-index]').length")
    if rows != len(copies["edges"]):
        raise Failure(f"the copies view lists {rows} edges, the data {len(copies['edges'])}")
    if not copies["edges"]:
        raise Failure("the copy section has no edge: nothing to check in its view")
    top = copies["edges"][0]
    row = '#copy-edges tbody tr[data-edge-index="0"]'
    expect_bytes("the top edge's bytes", driver.text(driver.find_one(f'{row} [data-field="copy-bytes"]')),
                 top["estimate"]["bytes"])
    cells = driver.script("return [...document.querySelectorAll(arguments[0] + ' td')].map(e => e.textContent)", row)
    low, high = re.fullmatch(r"\[(.+), (.+)\]", cells[2]).groups()
    expect_bytes("the top edge's interval, low end", low, top["estimate"]["bytes_ci"][0])
    expect_bytes("the top edge's interval, high end", high, top["estimate"]["bytes_ci"][1])
    if cells[3] != f"{top['samples']:,}" or cells[5] != f"{top['width']} B":
        raise Failure(f"the top edge's row shows samples {cells[3]!r} and width {cells[5]!r}, the data "
                      f"{top['samples']} samples of {top['width']} B")
    names = node_names(driver, f'{row} [data-field="copy-node"]')
    if names != [top["from"]["name"], top["to"]["name"]]:
        raise Failure(f"the top edge's row names {names}, the data {top['from']['name']!r} -> {top['to']['name']!r}")
    steps.append(f"copies: {rows} edges; the top one {cells[1]} {cells[2]}, {names[0]} -> {names[1]}")
    check_site_lists(driver, copies, steps)
    if not copies["chains"]:
        # A real run may copy through no two heap locations: the view must then list none.
        shown = driver.script("return document.querySelectorAll('#copy-chains li[data-chain-index]').length")
        if shown:
            raise Failure(f"the copies view lists {shown} hot chain(s), the data none")
        steps.append("copies: no hot chain in the data, none listed")
        driver.script("document.getElementById('copies-section').scrollIntoView()")
        driver.screenshot(os.path.join(artefacts, "copies.png"))
        return
    for index, chain in enumerate(copies["chains"]):
        item = f'#copy-chains li[data-chain-index="{index}"]'
        expect_bytes(f"chain {index + 1}'s bytes", driver.text(driver.find_one(f'{item} [data-field="chain-bytes"]')),
                     chain["bytes"])
        shown = node_names(driver, f'{item} [data-field="copy-node"]')
        if shown != [node["name"] for node in chain["nodes"]]:
            raise Failure(f"chain {index + 1} shows {shown}, the data {[n['name'] for n in chain['nodes']]}")
    steps.append(f"copies: {len(copies['chains'])} hot chain(s), the first "
                 f"{' -> '.join(n['name'] for n in copies['chains'][0]['nodes'])}")
    driver.script("document.getElementById('copies-section').scrollIntoView()")
    driver.screenshot(os.path.join(artefacts, "copies.png"))


def check_whole_object_facts(driver, data, steps):
    """The header says how many of the tracked objects were digested whole, as the profile's counters do, and how
    many the digest budgets left out; and what an estimate needs, in objects digested whole as in comparisons."""
    counters = dict((path, value) for path, value in data["run"]["counters"])
    tracked = counters.get("allocations", 0) - counters.get("allocations_ignored.below_size_threshold", 0) - \
        counters.get("allocations_ignored.context_table_full", 0)
    facts = driver.text(driver.find_one("#run-facts"))
    if f"at least {data['run']['min_digested_objects']} objects digested whole" not in facts:
        raise Failure(f"the header does not say what a whole-object estimate needs: {facts!r}")
    digested = counters.get("objects_digested", 0)
    skipped = counters.get("digests_skipped.budget", 0)
    if tracked <= 0 or digested + skipped == 0:
        if "Whole objects" in facts:
            raise Failure(f"the header speaks of whole objects where none were digested: {facts!r}")
        return
    expected = f"{digested} digested of {tracked} tracked"
    plain = re.sub(r"(?<=\d)[,\u202f\u00a0 ](?=\d{3})", "", facts)  # the page's thousands separators
    if expected not in plain:
        raise Failure(f"the header does not say {expected!r}: {facts!r}")
    if digested < tracked and f"{skipped} left out by the digest budgets" not in plain:
        raise Failure(f"the header does not say that {skipped} objects were left out by the budgets: {facts!r}")
    steps.append(f"header: {digested} of {tracked} tracked objects digested whole, {skipped} left out by budgets")


UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}


def page_bytes(text):
    """The byte amounts a text shows ("12.5 KiB", "300 B"), each with the most its rounding can be off by."""
    return [(float(n) * UNITS[u], 0.05 * UNITS[u] + 0.5) for n, u in re.findall(r"(\d+(?:\.\d+)?) (TiB|GiB|MiB|KiB|B)\b", text)]


def expect_bytes_close(what, text, expected):
    shown = page_bytes(text)
    if len(shown) != len(expected) or any(abs(s - e) > tolerance for (s, tolerance), e in zip(shown, expected)):
        raise Failure(f"{what}: the page shows {text!r}, the data says {expected}")


def check_heap(driver, data, steps, required):
    """The heap view: the header names the profile's heap moment where it has one; every context's "Heap saved"
    cell shows the low end of what sharing would save among its objects alive then ('–' without an estimate),
    and the details panel of a context with one shows the saving and its interval, and its churn. `required`: some
    context must have a heap estimate."""
    moment = data["run"]["heap_moment"]
    facts = driver.text(driver.find_one("#run-facts"))
    if bool(moment) != ("Heap moment" in facts) or (moment and moment not in facts):
        raise Failure(f"the header's heap moment does not match the data's {moment!r}: {facts!r}")
    column = driver.script("return [...document.getElementById('contexts-header').children]"
                           ".findIndex(th => th.dataset.sortKey === 'heap_saved')")
    if column < 0:
        raise Failure("the table has no 'Heap saved' column")
    estimated = [c for c in data["contexts"] if c["heap"] and c["heap"]["estimated"]]
    if required and not estimated:
        raise Failure("the page's data has no context with a heap estimate, and this page must have one")
    for index, context in enumerate(data["contexts"]):
        cell = driver.script("return document.querySelector('#contexts tbody tr[data-context-index=\"' + arguments[0] +"
                             " '\"]').children[arguments[1]].textContent", index, column)
        if context in estimated:
            expect_bytes_close(f"context #{context['rank']}'s heap saved", cell, [context["heap"]["saves"][1]])
        elif cell != "–":
            raise Failure(f"context #{context['rank']} has no heap estimate, yet its cell reads {cell!r}")
    for context in estimated[:3]:
        index = data["contexts"].index(context)
        driver.click(driver.find_one(f'#contexts tbody tr[data-context-index="{index}"]'))
        heap = driver.text(driver.find_one('#details [data-field="heap"]'))
        expect_bytes_close(f"context #{context['rank']}'s heap saving in the details", heap, context["heap"]["saves"])
        row = driver.text(driver.find_one('#details [data-field="heap-row"]'))
        expect_close(f"context #{context['rank']}'s heap share in the details", percents(row)[-3:],
                     [context["heap"]["largest_share"]] + context["heap"]["largest_share_ci"])
        churn = driver.text(driver.find_one('#details [data-field="churn"]'))
        per = data["run"]["seconds"] if data["run"]["seconds"] > 0 else 1
        expect_bytes_close(f"context #{context['rank']}'s churn saving in the details", churn,
                           [v / per for v in context["churn"][0 if context["evidence"] == "whole_objects" else 1:]])
    steps.append(f"heap view: moment {moment!r}; {len(estimated)} context(s) with a heap estimate, each cell and "
                 "details panel showing its saving" if moment else "heap view: no moment in the data, none shown")


def run_checks(driver, page, name, copies_expected, shared_required, artefacts, steps):
    url = pathlib.Path(page).resolve().as_uri()
    started = time.monotonic()
    driver.command("POST", "/url", {"url": url})
    wait_for(driver, "return document.body && document.body.dataset.ready === 'true'",
             f"the page's script to finish (body[data-ready]); see the console log", LOAD_SECONDS)
    ready_ms = driver.script("return performance.getEntriesByType('navigation')[0].domContentLoadedEventEnd")
    steps.append(f"loaded {url}: page ready {ready_ms:.0f} ms after navigation "
                 f"({time.monotonic() - started:.2f} s with WebDriver's round trips)")

    data = driver.script("return JSON.parse(document.getElementById('ojx-data').textContent)")
    check_whole_object_facts(driver, data, steps)
    index, context = planted_context(data, name)
    compared = context["equal"] + context["different"] > 0
    steps.append(f"planted context: #{context['rank']} (index {index}), evidence {context['evidence']}, largest "
                 f"group {share_of(context)} {context['largest_share_ci']}" +
                 (f", θ {context['theta']}, [ω, γ] [{context['omega']}, {context['gamma']}]" if compared else ""))
    check_estimates_shown(driver, data, steps)
    check_pooled(driver, data, steps)
    check_frame_pools(driver, data, steps)
    check_shared_contents(driver, data, steps, shared_required)
    check_exact(driver, data, steps)
    check_heap(driver, data, steps, shared_required)

    # The flame view: the planted context's box, wide enough to see and to click, and a box named NAME.
    box_css = f'#flame-nodes .node[data-kind="context"][data-context-index="{index}"]'
    box = driver.find_one(box_css)
    rect = driver.command("GET", f"/element/{box}/rect")
    if rect["width"] < 4 or not driver.command("GET", f"/element/{box}/displayed"):
        raise Failure(f"the planted context's box is not visible in the flame view: {rect}")
    named = driver.script("return [...document.querySelectorAll('#flame-nodes .node')]"
                          ".filter(e => e.textContent === arguments[0]).map(e => e.getBoundingClientRect().width)", name)
    if not named or max(named) < 4:
        raise Failure(f"no box in the flame view shows {name!r} (found widths {named})")
    steps.append(f"flame view: context box {rect['width']:.0f} px wide; a box named {name!r}")

    # The table: its row, naming its site and its estimate: the share, then its interval.
    row = driver.find_one(f'#contexts tbody tr[data-context-index="{index}"]')
    row_text = driver.text(row)
    site = data["strings"][context["frames"][0]] if context["frames"] else "(no frames)"
    if site not in row_text:
        raise Failure(f"the planted context's table row does not show its site {site!r}: {row_text!r}")
    if share_of(context) is None:
        raise Failure(f"the planted context has no estimate: {context['evidence']}")
    expect_close("the largest group in the table row", percents(row_text)[:3],
                 [share_of(context)] + context["largest_share_ci"])
    steps.append("table: the planted context's row shows its site and its largest group's share and interval")

    # Details: select another context first, so that the panel must change to show the planted one.
    other = 1 if index == 0 else 0
    if len(data["contexts"]) > 1:
        driver.click(driver.find_one(f'#contexts tbody tr[data-context-index="{other}"]'))
        shown = driver.script("return document.querySelector('#details h2').dataset.contextIndex")
        if shown != str(other):
            raise Failure(f"a click on row {other} shows context {shown} in the details panel")
    driver.click(driver.find_one(box_css))
    shown = driver.script("return document.querySelector('#details h2').dataset.contextIndex")
    if shown != str(index):
        raise Failure(f"a click on the planted context's box shows context {shown} in the details panel")
    field = lambda f: driver.text(driver.find_one(f'#details [data-field="{f}"]'))
    expect_close("the largest group in the details", percents(field("share")), [share_of(context)])
    expect_close("its interval in the details", percents(field("share-ci")), context["largest_share_ci"])
    if field("site") != site:
        raise Failure(f"the details panel names the site {field('site')!r}, not {site!r}")
    theta_fields = driver.script("return document.querySelectorAll('#details [data-field=\"theta\"]').length")
    if compared:
        expect_close("θ in the details", percents(field("theta")), [context["theta"]])
        expect_close("θ's interval in the details", percents(field("theta-ci")), context["theta_ci"])
        expect_close("[ω, γ] in the details", percents(field("omega-gamma")), [context["omega"], context["gamma"]])
        steps.append(f"details after a click on its box: largest group {field('share')} {field('share-ci')}; "
                     f"comparisons: θ {field('theta')} {field('theta-ci')}, [ω, γ] {field('omega-gamma')}")
    else:
        panel = driver.text(driver.find_one("#details"))
        if theta_fields or "θ" in panel or "ω" in panel:
            raise Failure(f"the details panel of a context with no comparison shows θ or ω: {panel[:400]!r}")
        steps.append(f"details after a click on its box: largest group {field('share')} {field('share-ci')}, "
                     f"no θ, ω or γ (no comparison)")
    if context.get("allocated"):  # JP's metrics: the first type's instances (and elements, for arrays)
        first = context["allocated"]["types"][0]
        shown = field("allocated-type")
        expected = [f"{round(first['instances']):,}"] + ([f"{round(first['elements']):,}"] if "elements" in first else [])
        if not all(number in shown for number in expected):
            raise Failure(f"the details panel's allocations read {shown!r}, not the profile's {expected}")
        steps.append(f"details list the allocations: {shown}")
    check_copied_from(driver, data, context, copies_expected, steps)
    # Nothing the page's code left out shows as a word of its own (replaceChildren writes null as "null").
    panel = driver.text(driver.find_one("#details"))
    if any(word in panel.split() for word in ("null", "undefined")):
        raise Failure(f"the details panel shows a missing value as text: {panel[:300]!r}")
    # The click zoomed into the context: its box now spans the view; Reset zoom brings every context back.
    zoomed = driver.script(f"const b = document.querySelector('{box_css}'), f = document.getElementById('flame-nodes');"
                           "return b.getBoundingClientRect().width / f.clientWidth")
    if zoomed < 0.99:
        raise Failure(f"after a click on its box the context spans {zoomed:.0%} of the view, not all of it")
    driver.click(driver.find_one("#zoom-reset"))
    if driver.script("return document.querySelector('#flame-nodes .node').dataset.kind") != "root":
        raise Failure("Reset zoom did not bring back the root of the view")
    steps.append("zoom: the click zoomed into the context; Reset zoom went back to all contexts")
    # A click on a frame's box zooms into it and lists the contexts below it; Back undoes the zoom.
    frame_id = driver.script(WIDEST_FRAME_BOX, name)
    if frame_id is not None:  # NAME is a frame, not (only) a type
        driver.click(driver.find_one(f'#flame-nodes .node[data-node-id="{frame_id}"]'))
        listed = driver.script("return [...document.querySelectorAll('#details .context-link')]"
                               ".map(e => Number(e.dataset.contextIndex))")
        if index not in listed:
            raise Failure(f"a click on the frame {name!r} does not list the planted context below it: {listed}")
        driver.click(driver.find_one(f'#details .context-link[data-context-index="{index}"]'))
        if driver.script("return document.querySelector('#details h2').dataset.contextIndex") != str(index):
            raise Failure("a click on the planted context in the frame's list does not show its details")
        driver.click(driver.find_one("#zoom-back"))
        if driver.script("return document.querySelector('#flame-nodes .node').dataset.kind") != "root":
            raise Failure("Back after one zoom did not bring back the root of the view")
        steps.append("frame: a click lists the planted context below it; its link selects it; Back unzooms")
    # Every width keeps the planted context on screen (it has evidence, bytes and savings; by heap saved only
    # where it saves heap: among hundreds of contexts one without is under a pixel there).
    heap_saved = bool(context["heap"] and context["heap"]["estimated"])
    for mode in ("evidence", "bytes") + (("heap",) if heap_saved else ()) + ("saved",):
        driver.script("const s = document.getElementById('width-mode'); s.value = arguments[0];"
                      "s.dispatchEvent(new Event('change'))", mode)
        if not driver.find_one(box_css):
            raise Failure(f"with width by {mode} the planted context has no box")
    steps.append("width by evidence, bytes, bytes saved" + (" and heap saved" if heap_saved else "") +
                 ": the planted context has a box in each")
    # What an engineer sees first: the top of the page, the planted context selected.
    driver.script("window.scrollTo(0, 0)")
    driver.screenshot(os.path.join(artefacts, "report.png"))

    # Search: NAME's box and the planted row are highlighted, the share matched is reported.
    search = driver.find_one("#search")
    driver.command("POST", f"/element/{search}/value", {"text": name})
    status = wait_for(driver, "return document.getElementById('search-status').textContent", "the search's result")
    matched = driver.script("return [...document.querySelectorAll('#flame-nodes .node.match')]"
                            ".map(e => e.textContent)")
    if name not in matched:
        raise Failure(f"searching for {name!r} does not highlight its box (highlighted: {matched[:5]})")
    if not driver.script(f"return document.querySelector('#contexts tr[data-context-index=\"{index}\"]')"
                         ".classList.contains('match')"):
        raise Failure(f"searching for {name!r} does not highlight the planted context's row")
    share = percents(status)
    if not share or not 0 < share[0] <= 1:
        raise Failure(f"the search reports no matched share: {status!r}")
    steps.append(f"search: {len(matched)} highlighted box(es); status {status!r}")
    driver.screenshot(os.path.join(artefacts, "search.png"))
    driver.command("POST", f"/element/{search}/clear", {})
    driver.script("document.getElementById('search').dispatchEvent(new Event('input'))")

    # Sorting: by bytes, then by the largest group's share (contexts without an estimate below every estimate).
    check_sorting(driver, data, "bytes", lambda c: c["bytes"], steps)
    check_sorting(driver, data, "share", lambda c: -1 if share_of(c) is None else share_of(c), steps)
    driver.click(driver.find_one('#contexts th[data-sort-key="share"]'))  # most replicated first, for the picture
    driver.script("document.querySelector('.table-wrap').scrollLeft = 0;"
                  "document.getElementById('table-section').scrollIntoView()")
    driver.screenshot(os.path.join(artefacts, "table.png"))

    check_copies(driver, data, copies_expected, artefacts, steps)

    # Nothing but the page itself was requested, and nothing went wrong in its script.
    resources = driver.script("return performance.getEntriesByType('resource').map(e => e.name)")
    if resources:
        raise Failure(f"the page loaded resources: {resources[:5]}")
    # The browser's own pages are not the report's doing: its new-tab page loads chrome:// resources while the
    # session starts.
    requests = []
    for entry in driver.log("performance"):
        message = json.loads(entry["message"])["message"]
        if message.get("method") != "Network.requestWillBeSent":
            continue
        if not message["params"].get("documentURL", "").startswith(("chrome:", "chrome-untrusted:")):
            requests.append(message["params"]["request"]["url"])
    others = [u for u in requests if u != url and not u.startswith("data:")]
    if others:
        raise Failure(f"the page requested {others[:5]}")
    if url not in requests:
        raise Failure("the performance log shows no request for the page itself: is the log working?")
    steps.append(f"network: {len(requests)} request(s), all for the page itself")


def console_errors(driver):
    entries = driver.log("browser")
    for entry in entries:
        if entry.get("level") not in ("SEVERE", "WARNING"):
            continue
        print(f"console {entry['level']}: {entry.get('message')}")
    return [e for e in entries if e.get("level") == "SEVERE"]


def main(argv):
    copies_expected = {"--copies": True, "--no-copies": False}.get(argv[1]) if len(argv) > 1 else None
    if copies_expected is not None:
        argv = argv[:1] + argv[2:]
    shared_required = len(argv) > 1 and argv[1] == "--shared"
    if shared_required:
        argv = argv[:1] + argv[2:]
    if len(argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    page, name, artefacts = argv[1:]
    if not os.path.isfile(page):
        print(f"html_view_test: {page}: no such file", file=sys.stderr)
        return 2
    driver_path = find_program(["chromedriver"])
    browser = find_program(["chromium", "chromium-browser", "google-chrome"])
    if not driver_path or not browser:
        missing = " and ".join(n for n, p in (("chromedriver", driver_path), ("chromium", browser)) if not p)
        print(f"SKIP: {missing} not installed (Debian: apt-get install chromium chromium-driver)")
        return SKIP
    os.makedirs(artefacts, exist_ok=True)
    # A SIGTERM (ctest, a CI runner) must still stop the browser.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))

    steps = []
    driver = WebDriver(artefacts)
    try:
        driver.start(driver_path, browser)
        run_checks(driver, page, name, copies_expected, shared_required, artefacts, steps)
        errors = console_errors(driver)
        if errors:
            raise Failure(f"{len(errors)} console error(s), the first: {errors[0].get('message')}")
        steps.append("console: no errors")
    except (Failure, OSError) as failure:  # OSError: chromedriver went away, or did not answer
        for step in steps:
            print(f"ok: {step}")
        print(f"FAIL: {failure}")
        if driver.session:
            try:
                console_errors(driver)
                print(f"screenshot of the failure: {driver.screenshot(os.path.join(artefacts, 'failure.png'))}")
            except (OSError, Failure):
                pass
        print(f"chromedriver's log: {os.path.join(artefacts, 'chromedriver.log')}")
        return 1
    finally:
        driver.close()
    for step in steps:
        print(f"ok: {step}")
    shots = [os.path.join(artefacts, f) for f in ("report.png", "search.png", "table.png", "copies.png")]
    print(f"screenshots: {', '.join(f for f in shots if os.path.exists(f))}")
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
