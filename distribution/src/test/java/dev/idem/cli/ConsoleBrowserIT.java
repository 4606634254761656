package dev.idem.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.ConnectionFactory;
import dev.idem.cli.console.HoldingHandler;
import dev.idem.cli.dlq.ReplayHandler;
import dev.idem.spi.Secret;
import dev.idem.testkit.ExternalService;
import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.Callable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.awaitility.core.ConditionTimeoutException;
import org.awaitility.core.TerminalFailureException;
import org.openqa.selenium.By;
import org.openqa.selenium.JavascriptExecutor;
import org.openqa.selenium.OutputType;
import org.openqa.selenium.TakesScreenshot;
import org.openqa.selenium.WebDriver;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;
import org.openqa.selenium.support.ui.ExpectedConditions;
import org.openqa.selenium.support.ui.WebDriverWait;

/**
 * The console in a real headless Chromium (Debian's {@code chromium} and {@code chromium-driver}, or
 * {@code IDEM_TEST_CHROMIUM} and {@code IDEM_TEST_CHROMEDRIVER}).
 *
 * <p>Each case runs a real {@code bin/idem run} process on the local RabbitMQ and the Caffeine store, messages sent
 * by {@code bin/idem publish}.
 *
 * <p>With {@link HoldingHandler} (holding {@code stuck*} keys while a file exists): the overview's chart takes new
 * points while messages flow, the page loads nothing from elsewhere, a key lookup shows a claim, a release without the
 * token and one with the session cookie but without its CSRF token are refused, and a logged-in operator releases it
 * after confirming.
 *
 * <p>With {@link ReplayHandler} broken while a file exists: a poison message shows in the dead-letter view under its cause and exception class, a replay
 * without the CSRF token is refused, and once the handler is fixed a replay from the page processes it once.
 *
 * <p>Every wait is on a condition. Screenshots of each view go to {@code target/console-screenshots/}. Without the
 * browser or RabbitMQ the test is skipped, or fails with {@code CI=true}.
 */
class ConsoleBrowserIT {

    private static final Duration WAIT = Duration.ofSeconds(20);
    private static final Path SCREENSHOTS = Path.of("target", "console-screenshots");

    @TempDir
    Path home;

    private WebDriver browser;
    private WebDriverWait wait;

    @BeforeEach
    void start() {
        LocalTool chromium = LocalTool.locate("chromium", "IDEM_TEST_CHROMIUM",
                "Install it with 'apt-get install -y chromium chromium-driver' (.ci/run does).");
        LocalTool driver = LocalTool.locate("chromedriver", "IDEM_TEST_CHROMEDRIVER",
                "Install it with 'apt-get install -y chromium chromium-driver' (.ci/run does).");
        ChromeOptions options = new ChromeOptions();
        options.setBinary(chromium.path);
        options.addArguments("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--window-size=1400,1000", "--no-first-run", "--disable-extensions");
        ChromeDriverService service = new ChromeDriverService.Builder().usingDriverExecutable(new File(driver.path))
                .usingAnyFreePort().build();
        browser = new ChromeDriver(service, options);
        wait = new WebDriverWait(browser, WAIT);
    }

    @AfterEach
    void stop() {
        if (browser != null) {
            browser.quit();
        }
    }

    @Test
    void theOverviewChartMovesAndAKeyLookupShowsAClaimThatALoggedInOperatorReleases() throws Exception {
        String uri = rabbitMq();
        String run = UUID.randomUUID().toString().substring(0, 8);
        String pipeline = "console-" + run;
        String queue = "idem-console-" + run;
        Installation idem = Installation.in(home);
        int port = Installation.freePort();
        Path hold = idem.home.resolve("data/hold");
        Path holding = idem.home.resolve("data/holding.log");
        Files.createFile(hold);
        idem.env.put(HoldingHandler.HOLD_ENV, hold.toString());
        idem.env.put(HoldingHandler.HOLDING_ENV, holding.toString());
        installWithConsole(idem, uri, HoldingHandler.class, "holding-handler.jar", pipeline, queue,
                ", handler-timeout: 1m", port);
        String base = "http://127.0.0.1:" + port;
        Installation.Running running = idem.start("run");
        try {
            awaitRunning(running, () -> running.outcomes(port).containsKey("processed"), "the pipeline to start");
            publish(idem, "--count", "20", "--id", "first-");
            browser.get(base + "/console/");
            WebElement chart = wait.until(ExpectedConditions.presenceOfElementLocated(By.id("chart-" + pipeline)));
            wait.until(d -> Integer.parseInt(chart.getDomAttribute("data-points")) >= 1
                    && Long.parseLong(chart.getDomAttribute("data-processed")) == 20);
            assertThat(chart.findElements(By.cssSelector("canvas"))).hasSize(2);
            int points = Integer.parseInt(chart.getDomAttribute("data-points"));

            publish(idem, "--count", "30", "--id", "second-");
            wait.until(d -> Integer.parseInt(chart.getDomAttribute("data-points")) > points
                    && Long.parseLong(chart.getDomAttribute("data-processed")) == 50);
            wait.until(ExpectedConditions.textToBePresentInElementLocated(By.id("status"), "updated"));
            assertThat(browser.findElement(By.id("pipeline-" + pipeline)).getText()).contains(pipeline, queue,
                    "caffeine", "plain", "running");
            screenshot("overview");

            @SuppressWarnings("unchecked")
            List<String> loaded = (List<String>) ((JavascriptExecutor) browser).executeScript(
                    "return performance.getEntriesByType('resource').map(e => e.name);");
            assertThat(loaded).as("nothing from another origin").isNotEmpty()
                    .allSatisfy(url -> assertThat(url).startsWith(base + "/"));

            publish(idem, "--count", "1", "--id", "stuck-1");
            awaitRunning(running, () -> Files.exists(holding) && Files.readAllLines(holding).contains("stuck-1"),
                    "the handler to hold stuck-1");
            lookUp("stuck-1");
            wait.until(ExpectedConditions.textToBe(By.cssSelector("dd[data-field='state']"), "claimed"));
            assertThat(browser.findElement(By.id("key-details")).getText()).contains("owner's lease until", "attempts");
            assertThat(browser.findElement(By.cssSelector("dd[data-field='starts']")).getText())
                    .as("a first claim, not taken over: no start recorded").isEqualTo("0");
            assertThat(browser.findElements(By.id("key-release"))).as("not logged in: no release").isEmpty();
            assertThat(release(pipeline, "stuck-1")).as("a release without the token").isEqualTo(401L);
            scrollTo("key-details");
            screenshot("key-claimed");

            logIn(base);
            assertThat(release(pipeline, "stuck-1")).as("the session cookie without the CSRF token").isEqualTo(403L);
            lookUp("stuck-1");
            wait.until(ExpectedConditions.textToBe(By.cssSelector("dd[data-field='state']"), "claimed"));
            wait.until(ExpectedConditions.elementToBeClickable(By.id("key-release"))).click();
            wait.until(ExpectedConditions.visibilityOfElementLocated(By.id("confirm")));
            assertThat(browser.findElement(By.id("confirm-text")).getText()).contains("stuck-1", "processed twice");
            scrollTo("confirm");
            screenshot("release-confirm");
            browser.findElement(By.id("confirm-release")).click();
            wait.until(ExpectedConditions.textToBePresentInElementLocated(By.id("key-result"), "Released."));
            wait.until(ExpectedConditions.textToBe(By.cssSelector("dd[data-field='state']"), "absent"));
            scrollTo("key-details");
            screenshot("key-released");
            awaitRunning(running, () -> running.log().contains("released key stuck-1 of pipeline " + pipeline),
                    "the release in the log");
        } finally {
            Files.deleteIfExists(hold);
            if (running.process.isAlive()) {
                running.kill();
            }
            deleteQueues(uri, queue, queue + ".DLQ");
        }
    }

    @Test
    void aPoisonMessageShowsUnderItsCauseAndAReplayFromThePageProcessesItOnce() throws Exception {
        String uri = rabbitMq();
        String run = UUID.randomUUID().toString().substring(0, 8);
        String pipeline = "console-" + run;
        String queue = "idem-console-" + run;
        Installation idem = Installation.in(home);
        int port = Installation.freePort();
        Path broken = idem.home.resolve("data/broken");
        Path processed = idem.home.resolve("data/processed.log");
        Files.createFile(broken);
        idem.env.put(ReplayHandler.BROKEN_ENV, broken.toString());
        idem.env.put(ReplayHandler.PROCESSED_ENV, processed.toString());
        installWithConsole(idem, uri, ReplayHandler.class, "replay-handler.jar", pipeline, queue, "", port);
        String base = "http://127.0.0.1:" + port;
        Installation.Running running = idem.start("run");
        try {
            awaitRunning(running, () -> running.outcomes(port).containsKey("processed"), "the pipeline to start");
            Installation.Result published = idem.run(WAIT, "publish", "--count", "1", "--id", "poison-");
            assertThat(published.exitCode()).as(published.toString()).isZero();
            awaitRunning(running, () -> running.outcomes(port).getOrDefault("dead-lettered", 0L) == 1,
                    "the poison message to be dead-lettered");

            logIn(base);
            showDeadLetters(pipeline);
            By group = By.cssSelector(".dl-group[data-cause='non-retryable']"
                    + "[data-exception='dev.idem.api.NonRetryableException']");
            WebElement poison = wait.until(ExpectedConditions.visibilityOfElementLocated(group));
            assertThat(poison.getText()).contains("poison-1", "broken until fixed", "1 message");
            assertThat(browser.findElement(By.id("dl-summary")).getText()).contains("Read 1 dead letter from",
                    queue + ".DLQ");
            scrollTo("dead-letters");
            screenshot("dead-letters");

            Object forged = ((JavascriptExecutor) browser).executeAsyncScript("const done = arguments[0];"
                    + " fetch('/console/api/dead-letters/replay', {method: 'POST', headers: {'Content-Type':"
                    + " 'application/json'}, body: JSON.stringify({pipeline: '" + pipeline + "', cause:"
                    + " 'non-retryable', exception: 'dev.idem.api.NonRetryableException'})}).then(r => done(r.status));");
            assertThat(forged).as("a replay with the session cookie but without the CSRF token").isEqualTo(403L);
            showDeadLetters(pipeline);
            wait.until(ExpectedConditions.visibilityOfElementLocated(group));

            Files.delete(broken);
            browser.findElement(group).findElement(By.cssSelector(".dl-replay-one")).click();
            wait.until(ExpectedConditions.alertIsPresent()).accept();
            wait.until(ExpectedConditions.textToBePresentInElementLocated(By.id("dl-outcome"), "Done: 1 moved"));
            wait.until(ExpectedConditions.textToBePresentInElementLocated(By.id("dl-summary"), "No dead letters"));
            assertThat(browser.findElement(By.id("dl-result")).getText()).contains("moved", "poison-1");
            scrollTo("dead-letters");
            screenshot("dead-letters-replayed");

            awaitRunning(running, () -> running.outcomes(port).getOrDefault("processed", 0L) == 1,
                    "the replayed message to be processed");
            assertThat(Files.readAllLines(processed)).as("processed once").hasSize(1)
                    .allSatisfy(line -> assertThat(line).startsWith("poison-1\t"));
            assertThat(running.outcomes(port)).containsEntry("dead-lettered", 1L);
            assertThat(running.terminate(Duration.ofSeconds(30))).as("SIGTERM ends a graceful stop\n%s",
                    running.log()).isEqualTo(143);
        } finally {
            if (running.process.isAlive()) {
                running.kill();
            }
            deleteQueues(uri, queue, queue + ".DLQ");
        }
    }

    /**
     * Installs {@code handler} in its own JAR and configures one pipeline for it on RabbitMQ, with {@code settings}
     * (inline YAML, starting with a comma) after its handler, and the console on {@code port} behind the test token.
     */
    private static void installWithConsole(Installation idem, String uri, Class<?> handler, String jar,
            String pipeline, String queue, String settings, int port) {
        idem.env.put("IDEM_CONSOLE_TOKEN", ConsoleTest.TOKEN);
        HandlerJar.install(idem, handler, jar);
        idem.writeConfig(EndToEndIT.rabbitMqBroker(uri) + """
                store: { type: caffeine }
                pipelines:
                  %s: { source: "%s", handler: %s%s }
                runtime:
                  http: { port: %d }
                  console: { enabled: true, token: "${IDEM_CONSOLE_TOKEN}" }
                """.formatted(pipeline, queue, handler.getName(), settings, port));
    }

    /** Logs the browser in with the test token, as an operator does on the login page. */
    private void logIn(String base) {
        browser.get(base + "/console/login");
        browser.findElement(By.id("token")).sendKeys(ConsoleTest.TOKEN);
        browser.findElement(By.id("login")).click();
        wait.until(ExpectedConditions.textToBePresentInElementLocated(By.id("session"), "logged in"));
    }

    private static String rabbitMq() {
        return ExternalService.locate("RabbitMQ", "IDEM_TEST_RABBITMQ_URL", "amqp://guest:guest@127.0.0.1:5672/%2F",
                "Start it with: rabbitmq-server -detached", null);
    }

    private static void publish(Installation idem, String... args) {
        String[] command = new String[args.length + 1];
        command[0] = "publish";
        System.arraycopy(args, 0, command, 1, args.length);
        Installation.Result published = idem.run(WAIT, command);
        assertThat(published.exitCode()).as(published.toString()).isZero();
    }

    /** The status of a release the page's script sends with whatever the browser holds, but no CSRF token. */
    private long release(String pipeline, String id) {
        return (Long) ((JavascriptExecutor) browser).executeAsyncScript("const done = arguments[0];"
                + " fetch('/console/api/keys/release', {method: 'POST', headers: {'Content-Type': 'application/json'},"
                + " body: JSON.stringify({pipeline: '" + pipeline + "', id: '" + id + "'})}).then(r => done(r.status));");
    }

    private void showDeadLetters(String pipeline) {
        wait.until(ExpectedConditions.presenceOfElementLocated(
                By.cssSelector("#dl-pipeline option[value='" + pipeline + "']")));
        browser.findElement(By.id("dl-load")).click();
    }

    private static void awaitRunning(Installation.Running running, Callable<Boolean> condition, String what) {
        try {
            await().atMost(WAIT).pollInterval(Duration.ofMillis(200))
                    .failFast("bin/idem run exited", () -> !running.process.isAlive()).until(condition);
        } catch (ConditionTimeoutException | TerminalFailureException e) {
            throw new AssertionError("Waited for " + what + "\n--- log\n" + running.log(), e);
        }
    }

    private static void deleteQueues(String uri, String... queues) throws Exception {
        ConnectionFactory factory = new ConnectionFactory();
        factory.setUri(uri);
        try (com.rabbitmq.client.Connection connection = factory.newConnection("console-browser-it");
                Channel channel = connection.createChannel()) {
            for (String q : queues) {
                channel.queueDelete(q);
            }
        }
    }

    private void lookUp(String id) {
        wait.until(ExpectedConditions.elementToBeClickable(By.id("key-id")));
        WebElement input = browser.findElement(By.id("key-id"));
        input.clear();
        input.sendKeys(id);
        browser.findElement(By.id("key-lookup")).click();
    }

    private void scrollTo(String id) {
        ((JavascriptExecutor) browser).executeScript("arguments[0].scrollIntoView()", browser.findElement(By.id(id)));
    }

    private void screenshot(String name) throws IOException {
        Files.createDirectories(SCREENSHOTS);
        File shot = ((TakesScreenshot) browser).getScreenshotAs(OutputType.FILE);
        Files.copy(shot.toPath(), SCREENSHOTS.resolve(name + ".png"), StandardCopyOption.REPLACE_EXISTING);
    }
}
