package io.stripestack.targetserver.testing;

import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/**
 * Prometheus' own linter on a scrape: {@code promtool check metrics} (Debian package prometheus) reads the text
 * exposition and names every family without HELP or TYPE, a counter without {@code _total}, a unit that is not a
 * base unit, a malformed line. Missing, it skips the test on a developer's machine and fails it under CI=true.
 */
public final class Promtool {
    private Promtool() {
    }

    /** Fails the test with promtool's findings unless it accepts {@code exposition} without a remark. */
    public static void check(String exposition) throws IOException, InterruptedException {
        ExternalTools.requireTool("promtool");
        Path input = Files.createTempFile("metrics", ".txt");
        try {
            Files.writeString(input, exposition);
            Process p = new ProcessBuilder("promtool", "check", "metrics").redirectErrorStream(true)
                    .redirectInput(input.toFile()).start();
            byte[] output = p.getInputStream().readAllBytes();
            if (!p.waitFor(60, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                fail("promtool check metrics did not finish within 60 s");
            }
            String said = new String(output, StandardCharsets.UTF_8);
            if (p.exitValue() != 0 || !said.isBlank()) {
                fail("promtool check metrics exited " + p.exitValue() + ":\n" + said + "\non:\n" + exposition);
            }
        } finally {
            Files.deleteIfExists(input);
        }
    }
}
