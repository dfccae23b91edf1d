package io.stripestack.targetserver.testing;

import static org.junit.jupiter.api.Assertions.fail;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;

/**
 * Runs third-party clients (libiscsi's tools, qemu-io, mdadm, openssl, cryptsetup) as processes for tests.
 * A missing tool skips the test on a developer's machine and FAILS it under {@code CI=true}, where
 * .ci/run must have installed it.
 */
public final class ExternalTools {
    private ExternalTools() {
    }

    public record Result(int exitCode, String output) {
        public Result requireSuccess(String what) {
            if (exitCode != 0) {
                fail(what + " exited " + exitCode + ":\n" + output);
            }
            return this;
        }
    }

    public static boolean inCi() {
        return "true".equalsIgnoreCase(System.getenv("CI"));
    }

    /** Skips (developer machine) or fails (CI) unless {@code tool} is on the PATH. */
    public static void requireTool(String tool) {
        boolean found = false;
        String path = System.getenv("PATH");
        for (String dir : (path == null ? "/usr/bin:/usr/sbin:/bin:/sbin" : path + ":/usr/sbin:/sbin").split(":")) {
            if (new File(dir, tool).canExecute()) {
                found = true;
                break;
            }
        }
        if (!found) {
            String message = tool + " is not installed (Debian: see .ci/run for the package)";
            if (inCi()) {
                fail(message);
            }
            Assumptions.abort(message);
        }
    }

    /** Runs a command to completion (stdout and stderr merged), at most {@code timeoutSeconds}. */
    public static Result run(long timeoutSeconds, List<String> command) throws IOException, InterruptedException {
        return run(timeoutSeconds, java.util.Map.of(), command);
    }

    /** As {@link #run(long, List)}, with {@code environment} added to the command's (libiscsi's CHAP variables). */
    public static Result run(long timeoutSeconds, java.util.Map<String, String> environment, List<String> command)
            throws IOException, InterruptedException {
        return run(timeoutSeconds, environment, null, command);
    }

    /** As {@link #run(long, List)}, with {@code directory} as the command's working directory. */
    public static Result runIn(Path directory, long timeoutSeconds, List<String> command)
            throws IOException, InterruptedException {
        return run(timeoutSeconds, java.util.Map.of(), directory.toFile(), command);
    }

    /** {@code directory} null: the test's own working directory. */
    private static Result run(long timeoutSeconds, java.util.Map<String, String> environment, File directory,
            List<String> command) throws IOException, InterruptedException {
        requireTool(command.get(0));
        ProcessBuilder builder = new ProcessBuilder(command).directory(directory).redirectErrorStream(true);
        builder.environment().putAll(environment);
        Process p = builder.start();
        p.getOutputStream().close();
        byte[][] output = new byte[1][];
        Thread reader = new Thread(() -> {
            try {
                output[0] = p.getInputStream().readAllBytes();
            } catch (IOException e) {
                output[0] = ("<output unreadable: " + e + ">").getBytes(StandardCharsets.UTF_8);
            }
        });
        reader.start();
        if (!p.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            reader.join(5000);
            fail(String.join(" ", command) + " did not finish within " + timeoutSeconds + " s");
        }
        reader.join(5000);
        return new Result(p.exitValue(), new String(output[0], StandardCharsets.UTF_8));
    }

    public static Result run(String... command) throws IOException, InterruptedException {
        return run(120, List.of(command));
    }
}
