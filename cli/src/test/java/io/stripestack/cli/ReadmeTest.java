package io.stripestack.cli;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.stripestack.targetserver.config.ConfigLoader;
import io.stripestack.targetserver.server.DefaultConfig;
import io.stripestack.targetserver.server.StripestackServer;
import io.stripestack.targetserver.testing.ExternalTools;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Every command of README.md's "Using it" section, read from the file, run in order as written (through bash, in a
 * scratch directory standing for a fresh clone) against a fresh server on the embedded default; the test fails on
 * the first command that fails. Only what must change does: the portal's port 3260 becomes the server's free port
 * (another address's 3260 another free port), and bin/stripestack runs this build's classes instead of building the
 * jar (the jar is made after the tests).
 */
class ReadmeTest {
    private static final Path README = Path.of("..", "README.md");
    /** Commands CI cannot run, by how they start, with the reason. */
    private static final Map<String, String> EXCLUDED = Map.of(
            "iscsiadm ", "open-iscsi's iscsiadm drives the kernel's initiator (iscsi_tcp), which CI containers lack");
    private static final long COMMAND_TIMEOUT_SECONDS = 1800;   // a guard only: the grow and chunk change move all data

    @TempDir
    Path clone;

    /** The section's commands: its indented lines, each without its trailing comment. */
    static List<String> usingItCommands() throws IOException {
        String readme = Files.readString(README);
        int start = readme.indexOf("\n## Using it\n");
        assertTrue(start >= 0, "README.md has no '## Using it' section");
        int end = readme.indexOf("\n## ", start + 1);
        String section = readme.substring(start, end < 0 ? readme.length() : end);
        List<String> commands = new ArrayList<>();
        for (String line : section.split("\n")) {
            if (line.startsWith("    ") && !line.isBlank()) {
                commands.add(line.strip().replaceFirst("\\s{2,}#.*$", ""));
            }
        }
        return commands;
    }

    private static int freePort(String host) throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getByName(host))) {
            return s.getLocalPort();
        }
    }

    /** bin/stripestack of the scratch clone: this build's CLI on the test's class path. */
    private void binStripestack() throws IOException {
        String classPath = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
        Path java = Path.of(System.getProperty("java.home"), "bin", "java");
        Path bin = clone.resolve("bin/stripestack");
        Files.createDirectories(bin.getParent());
        Files.writeString(bin, "#!/bin/sh\nexec '" + java + "' -cp '" + classPath + "' "
                + StripestackCli.class.getName() + " \"$@\"\n");
        Files.setPosixFilePermissions(bin, PosixFilePermissions.fromString("rwx------"));
    }

    @Test
    void everyCommandOfUsingItRunsInOrder() throws Exception {
        List<String> commands = usingItCommands();
        assertTrue(commands.size() >= 10, "too few commands found in README.md's 'Using it': " + commands);
        for (String tool : List.of("iscsi-ls", "iscsi-inq", "qemu-io", "mdadm")) {
            ExternalTools.requireTool(tool);
        }
        binStripestack();
        String text = DefaultConfig.text().replace("127.0.0.1:3260", "127.0.0.1:0");
        // as DefaultConfig.load() parses it, with the clone as the working directory
        try (StripestackServer server = StripestackServer.start(
                ConfigLoader.parse("conf/default.yaml (embedded)", text, clone))) {
            int port = server.boundAddresses().get(0).getPort();
            for (String command : commands) {
                String excluded = EXCLUDED.entrySet().stream().filter(e -> command.startsWith(e.getKey()))
                        .map(Map.Entry::getValue).findFirst().orElse(null);
                if (excluded != null) {
                    System.out.println("README command not run (" + excluded + "): " + command);
                    continue;
                }
                run(command, withPorts(command, port));
            }
        }
    }

    /** 127.0.0.1:3260 is the server; any other address's port 3260 a free port there. */
    private static String withPorts(String command, int port) throws IOException {
        Matcher m = Pattern.compile("(\\d+\\.\\d+\\.\\d+\\.\\d+):3260\\b").matcher(command);
        StringBuilder out = new StringBuilder();
        while (m.find()) {
            String host = m.group(1);
            m.appendReplacement(out, host + ":" + (host.equals("127.0.0.1") ? port : freePort(host)));
        }
        return m.appendTail(out).toString();
    }

    private void run(String asWritten, String command) throws Exception {
        ExternalTools.Result result = ExternalTools.runIn(clone, COMMAND_TIMEOUT_SECONDS, List.of("bash", "-c", command));
        System.out.println("README command: " + asWritten + " (exit " + result.exitCode() + ")\n" + result.output());
        if (result.exitCode() != 0) {
            fail("README.md, 'Using it': the command\n  " + asWritten + "\nexited " + result.exitCode()
                    + (command.equals(asWritten) ? "" : " (run as: " + command + ")") + ":\n" + result.output());
        }
    }
}
