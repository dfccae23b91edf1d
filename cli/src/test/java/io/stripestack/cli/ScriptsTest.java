package io.stripestack.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stripestack.targetserver.testing.ExternalTools;
import io.stripestack.targetserver.testing.ExternalTools.Result;
import io.stripestack.targetserver.testing.Tgtd;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The shell scripts a user runs: bin/stripestack and scripts/bench-vs-tgt.sh, with stand-ins for mvn, java, fio. */
class ScriptsTest {
    private static final Path REPO = Path.of("..").toAbsolutePath().normalize();

    @TempDir
    Path dir;

    private Path executable(Path file, String script) throws Exception {
        Files.createDirectories(file.getParent());
        Files.writeString(file, script);
        Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rwx------"));
        return file;
    }

    /** A checkout with every file older than its jar, and stand-ins for mvn (records its call) and java. */
    private Path checkout() throws Exception {
        Path root = dir.resolve("checkout");
        Files.createDirectories(root.resolve("bin"));
        Files.copy(REPO.resolve("bin/stripestack"), root.resolve("bin/stripestack"));
        for (String file : List.of("pom.xml", "blockdev/pom.xml", "blockdev/src/main/java/A.java", "conf/default.yaml",
                "conf/multi-target.yaml", "cli/target/stripestack.jar")) {
            Files.createDirectories(root.resolve(file).getParent());
            Files.writeString(root.resolve(file), file);
            Files.setLastModifiedTime(root.resolve(file), FileTime.fromMillis(file.endsWith(".jar") ? 2_000_000_000_000L
                    : 1_000_000_000_000L));
        }
        executable(dir.resolve("fake/mvn"), "#!/bin/sh\necho \"$* MAVEN_OPTS=$MAVEN_OPTS\" >> \"" + root
                + "/mvn.log\"\nprintf '\\033[1mbuilt\\033[0m\\n' >&2\ntouch \"" + root
                + "/cli/target/stripestack.jar\"\n");
        executable(dir.resolve("fake/java"), "#!/bin/sh\necho \"java $*\"\n");
        return root;
    }

    private Result run(Path root) throws Exception {
        return ExternalTools.run(60, Map.of("PATH", dir.resolve("fake") + ":" + System.getenv("PATH")),
                List.of("bash", root.resolve("bin/stripestack").toString(), "status"));
    }

    /**
     * bin/stripestack builds the jar only when what goes into it changed (sources, poms, the embedded
     * conf/default.yaml), not when another configuration in conf/ changed (the server rewrites its file after a
     * reshape), and passes Maven the settings that keep escape codes out of output that is not a terminal.
     */
    @Test
    void binStripestackRebuildsOnlyForSourcesAndWithoutEscapeCodesOffATerminal() throws Exception {
        Path root = checkout();
        Path log = root.resolve("mvn.log");
        assertEquals("java -jar " + root.resolve("cli/target/stripestack.jar") + " status\n",
                run(root).requireSuccess("bin/stripestack").output());
        assertFalse(Files.exists(log), "built with nothing changed");

        Files.setLastModifiedTime(root.resolve("conf/multi-target.yaml"), FileTime.fromMillis(3_000_000_000_000L));
        run(root).requireSuccess("bin/stripestack");
        assertFalse(Files.exists(log), "built for a configuration file the server reads at run time");

        Files.setLastModifiedTime(root.resolve("blockdev/src/main/java/A.java"),
                FileTime.fromMillis(4_000_000_000_000L));
        Result built = run(root).requireSuccess("bin/stripestack");
        assertTrue(Files.readString(log).contains("-Dstyle.color=never"), Files.readString(log));
        assertTrue(Files.readString(log).contains("-Djansi.noreset=true"), Files.readString(log));
        assertTrue(built.output().contains("stripestack: building"), built.output());

        Files.delete(log);
        Files.setLastModifiedTime(root.resolve("conf/default.yaml"), FileTime.fromMillis(5_000_000_000_000L));
        run(root).requireSuccess("bin/stripestack");
        assertTrue(Files.exists(log), "the embedded default changed: not built");
    }

    /**
     * scripts/bench-vs-tgt.sh touches only the tgtd it started: a tgtd of someone else's on the control port it is
     * given is still running and still accepting logins after the script exits (its clean-up used to set whatever
     * tgtd held that port offline and ask it to shut down).
     */
    @Test
    void benchVsTgtLeavesSomeoneElsesTgtdRunning() throws Exception {
        try (Tgtd someoneElses = Tgtd.start(dir.resolve("other"), 1, 1 << 20)) {
            Path fio = executable(dir.resolve("fake/fio"), "#!/bin/sh\necho libiscsi\n");
            Result r = ExternalTools.run(120, List.of("bash", REPO.resolve("scripts/bench-vs-tgt.sh").toString(), "-f",
                    fio.toString(), "-p", Integer.toString(someoneElses.controlPort()), "-s", "not-a-size", "-d",
                    dir.resolve("bench").toString(), "-j", dir.resolve("no.jar").toString()));
            assertNotEquals(0, r.exitCode(), r.output());
            assertTrue(someoneElses.isRunning(), "the script stopped a tgtd it did not start:\n" + r.output());
            Result state = ExternalTools.run(20, List.of("tgtadm", "-C", Integer.toString(someoneElses.controlPort()),
                    "--op", "show", "--mode", "sys")).requireSuccess("tgtadm show");
            assertTrue(state.output().contains("State: ready"), "the script changed someone else's tgtd:\n"
                    + state.output() + "\n" + r.output());
        }
    }
}
