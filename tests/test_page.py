"""The chat page in a real headless Chromium (Debian's chromium + chromedriver)."""

import shutil
from dataclasses import replace

import pytest

from assistant.interfaces.http import create_app

from .live_server import LiveServer

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
pytestmark = pytest.mark.skipif(not (CHROMIUM and DRIVER), reason="no chromium/chromedriver installed (apt-get install chromium chromium-driver)")


@pytest.fixture(scope="module")
def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--no-first-run", "--window-size=1100,1400"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def site(bundled_settings, bundled_kb, tmp_path_factory):
    settings = replace(bundled_settings, feedback_db=str(tmp_path_factory.mktemp("fb") / "f.sqlite3"))
    app = create_app(settings)
    with LiveServer(app) as live:
        yield live, app


def _ask(browser, url, question):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get(url + "/")
    box = browser.find_element(By.ID, "question")
    box.send_keys(question)
    browser.find_element(By.ID, "ask").click()
    WebDriverWait(browser, 30).until(lambda d: d.find_elements(By.CSS_SELECTOR, ".answer[data-answer-id]"))
    return browser.find_element(By.CSS_SELECTOR, ".answer")


def test_page_answers_with_clickable_citations_and_feedback(browser, site):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    live, app = site
    card = _ask(browser, live.url, "requests hang after I enabled logprobs")
    body = card.find_element(By.CSS_SELECTOR, ".body").text
    assert "sysctl -w kernel.msgmax=1048576" in body
    cites = card.find_elements(By.CSS_SELECTOR, ".citations li")
    assert cites and "logprobs" in cites[0].text
    passage = cites[0].find_element(By.CSS_SELECTOR, ".passage")
    assert not passage.is_displayed()
    card.find_element(By.CSS_SELECTOR, "a.cite").click()  # [1] in the text opens the passage
    assert passage.is_displayed() and "System V" in passage.text
    card.find_element(By.CSS_SELECTOR, ".comment").send_keys("missing the docker example")
    card.find_element(By.CSS_SELECTOR, ".down").click()
    WebDriverWait(browser, 10).until(lambda d: "noted" in card.find_element(By.CSS_SELECTOR, ".thanks").text)
    drafts = app.state.assistant.feedback.export_negative()
    assert drafts and drafts[-1]["question"] == "requests hang after I enabled logprobs"
    assert "docker" in drafts[-1]["draft"]["comments"]
    browser.save_screenshot(str(live.url and __import__("pathlib").Path(__file__).parent / ".." / ".pytest_cache" / "page.png"))


def test_page_shows_tool_results_and_chinese_answers(browser, site):
    from selenium.webdriver.common.by import By

    live, _ = site
    card = _ask(browser, live.url, "17131 个 block，每个请求平均 2 万 token，实际能并发多少")
    assert "计算结果" in card.find_element(By.CSS_SELECTOR, ".body").text
    tools = card.find_elements(By.CSS_SELECTOR, ".tools details")
    assert tools and "kv_concurrency" in tools[0].text
    tools[0].click()
    assert '"concurrent_requests": 54' in tools[0].find_element(By.CSS_SELECTOR, "pre").text


def test_page_says_when_nothing_is_found(browser, site):
    from selenium.webdriver.common.by import By

    live, _ = site
    card = _ask(browser, live.url, "How do I configure TLS on a Kubernetes ingress?")
    assert "ungrounded" in card.get_attribute("class")
    assert "nothing in the knowledge base" in card.find_element(By.CSS_SELECTOR, ".body").text


def test_page_says_the_knowledge_base_is_loading_until_it_is(browser, tiny_settings, monkeypatch, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    import threading

    import assistant.knowledge as knowledge

    release = threading.Event()
    real_open_kb = knowledge.open_kb

    def slow_open_kb(settings, progress):
        progress("indexing the knowledge base (no index yet)…")
        release.wait(30)
        return real_open_kb(settings, progress=progress)

    monkeypatch.setattr(knowledge, "open_kb", slow_open_kb)
    app = create_app(replace(tiny_settings, feedback_db=str(tmp_path / "f.db")))
    with LiveServer(app, wait_loaded=False) as live:
        browser.get(live.url + "/")
        status = browser.find_element(By.ID, "status")
        WebDriverWait(browser, 10).until(lambda d: "loading the knowledge base" in status.text)
        assert "no index yet" in status.text
        browser.find_element(By.ID, "question").send_keys("widget requests hang")
        browser.find_element(By.ID, "ask").click()
        WebDriverWait(browser, 10).until(lambda d: d.find_elements(By.CSS_SELECTOR, ".answer.error"))
        assert "still loading" in browser.find_element(By.CSS_SELECTOR, ".answer.error .body").text
        release.set()
        WebDriverWait(browser, 60).until(lambda d: not status.text.startswith("loading") and status.get_attribute("data-loading") is None)
        card = _ask(browser, live.url, "widget requests hang")
        assert "queue-len" in card.find_element(By.CSS_SELECTOR, ".body").text


def test_a_question_over_the_servers_byte_limit_is_stopped_on_the_page(browser, site):
    """The box counted characters (8,000) while the server counts UTF-8 bytes (8,192): a
    Chinese question of 3,000 characters could be typed and sent, only to be refused."""
    from selenium.webdriver.common.by import By

    live, _app = site
    browser.get(live.url + "/")
    box = browser.find_element(By.ID, "question")
    assert box.get_attribute("data-max-bytes") == "8192"
    browser.execute_script("arguments[0].value = arguments[1];", box, "推理卡住了" * 600)  # 3,000 characters, 9,000 bytes
    browser.find_element(By.ID, "ask").click()
    status = browser.find_element(By.ID, "status").text
    assert "9000 bytes" in status and "8192" in status
    assert not browser.find_elements(By.CSS_SELECTOR, ".answer")
