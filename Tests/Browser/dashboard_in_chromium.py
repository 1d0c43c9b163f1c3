#!/usr/bin/env python3
"""Drives the Neuron dashboard of a running `neuron train --dashboard` in headless Chromium.

Usage: dashboard_in_chromium.py URL SCREENSHOT.png [MIN_EPOCH [HEIGHT]]

Opens the page, sees the loss curve grow, presses Pause and waits for the page to show the phase
paused, presses Step with 5 and checks that the step advances by exactly 5, presses Check gradients
and waits for the report, clicks a unit for its explanation, and saves a screenshot. Prints one JSON
object with what it saw; exits non-zero (with the reason on stderr) on anything else. Every wait is
bounded. Called by the Swift test `DashboardBrowserTests`, which checks the CLI's side.
"""
import json
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


def main():
    url, screenshot = sys.argv[1], sys.argv[2]
    # For the README's picture: let a few epochs pass first, in a taller window.
    min_epoch = int(sys.argv[3]) if len(sys.argv) > 3 else 0
    height = int(sys.argv[4]) if len(sys.argv) > 4 else 1250
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
    seen = {}
    try:
        driver.get(url)
        say("page loaded")
        frame = lambda: driver.execute_script("return window.dashboard && window.dashboard.last")
        phase = lambda: driver.find_element(By.ID, "phase").get_attribute("data-phase")
        step = lambda: int(driver.find_element(By.ID, "step").get_attribute("data-step"))

        wait_for("a running frame", lambda: frame() and phase() == "running")
        first = wait_for("a loss curve", lambda: (frame()["lossSteps"] or [None])[-1])
        points = int(driver.find_element(By.ID, "loss-plot").get_attribute("data-points"))
        grown = wait_for("the loss curve to grow", lambda: ((frame()["lossSteps"] or [0])[-1] > first) and frame()["lossSteps"][-1])
        seen["curve"] = {"lastStepBefore": first, "lastStepAfter": grown, "pointsDrawn": points}

        wait_for(f"epoch {min_epoch}", lambda: frame()["epoch"] >= min_epoch, 1800)
        driver.find_element(By.ID, "btn-pause").click()
        wait_for("the phase paused", lambda: phase() == "paused")
        paused_at = step()
        time.sleep(0.5)  # a paused run does not move
        if step() != paused_at or phase() != "paused":
            raise SystemExit(f"the paused run moved: step {paused_at} then {step()} ({phase()})")
        seen["paused"] = {"phase": phase(), "step": paused_at, "badge": driver.find_element(By.ID, "phase").text}

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
