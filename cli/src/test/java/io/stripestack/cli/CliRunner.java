package io.stripestack.cli;

import io.stripestack.cli.StripestackCli;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

/** Runs the {@code stripestack} command line in-process and captures what it prints. */
public final class CliRunner {
    private CliRunner() {
    }

    public record Outcome(int code, String out, String err) {
    }

    /** System.out/err are swapped for the call: tests that use this must not run in parallel. */
    public static synchronized Outcome cli(String... args) {
        PrintStream oldOut = System.out;
        PrintStream oldErr = System.err;
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        try {
            System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
            System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
            int code = StripestackCli.run(args);
            return new Outcome(code, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
        } finally {
            System.setOut(oldOut);
            System.setErr(oldErr);
        }
    }
}
