package dev.settle.e2e;

import dev.settle.quickstart.SettleLauncher;
import dev.settle.testsupport.ModelDouble;
import dev.settle.testsupport.ModelResponse;
import dev.settle.testsupport.ToolCall;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.openqa.selenium.By;
import org.openqa.selenium.OutputType;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;
import org.openqa.selenium.interactions.Actions;
import tools.jackson.databind.JsonNode;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.stream.StreamSupport;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The quickstart's chat page in a real browser (headless Chromium from the distribution's {@code chromium} and
 * {@code chromium-driver} packages, driven by Selenium) against the whole stack and the model double. Skipped, with
 * the reason, only where Chromium or its driver is not installed ({@code .ci/run} installs both). A finished burst is
 * saved as docs/img/chat.png.
 */
class ChatPageBrowserTest {
    static final Duration LONG = Duration.ofSeconds(30);
    /** The debounce window, not learned: a quick typist's next keystroke signals well within it. */
    static final Duration WINDOW = Duration.ofSeconds(1);
    /** Longer than the window: without typing signals each pause would start a turn. */
    static final Duration PAUSE = Duration.ofMillis(2000);

    static final File CHROMIUM = new File(System.getProperty("settle.chromium", "/usr/bin/chromium"));
    static final File DRIVER = new File(System.getProperty("settle.chromedriver", "/usr/bin/chromedriver"));

    static SettleSystem settle;
    static ChromeDriver browser;
    static Path profile;
    static String base;
    /** Why the browser cannot run here; null when it can. */
    static String missing;

    @BeforeAll
    static void start() throws Exception {
        if (!CHROMIUM.canExecute() || !DRIVER.canExecute()) {
            missing = "no headless Chromium: " + CHROMIUM + " or " + DRIVER
                    + " is missing (Debian: apt-get install -y chromium chromium-driver)";
            System.err.println("ChatPageBrowserTest skipped: " + missing);
            return;
        }
        settle = SettleSystem.withPage(
                "chatpage",
                Map.of(
                        "settle.debounce.adaptive", "false",
                        "settle.debounce.window", WINDOW.toMillis() + "ms",
                        "settle.debounce.maxwait", "20s",
                        "settle.debounce.typinghold", "3s"));
        base = "http://localhost:" + SettleLauncher.port(settle.ingest);
        profile = Files.createTempDirectory("settle-chromium");
        ChromeOptions options = new ChromeOptions();
        options.setBinary(CHROMIUM);
        options.addArguments(
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--window-size=900,560",
                "--user-data-dir=" + profile);
        ChromeDriverService service =
                new ChromeDriverService.Builder().usingDriverExecutable(DRIVER).build();
        browser = new ChromeDriver(service, options);
    }

    @AfterAll
    static void stop() throws Exception {
        if (browser != null) {
            browser.quit();
        }
        if (settle != null) {
            settle.close();
        }
    }

    @BeforeEach
    void reset() {
        Assumptions.assumeTrue(missing == null, missing);
        settle.model.reset();
        settle.receiver.reset();
    }

    @Test
    void a_typed_burst_with_pauses_longer_than_the_window_is_one_reply_covering_every_message_and_one_model_call()
            throws Exception {
        String s = SettleSystem.newSessionId();
        String marker = "burst-" + s.substring(4, 12);
        String reply = "Booked: lunch 35 under food, coffee 12 under coffee.";
        settle.model.respondWith(r -> r.body().contains(marker)
                ? ModelResponse.text(reply).chunkSize(3).chunkDelay(Duration.ofMillis(40))
                : ModelDouble.echo(r));
        openSession(s);
        List<String> texts = List.of("lunch 35 " + marker, "and coffee", "12", "both on the team card please");

        type(texts.getFirst(), Duration.ZERO);
        click("send");
        boolean held = false;
        for (String text : texts.subList(1, texts.size())) {
            held |= type(text, PAUSE);
            click("send");
        }
        assertTrue(held, "the page showed the timer held by typing");

        WebElement turn = awaitTurn("committed");
        assertEquals("4", turn.getDomAttribute("data-covers-version"));
        assertEquals("1", turn.getDomAttribute("data-from"));
        assertEquals(reply, text(turn.findElement(By.className("text"))));
        assertTrue(turn.findElement(By.className("state")).getText().contains("covers v1–v4"));
        assertEquals(4, browser.findElements(By.cssSelector(".msg.in-turn")).size());
        assertEquals(1, browser.findElements(By.className("turn")).size());
        settle.awaitQuiescent(LONG);
        assertEquals(1, settle.modelCallsMentioning(marker), "one model call");
        assertEquals(List.of("COMMITTED"), settle.turnStates(s));
        awaitText("model-calls", "1");
        assertEquals("0", byId("discarded-tokens").getText());
        Files.write(repositoryRoot().resolve("docs/img/chat.png"), browser.getScreenshotAs(OutputType.BYTES));
    }

    @Test
    void a_double_click_on_send_sends_one_message() {
        String s = SettleSystem.newSessionId();
        openSession(s);
        type("double " + s, Duration.ZERO);
        new Actions(browser).doubleClick(byId("send")).perform();

        awaitTurn("committed");
        settle.awaitQuiescent(LONG);
        assertEquals(1, browser.findElements(By.className("msg")).size());
        assertEquals(1, userMessages(s));
        assertEquals(List.of("COMMITTED"), settle.turnStates(s));
    }

    @Test
    void a_reload_mid_stream_resumes_after_the_last_event_seen_and_shows_the_committed_text_exactly() {
        String s = SettleSystem.newSessionId();
        String marker = "reload-" + s.substring(4, 12);
        String reply = "A reply long enough to be cut by a reload: "
                + "one two three four five six seven eight nine ".repeat(3) + "end.";
        settle.model.respondWith(r -> r.body().contains(marker)
                ? ModelResponse.text(reply).chunkSize(2).chunkDelay(Duration.ofMillis(40))
                : ModelDouble.echo(r));
        openSession(s);
        type("tell me " + marker, Duration.ZERO);
        click("send");
        await("part of the reply shown")
                .atMost(LONG)
                .pollInterval(Duration.ofMillis(20))
                .pollInSameThread()
                .until(() -> browser.findElements(By.cssSelector(".turn.running .text")).stream()
                        .anyMatch(t -> text(t).length() > 10));

        browser.navigate().refresh();

        await("the stream resumed after the last event seen before the reload")
                .atMost(LONG)
                .pollInterval(Duration.ofMillis(20))
                .pollInSameThread()
                .until(() -> byId("stream").getText().startsWith("stream live (after event "));
        assertTrue(
                browser.findElements(By.cssSelector(".turn.running")).size() == 1,
                "the reply was still streaming when the page came back");
        WebElement turn = awaitTurn("committed");
        assertEquals(reply, text(turn.findElement(By.className("text"))));
        settle.awaitQuiescent(LONG);
        JsonNode messages = settle.get("/v1/sessions/" + s + "/messages").get("messages");
        List<String> replies = StreamSupport.stream(messages.spliterator(), false)
                .filter(m -> "assistant".equals(m.path("role").asString()))
                .map(m -> m.get("text").asString())
                .toList();
        assertEquals(List.of(reply), replies, "the committed reply is the model's text");
        assertEquals(replies.getFirst(), text(turn.findElement(By.className("text"))));
    }

    @Test
    void a_turn_interrupted_by_a_newer_message_is_shown_struck_through_and_the_next_reply_covers_both() {
        String s = SettleSystem.newSessionId();
        String marker = "cut-" + s.substring(4, 12);
        settle.model.respondWith(r -> !r.body().contains(marker)
                ? ModelDouble.echo(r)
                : r.body().contains("second " + marker)
                        ? ModelResponse.text("Both answered.")
                        : ModelResponse.text("a slow answer that the newer message cuts off ".repeat(4))
                                .chunkSize(2)
                                .chunkDelay(Duration.ofMillis(60)));
        openSession(s);
        type("first " + marker, Duration.ZERO);
        click("send");
        await("the first turn streams")
                .atMost(LONG)
                .pollInterval(Duration.ofMillis(20))
                .pollInSameThread()
                .until(() -> browser.findElements(By.cssSelector(".turn.running .text")).stream()
                        .anyMatch(t -> !text(t).isEmpty()));
        type("second " + marker, Duration.ZERO);
        click("send");

        WebElement cut = awaitTurn("discarded");
        assertEquals(
                "interrupted by your newer message",
                cut.findElement(By.className("note")).getText());
        WebElement partial = cut.findElement(By.className("text"));
        assertTrue(!text(partial).isEmpty(), "the partial text stays");
        assertTrue(partial.getCssValue("text-decoration").contains("line-through"));
        WebElement next = awaitTurn("committed");
        assertEquals("Both answered.", text(next.findElement(By.className("text"))));
        assertEquals("2", next.getDomAttribute("data-covers-version"));
        settle.awaitQuiescent(LONG);
        assertEquals(List.of("DISCARDED", "COMMITTED"), settle.turnStates(s));
        await("the discarded tokens counted")
                .atMost(LONG)
                .pollInSameThread()
                .until(() -> Long.parseLong(byId("discarded-tokens").getText()) > 0);
    }

    @Test
    void tool_steps_are_shown_with_their_status_and_result() {
        String s = SettleSystem.newSessionId();
        String marker = "tools-" + s.substring(4, 12);
        settle.model.respondWith(r -> !r.body().contains(marker)
                ? ModelDouble.echo(r)
                : r.messages().stream().noneMatch(m -> "tool".equals(m.role()))
                        ? ModelResponse.toolCalls(List.of(
                                new ToolCall("ok", "create_transaction", "{\"amount\":35,\"category\":\"food\"}"),
                                new ToolCall("bad", "create_transaction", "{\"amount\":-5,\"category\":\"food\"}")))
                        : ModelResponse.text("Booked the lunch; the other one was refused."));
        openSession(s);
        type("lunch 35 and -5 " + marker, Duration.ZERO);
        click("send");

        WebElement turn = awaitTurn("committed");
        List<WebElement> tools = turn.findElements(By.className("tool"));
        assertEquals(2, tools.size());
        assertEquals(
                "COMPLETED", tools.get(0).findElement(By.className("status")).getText());
        assertEquals(" → booked 35.00 under food", text(tools.get(0).findElement(By.className("result"))));
        assertEquals("FAILED", tools.get(1).findElement(By.className("status")).getText());
        assertTrue(!text(tools.get(1).findElement(By.className("result"))).isEmpty());
        assertEquals("Booked the lunch; the other one was refused.", text(turn.findElement(By.className("text"))));
        awaitText("model-calls", "2");
    }

    /**
     * A turn whose worker was killed (or broke on a database error) ends with {@code turn.abandoned}; the page shows
     * it stopped with its reason, its partial text kept. Should that event be missing (the database failed as the
     * turn ended), the turn is shown stopped once a later turn starts, instead of "generating" forever beside the
     * answer. The events are those of such a history, stored as the page stores what it was shown, and folded by the
     * same code that folds the live stream.
     */
    @Test
    void a_turn_left_without_an_ending_is_shown_stopped_when_a_later_turn_starts() {
        String s = SettleSystem.newSessionId();
        openSession(s);
        browser.executeScript("sessionStorage.setItem(arguments[0], arguments[1])", "settle.stream." + s, """
                {"last": 7, "events": [
                  {"type": "turn.started", "data": {"turnId": 5, "fromVersion": 1, "toVersion": 1}},
                  {"type": "reply.delta", "data": {"turnId": 5, "seq": 1, "text": "a first try"}},
                  {"type": "turn.abandoned", "data": {"turnId": 5, "reason": "abandoned: its holder lost the lease"}},
                  {"type": "turn.started", "data": {"turnId": 7, "fromVersion": 1, "toVersion": 1}},
                  {"type": "reply.delta", "data": {"turnId": 7, "seq": 1, "text": "half an ans"}},
                  {"type": "turn.started", "data": {"turnId": 9, "fromVersion": 1, "toVersion": 1}},
                  {"type": "reply.delta", "data": {"turnId": 9, "seq": 1, "text": "the answer"}}]}""");
        browser.navigate().refresh();

        awaitTurn("abandoned");
        List<WebElement> stopped = browser.findElements(By.cssSelector(".turn.abandoned"));
        assertEquals(
                List.of("turn-5", "turn-7"),
                stopped.stream().map(e -> e.getDomAttribute("id")).toList());
        assertEquals("a first try", text(stopped.get(0).findElement(By.className("text"))), "its partial text stays");
        assertEquals(
                "stopped without a reply (abandoned: its holder lost the lease); a later turn answers",
                stopped.get(0).findElement(By.className("note")).getText());
        assertEquals("half an ans", text(stopped.get(1).findElement(By.className("text"))));
        assertEquals(
                "stopped without a reply (its worker was lost or hit an error); a later turn answers",
                stopped.get(1).findElement(By.className("note")).getText());
        assertEquals(
                List.of("turn-9"),
                browser.findElements(By.cssSelector(".turn.running")).stream()
                        .map(e -> e.getDomAttribute("id"))
                        .toList(),
                "only the later turn is still generating");
    }

    /** Opens the page on a session not used yet; its stream is open before the first message. */
    static void openSession(String session) {
        browser.get("about:blank");
        browser.get(base + "/#session=" + session);
        WebElement key = byId("key");
        if (key.getDomProperty("value").isEmpty()) {
            key.sendKeys(SettleSystem.KEY + "\t");
        }
        await("the event stream is open")
                .atMost(LONG)
                .pollInterval(Duration.ofMillis(20))
                .pollInSameThread()
                .until(() -> "live".equals(byId("stream").getDomAttribute("data-state")));
        assertEquals(
                0,
                userMessages(session)
                        + browser.findElements(By.className("msg")).size());
    }

    /**
     * Types {@code text} into the message box, spread over {@code over} as a person would; whether the page showed
     * the debounce timer held by typing meanwhile.
     */
    static boolean type(String text, Duration over) {
        WebElement box = byId("text");
        long gap = text.length() < 2 ? 0 : over.toMillis() / (text.length() - 1);
        boolean held = false;
        for (int i = 0; i < text.length(); i++) {
            box.sendKeys(text.substring(i, i + 1));
            held |= "held".equals(byId("debounce").getDomAttribute("data-state"));
            if (gap > 0 && i < text.length() - 1) {
                SettleSystem.sleep(Duration.ofMillis(gap)); // the user's pace, not a wait for a result
            }
        }
        return held;
    }

    static void click(String id) {
        await("#" + id + " enabled")
                .atMost(LONG)
                .pollInterval(Duration.ofMillis(10))
                .pollInSameThread()
                .until(() -> byId(id).isEnabled());
        byId(id).click();
    }

    static WebElement awaitTurn(String state) {
        By selector = By.cssSelector(".turn." + state);
        await("a " + state + " turn on the page")
                .atMost(LONG)
                .pollInterval(Duration.ofMillis(20))
                .pollInSameThread()
                .until(() -> !browser.findElements(selector).isEmpty());
        return browser.findElement(selector);
    }

    static void awaitText(String id, String text) {
        await("#" + id + " shows " + text)
                .atMost(LONG)
                .pollInterval(Duration.ofMillis(20))
                .pollInSameThread()
                .until(() -> text.equals(byId(id).getText()));
    }

    static WebElement byId(String id) {
        return browser.findElement(By.id(id));
    }

    /** The element's text exactly (Selenium's getText normalises white space). */
    static String text(WebElement element) {
        return element.getDomProperty("textContent");
    }

    static int userMessages(String session) {
        JsonNode messages = settle.get("/v1/sessions/" + session + "/messages");
        if (messages == null || messages.get("messages") == null) {
            return 0;
        }
        return (int) StreamSupport.stream(messages.get("messages").spliterator(), false)
                .filter(m -> "user".equals(m.path("role").asString()))
                .count();
    }

    static Path repositoryRoot() {
        Path dir = Path.of("").toAbsolutePath();
        while (!Files.exists(dir.resolve("docs").resolve("API.md"))) {
            dir = dir.getParent();
        }
        return dir;
    }
}
