package dev.idem.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.spi.Secret;
import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
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
 * {@code IDEM_TEST_CHROMIUM} and {@code IDEM_TEST_CHROMEDRIVER}), on a real runtime ({@link ConsoleTest.Served}): the
 * overview's chart takes new points while messages flow, the page loads nothing from elsewhere, a key lookup shows a
 * claim, a release without the session's CSRF token is refused, and a logged-in operator releases it after confirming. Every wait is on a condition. Screenshots of each view
 * go to {@code target/console-screenshots/}. Without the browser the test is skipped, or fails with {@code CI=true}.
 */
class ConsoleBrowserIT {

    private static final Duration WAIT = Duration.ofSeconds(20);
    private static final Path SCREENSHOTS = Path.of("target", "console-screenshots");

    private ConsoleTest.Served served;
    private WebDriver browser;
    private WebDriverWait wait;

    @BeforeEach
    void start() {
        LocalTool chromium = LocalTool.locate("chromium", "IDEM_TEST_CHROMIUM",
                "Install it with 'apt-get install -y chromium chromium-driver' (.ci/run does).");
        LocalTool driver = LocalTool.locate("chromedriver", "IDEM_TEST_CHROMEDRIVER",
                "Install it with 'apt-get install -y chromium chromium-driver' (.ci/run does).");
        served = new ConsoleTest.Served(new Secret(ConsoleTest.TOKEN), true);
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
        if (served != null) {
            served.close();
        }
    }

    @Test
    void theOverviewChartMovesAndAKeyLookupShowsAClaimThatALoggedInOperatorReleases() throws Exception {
        for (int i = 0; i < 20; i++) {
            served.publish("first-" + i);
        }
        browser.get(served.base() + "/console/");
        WebElement chart = wait.until(ExpectedConditions.presenceOfElementLocated(By.id("chart-orders")));
        wait.until(d -> Integer.parseInt(chart.getDomAttribute("data-points")) >= 1
                && Long.parseLong(chart.getDomAttribute("data-processed")) == 20);
        assertThat(chart.findElements(By.cssSelector("canvas"))).hasSize(2);
        int points = Integer.parseInt(chart.getDomAttribute("data-points"));

        for (int i = 0; i < 30; i++) {
            served.publish("second-" + i);
        }
        wait.until(d -> Integer.parseInt(chart.getDomAttribute("data-points")) > points
                && Long.parseLong(chart.getDomAttribute("data-processed")) == 50);
        wait.until(ExpectedConditions.textToBePresentInElementLocated(By.id("status"), "updated"));
        assertThat(browser.findElement(By.id("pipeline-orders")).getText()).contains("orders", "caffeine", "plain",
                "running");
        screenshot("overview");

        @SuppressWarnings("unchecked")
        List<String> loaded = (List<String>) ((JavascriptExecutor) browser).executeScript(
                "return performance.getEntriesByType('resource').map(e => e.name);");
        assertThat(loaded).as("nothing from another origin").isNotEmpty()
                .allSatisfy(url -> assertThat(url).startsWith(served.base() + "/"));

        served.publish("stuck-1");
        assertThat(served.handler.stuck.await(10, TimeUnit.SECONDS)).isTrue();
        lookUp("stuck-1");
        wait.until(ExpectedConditions.textToBe(By.cssSelector("dd[data-field='state']"), "claimed"));
        assertThat(browser.findElement(By.id("key-details")).getText()).contains("owner's lease until", "attempts");
        assertThat(browser.findElements(By.id("key-release"))).as("not logged in: no release").isEmpty();
        screenshot("key-claimed");

        browser.get(served.base() + "/console/login");
        browser.findElement(By.id("token")).sendKeys(ConsoleTest.TOKEN);
        browser.findElement(By.id("login")).click();
        wait.until(ExpectedConditions.textToBePresentInElementLocated(By.id("session"), "logged in"));
        Object forged = ((JavascriptExecutor) browser).executeAsyncScript("const done = arguments[0];"
                + " fetch('/console/api/keys/release', {method: 'POST', headers: {'Content-Type': 'application/json'},"
                + " body: JSON.stringify({pipeline: 'orders', id: 'stuck-1'})}).then(r => done(r.status));");
        assertThat(forged).as("the session cookie without the CSRF token").isEqualTo(403L);
        lookUp("stuck-1");
        wait.until(ExpectedConditions.elementToBeClickable(By.id("key-release"))).click();
        wait.until(ExpectedConditions.visibilityOfElementLocated(By.id("confirm")));
        assertThat(browser.findElement(By.id("confirm-text")).getText()).contains("stuck-1", "processed twice");
        screenshot("release-confirm");
        browser.findElement(By.id("confirm-release")).click();
        wait.until(ExpectedConditions.textToBePresentInElementLocated(By.id("key-result"), "Released."));
        wait.until(ExpectedConditions.textToBe(By.cssSelector("dd[data-field='state']"), "absent"));
        screenshot("key-released");
    }

    private void lookUp(String id) {
        wait.until(ExpectedConditions.elementToBeClickable(By.id("key-id")));
        WebElement input = browser.findElement(By.id("key-id"));
        input.clear();
        input.sendKeys(id);
        browser.findElement(By.id("key-lookup")).click();
    }

    private void screenshot(String name) throws IOException {
        Files.createDirectories(SCREENSHOTS);
        File shot = ((TakesScreenshot) browser).getScreenshotAs(OutputType.FILE);
        Files.copy(shot.toPath(), SCREENSHOTS.resolve(name + ".png"), StandardCopyOption.REPLACE_EXISTING);
    }
}
