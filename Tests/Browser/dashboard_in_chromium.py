#!/usr/bin/env python3
"""Drives the Neuron dashboard of a running `neuron train --dashboard` in headless Chromium.

Usage: dashboard_in_chromium.py URL SCREENSHOT.png [MIN_EPOCH [HEIGHT]]
       dashboard_in_chromium.py --saved URL SCREENSHOT.png
       dashboard_in_chromium.py --attention URL SCREENSHOT.png WORD
       dashboard_in_chromium.py --end URL_FILE SCREENSHOT.png

Live (a `neuron train --dashboard`): opens the page, sees the loss curve grow, notes which controls
are enabled while running, presses Pause and waits for the page to show the phase paused, notes the
controls again, presses Step with 5 and checks that the step advances by exactly 5, presses Check
gradients and waits for the report, clicks a unit for its explanation, and saves a screenshot.

Saved (a `neuron dashboard RUN`): notes the controls, each layer's ‖w‖ chart (its x axis and its
note) and ‖∂L/∂w‖ as shown, and saves a screenshot.

Attention (a `neuron dashboard RUN` of a text model with attention layers): notes the header (its height,
the title on one line, cut, whole in its tooltip) and the charts' headings and legends, waits for the maps
of the prefilled test line, types a line outside the vocabulary and reads the refusal, types WORD and waits
for its maps, counts the canvases and their coloured pixels, hovers a cell and reads its weight, and saves
a screenshot of the panel and one of the page's top (SCREENSHOT with -top before .png).

End (a `neuron train --dashboard` that finishes by itself): starts Chromium first and says so by creating
URL_FILE.ready, then waits for the run's address in URL_FILE (the run starts only then, so that a short run
is seen while it trains), sees the page running, waits for the run's last frame, notes what the page shows
of the end (badge, enabled controls, the end panel's numbers, the connection line), waits for the server to
go away and for as long again as a browser waits to reconnect, notes the page again, and saves a screenshot.

The first two check at 1280 and 800 px wide that the step and each layer's numbers stay on one line inside
their panel. Prints one JSON object with what it saw; exits non-zero (with the reason on stderr) on
anything else. Every wait is bounded. Called by the Swift test `DashboardBrowserTests`, which checks
what the page showed and the CLI's side.
"""
import json
import os
import sys
import tempfile
import time

from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By


STARTED = time.monotonic()


def say(what):
    """Progress on stderr, timed, so that a failure shows how far the page got."""
    print(f"{time.monotonic() - STARTED:7.2f} s  {what}", file=sys.stderr, flush=True)


def wait_for(what, condition, timeout=30.0):
    say(f"waiting for {what}")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise SystemExit(f"timed out after {timeout} s waiting for {what}")


# The ids of the controls, by the event names of the frame's acceptedEvents.
CONTROLS = {"start": "btn-start", "pause": "btn-pause", "resume": "btn-resume", "stop": "btn-stop",
            "reset": "btn-reset", "step": "btn-step", "checkGradients": "btn-check"}


def enabled_controls(driver):
    """The event names of the buttons the page has enabled, sorted."""
    return sorted(name for name, id in CONTROLS.items() if driver.find_element(By.ID, id).is_enabled())


# For each element matching a selector: how many lines its text takes (distinct tops of its text's boxes) and whether
# it sticks out of its panel.
LINES_SCRIPT = """
return [...document.querySelectorAll(arguments[0])].map(element => {
  const range = document.createRange(); range.selectNodeContents(element);
  const tops = new Set([...range.getClientRects()].map(r => Math.round(r.top)));
  const box = range.getBoundingClientRect(), panel = element.closest("section, .layer").getBoundingClientRect();
  return { text: element.textContent, lines: tops.size, inside: box.left >= panel.left - 0.5 && box.right <= panel.right + 0.5 };
});
"""


def layout_at(driver, width, height):
    """The step's and the layers' numbers at `width` px: each must be one line inside its panel."""
    driver.set_window_size(width, height)
    time.sleep(0.3)
    # Found and measured in one script: the page rebuilds a layer's numbers with each frame.
    seen = driver.execute_script(LINES_SCRIPT, "#step, .layer .nums .v, .layer .nums .k")
    bad = [e for e in seen if e["lines"] != 1 or not e["inside"]]
    if bad:
        raise SystemExit(f"at {width} px these wrap or stick out: {bad}")
    return {"width": width, "checked": len(seen), "step": seen[0]["text"]}


def start_chromium(height):
    options = Options()
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     f"--window-size=1500,{height}", "--hide-scrollbars", "--no-first-run",
                     f"--user-data-dir={tempfile.mkdtemp(prefix='neuron-chromium-')}"):
        options.add_argument(argument)
    options.binary_location = "/usr/bin/chromium"
    say("starting chromium")
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    say("chromium started")
    driver.set_page_load_timeout(30)
    driver.set_script_timeout(30)
    return driver


def saved(url, screenshot):
    """A run shown from its files: only Check gradients enabled, a ‖w‖ chart per layer with a real axis."""
    driver = start_chromium(1100)
    seen = {}
    try:
        driver.get(url)
        frame = lambda: driver.execute_script("return window.dashboard && window.dashboard.last")
        wait_for("a frame from the files", lambda: frame() and frame()["source"] == "files")
        wait_for("the controls to follow the frame", lambda: enabled_controls(driver) == sorted(frame()["acceptedEvents"]))
        seen["accepted"] = sorted(frame()["acceptedEvents"])
        seen["enabled"] = enabled_controls(driver)
        seen["stepBoxEnabled"] = driver.find_element(By.ID, "step-count").is_enabled()
        charts = []
        for layer in frame()["layers"]:
            canvas = driver.find_element(By.ID, f"layer-plot-{layer['index']}")
            values = driver.find_elements(By.CSS_SELECTOR, f"#layer-{layer['index']} .nums .v")
            charts.append({"layer": layer["index"], "step": frame()["step"],
                           "x0": float(canvas.get_attribute("data-x0")), "x1": float(canvas.get_attribute("data-x1")),
                           "note": canvas.get_attribute("data-note"), "points": int(canvas.get_attribute("data-points")),
                           "gradientShown": values[1].text})
        seen["charts"] = charts
        seen["gradientNote"] = driver.find_element(By.ID, "gradient-note").text
        seen["chartLabels"] = chart_labels(driver)
        window = driver.get_window_size()
        seen["layout"] = [layout_at(driver, 1280, window["height"]), layout_at(driver, 800, window["height"])]
        driver.set_window_size(window["width"], window["height"])
        time.sleep(0.3)
        driver.save_screenshot(screenshot)
        seen["screenshot"] = screenshot
    finally:
        driver.quit()
    print(json.dumps(seen))


# Each attention map's pixels: how many differ from the panel's white, and how many distinct colours.
PIXELS_SCRIPT = """
return [...document.querySelectorAll("canvas.attention-map")].map(canvas => {
  const data = canvas.getContext("2d").getImageData(0, 0, canvas.width, canvas.height).data;
  let coloured = 0; const colours = new Set();
  for (let i = 0; i < data.length; i += 4) {
    if (data[i] !== 255 || data[i + 1] !== 255 || data[i + 2] !== 255) coloured++;
    colours.add((data[i] << 16) | (data[i + 1] << 8) | data[i + 2]);
  }
  return { block: Number(canvas.dataset.block), head: Number(canvas.dataset.head), positions: Number(canvas.dataset.positions),
           width: canvas.clientWidth, coloured: coloured / (data.length / 4), colours: colours.size };
});
"""


def attention(url, screenshot, word):
    """A saved text transformer: the maps of the test line, a refusal, WORD's maps drawn, a cell's weight on hover."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys
    driver = start_chromium(1100)
    seen = {}
    try:
        driver.get(url)
        frame = lambda: driver.execute_script("return window.dashboard && window.dashboard.last")
        wait_for("a frame from the files", lambda: frame() and frame()["source"] == "files")
        drawn = lambda: driver.execute_script("return window.dashboard.attentionDrawn")
        wait_for("the test line's maps", lambda: drawn() >= 1, 60)
        seen["header"] = driver.execute_script(HEADER_SCRIPT)
        seen["title"] = frame()["title"]
        seen["chartLabels"] = chart_labels(driver)
        top = screenshot[:-4] + "-top.png"
        driver.save_screenshot(top)
        seen["topScreenshot"] = top
        box = driver.find_element(By.ID, "attention-text")
        seen["line"] = frame().get("attentionLine")
        seen["prefilled"] = box.get_attribute("value")
        status = lambda: driver.find_element(By.ID, "attention-status")

        box.clear()
        box.send_keys("Zz" + Keys.ENTER)
        wait_for("the refusal", lambda: status().get_attribute("data-error") == "true")
        seen["refusal"] = status().text

        before = drawn()
        box.clear()
        box.send_keys(word)
        driver.find_element(By.ID, "attention-show").click()
        wait_for(f"the maps of {word!r}", lambda: drawn() > before, 60)
        maps = driver.execute_script("return window.dashboard.attention")
        seen["labels"] = maps["labels"]
        seen["heads"] = [len(block["heads"]) for block in maps["blocks"]]
        seen["status"] = status().text
        seen["maps"] = driver.execute_script(PIXELS_SCRIPT)

        section = driver.find_element(By.ID, "attention-section")
        driver.execute_script("arguments[0].scrollIntoView()", section)
        time.sleep(0.2)
        # Hover the last row's first cell of block 0, head 0: the tip shows its weight.
        canvas = driver.find_element(By.CSS_SELECTOR, "canvas.attention-map[data-block='0'][data-head='0']")
        px, edge, m = (int(canvas.get_attribute(f"data-{k}")) for k in ("cell", "edge", "positions"))
        size = canvas.size
        ActionChains(driver).move_to_element_with_offset(
            canvas, int(edge + px / 2 - size["width"] / 2), int(edge + (m - 0.5) * px - size["height"] / 2)).perform()
        tip = wait_for("the tip", lambda: driver.find_element(By.ID, "attention-tip").is_displayed()
                       and driver.find_element(By.ID, "attention-tip").text)
        seen["tip"] = tip
        seen["weight"] = maps["blocks"][0]["heads"][0][m - 1][0]
        section.screenshot(screenshot)
        seen["screenshot"] = screenshot
    finally:
        driver.quit()
    print(json.dumps(seen))


# The header's height, and whether the title is one line cut short with the whole of it in its tooltip.
HEADER_SCRIPT = """
const header = document.querySelector("header").getBoundingClientRect(), title = document.getElementById("title");
const range = document.createRange(); range.selectNodeContents(title);
return { height: header.height, text: title.textContent, tooltip: title.title,
         lines: new Set([...range.getClientRects()].map(r => Math.round(r.top))).size,
         cut: title.scrollWidth > title.clientWidth };
"""


def chart_labels(driver):
    """The loss chart's heading and each chart's legend as shown, read in one script: a live page
    rebuilds its legends with every frame."""
    return driver.execute_script("""
      const legend = id => [...document.querySelectorAll("#" + id + " span")].map(e => e.innerText);
      return { lossHeading: document.getElementById("loss-heading").innerText, lossLegend: legend("loss-legend"),
               epochLegend: legend("epoch-legend"), layersLegend: legend("layers-legend"),
               accuracyBox: !document.getElementById("val-acc").parentElement.hidden };
    """)


def server_gone(url):
    """Whether nothing answers at the dashboard's address any more."""
    import urllib.error
    import urllib.request
    try:
        urllib.request.urlopen(url, timeout=2).close()
        return False
    except (urllib.error.URLError, ConnectionError, OSError):
        return True


def end(url_file, screenshot):
    """A live run that finishes: the page shows its end, and does not try to reconnect once the server has gone."""
    driver = start_chromium(1100)
    seen = {}
    try:
        driver.get("about:blank")
        open(url_file + ".ready", "w").close()
        url = wait_for("the run's address", lambda: open(url_file).read().strip() if os.path.exists(url_file) else None, 120)
        driver.get(url)
        frame = lambda: driver.execute_script("return window.dashboard && window.dashboard.last")
        phase = lambda: driver.find_element(By.ID, "phase").get_attribute("data-phase")
        wait_for("a running frame", lambda: frame() and phase() == "running")
        seen["running"] = {"enabled": enabled_controls(driver), "connection": driver.find_element(By.ID, "connection").text}
        seen["lossHeading"] = driver.find_element(By.ID, "loss-heading").text

        def last_frame():
            if frame().get("ending") is not None:
                return True
            # The stream dropped: the run's end never came if nothing answers any more.
            if "disconnected" in driver.find_element(By.ID, "connection").text and server_gone(url):
                if frame().get("ending") is not None:
                    return True  # it came just before the server went
                raise SystemExit(f"the server went away and the page never got the run's end: it shows {phase()}, "
                                 f"step {frame()['step']} of {frame()['totalSteps']}, "
                                 f"{driver.find_element(By.ID, 'connection').text!r}, controls {enabled_controls(driver)}")
            return False
        wait_for("the run's last frame", last_frame, 300)
        last = frame()
        section = driver.find_element(By.ID, "end-section")
        number = lambda id: driver.find_element(By.CSS_SELECTOR, f"#{id} .v").text
        seen["ended"] = {"phase": phase(), "badge": driver.find_element(By.ID, "phase").text, "enabled": enabled_controls(driver),
                         "stepBoxEnabled": driver.find_element(By.ID, "step-count").is_enabled(),
                         "sectionShown": section.is_displayed(), "heading": driver.find_element(By.ID, "end-heading").text,
                         "text": driver.find_element(By.ID, "end-text").text,
                         "loss": number("end-loss"), "accuracy": number("end-accuracy"),
                         "summary": last["ending"].get("summary"), "step": last["step"], "totalSteps": last["totalSteps"],
                         "connection": driver.find_element(By.ID, "connection").text}
        frames = driver.execute_script("return window.dashboard.frames")
        wait_for("the server to go away", lambda: server_gone(url), 30)
        # Chromium retries a lost event stream after about 3 s: a page still listening shows it by then.
        time.sleep(4)
        seen["afterServer"] = {"connection": driver.find_element(By.ID, "connection").text, "phase": phase(),
                               "framesSince": driver.execute_script("return window.dashboard.frames") - frames,
                               "enabled": enabled_controls(driver)}
        driver.execute_script("window.scrollTo(0, 0)")
        driver.save_screenshot(screenshot)
        seen["screenshot"] = screenshot
    finally:
        driver.quit()
    print(json.dumps(seen))


def main():
    if sys.argv[1] == "--saved":
        saved(sys.argv[2], sys.argv[3])
        return
    if sys.argv[1] == "--attention":
        attention(sys.argv[2], sys.argv[3], sys.argv[4])
        return
    if sys.argv[1] == "--end":
        end(sys.argv[2], sys.argv[3])
        return
    url, screenshot = sys.argv[1], sys.argv[2]
    # For the README's picture: let a few epochs pass first, in a taller window.
    min_epoch = int(sys.argv[3]) if len(sys.argv) > 3 else 0
    height = int(sys.argv[4]) if len(sys.argv) > 4 else 1250
    driver = start_chromium(height)
    seen = {}
    try:
        driver.get(url)
        say("page loaded")
        frame = lambda: driver.execute_script("return window.dashboard && window.dashboard.last")
        phase = lambda: driver.find_element(By.ID, "phase").get_attribute("data-phase")
        step = lambda: int(driver.find_element(By.ID, "step").get_attribute("data-step"))

        wait_for("a running frame", lambda: frame() and phase() == "running")
        last_step = lambda: ([None] + [point["step"] for point in frame()["lossHistory"]["points"]])[-1]
        first = wait_for("a loss curve", last_step)
        points = int(driver.find_element(By.ID, "loss-plot").get_attribute("data-points"))
        grown = wait_for("the loss curve to grow", lambda: (last_step() or 0) > first and last_step())
        seen["curve"] = {"lastStepBefore": first, "lastStepAfter": grown, "pointsDrawn": points}
        seen["chartLabels"] = chart_labels(driver)
        seen["running"] = {"phase": phase(), "enabled": enabled_controls(driver),
                           "accepted": sorted(frame()["acceptedEvents"]),
                           "stepBoxEnabled": driver.find_element(By.ID, "step-count").is_enabled()}
        window = driver.get_window_size()
        seen["layout"] = [layout_at(driver, 800, window["height"]), layout_at(driver, 1280, window["height"])]
        driver.set_window_size(window["width"], window["height"])

        wait_for(f"epoch {min_epoch}", lambda: frame()["epoch"] >= min_epoch, 1800)
        driver.find_element(By.ID, "btn-pause").click()
        wait_for("the phase paused", lambda: phase() == "paused")
        paused_at = step()
        time.sleep(0.5)  # a paused run does not move
        if step() != paused_at or phase() != "paused":
            raise SystemExit(f"the paused run moved: step {paused_at} then {step()} ({phase()})")
        wait_for("the controls of a paused run", lambda: "resume" in enabled_controls(driver))
        seen["paused"] = {"phase": phase(), "step": paused_at, "badge": driver.find_element(By.ID, "phase").text,
                          "enabled": enabled_controls(driver)}

        box = driver.find_element(By.ID, "step-count")
        box.clear()
        box.send_keys("5")
        driver.find_element(By.ID, "btn-step").click()
        wait_for("the step to reach paused + 5", lambda: step() == paused_at + 5 and phase() == "paused")
        time.sleep(0.5)
        if step() != paused_at + 5:
            raise SystemExit(f"step 5 from {paused_at} went to {step()}")
        seen["stepped"] = {"phase": phase(), "step": step()}

        driver.find_element(By.ID, "btn-check").click()
        verdict = wait_for("the gradient-check report", lambda: driver.find_element(By.ID, "check-verdict").get_attribute("data-passed"), 120)
        rows = driver.find_elements(By.CSS_SELECTOR, "#check-tensors tr")
        seen["check"] = {"passed": verdict, "tensorRows": len(rows) - 1, "text": driver.find_element(By.ID, "check-verdict").text}

        driver.find_element(By.CSS_SELECTOR, ".unit[data-layer='0'][data-unit='3']").click()
        wait_for("the unit's table", lambda: len(driver.find_elements(By.CSS_SELECTOR, "#explain-table tr")) > 5, 60)
        seen["explain"] = {"rows": len(driver.find_elements(By.CSS_SELECTOR, "#explain-table tr")) - 1,
                           "status": driver.find_element(By.ID, "explain-status").text}
        driver.execute_script("window.scrollTo(0, 0)")
        driver.save_screenshot(screenshot)
        seen["screenshot"] = screenshot
    finally:
        driver.quit()
    print(json.dumps(seen))


if __name__ == "__main__":
    main()
