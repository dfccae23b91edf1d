package io.stripestack.cli;

import static io.stripestack.cli.CliRunner.cli;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stripestack.cli.CliRunner.Outcome;
import io.stripestack.targetserver.config.ConfigLoader;
import io.stripestack.targetserver.server.StripestackServer;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class StripestackCliTest {
    @TempDir
    Path dir;

    @Test
    void createMakesMembersOnceAndLeavesThemAloneAfter() throws Exception {
        Path config = dir.resolve("c.yaml");
        Files.writeString(config, """
                data_dir: %s
                arrays:
                  md7: {members: [a.img, b.img, c.img], create_member_size: 8MiB, chunk: 32K}
                targets: [{iqn: "iqn.2026-11.io.example:t", luns: [{lun: 0, array: md7}]}]
                """.formatted(dir));
        Outcome first = cli("create", "--config", config.toString());
        assertEquals(0, first.code(), first.err());
        assertTrue(first.out().contains("md7: created md7 : active raid5"), first.out());
        assertEquals(8L << 20, Files.size(dir.resolve("b.img")));
        Outcome second = cli("create", "--config", config.toString());
        assertEquals(0, second.code(), second.err());
        assertTrue(second.out().contains("md7: exists"), second.out());

        Files.delete(dir.resolve("c.img"));
        Files.delete(dir.resolve("b.img"));
        Outcome partial = cli("create", "--config", config.toString());
        assertEquals(1, partial.code());
        assertTrue(partial.err().contains("1 of 3 member files exist; refusing"), partial.err());
    }

    @Test
    void configErrorsReachTheUserWithFileAndLine() throws Exception {
        Path config = dir.resolve("bad.yaml");
        Files.writeString(config, "targets:\n  - iqn: iqn.2026-11.io.example:t\n    luns: [{lun: 0, array: nope}]\n");
        Outcome o = cli("serve", "--config", config.toString());
        assertEquals(1, o.code());
        assertTrue(o.err().contains(config + ":3: targets[0].luns[0].array: no array named 'nope'"), o.err());
    }

    @Test
    void aMissingConfigurationIsNotFoundNotUnreadable() {
        Path missing = dir.resolve("missing.yaml");
        Outcome o = cli("serve", "--config", missing.toString());
        assertEquals(1, o.code());
        assertTrue(o.err().contains(missing + ": no such configuration file; conf/ has examples"), o.err());
        assertTrue(!o.err().contains("cannot read"), o.err());
    }

    @Test
    void serveHelpOffersTheForcedStart() {
        Outcome o = cli("serve", "--help");
        assertEquals(0, o.code(), o.err());
        assertTrue(o.out().contains("--force") && o.out().contains("mdadm"), o.out());
    }

    @Test
    void ctlWithoutServerSaysWhatToDo() {
        Outcome o = cli("ctl", "--socket", dir.resolve("none.sock").toString(), "list");
        assertEquals(1, o.code());
        assertTrue(o.err().contains("no admin socket at"), o.err());
    }

    /**
     * {@code ctl wait} returns once the array's check is over (like mdadm --wait), so a command after it finds no
     * sync action running; the check is slowed to 1 MB/s so that it still runs when the wait starts.
     */
    @Test
    void ctlWaitReturnsOnceTheSyncActionEnded() throws Exception {
        Path config = dir.resolve("wait.yaml");
        Files.writeString(config, """
                data_dir: %s
                server: {portals: ["127.0.0.1:0"], admin_socket: admin.sock}
                arrays:
                  md3: {members: [a.img, b.img, c.img], create_member_size: 8MiB, chunk: 64K}
                targets: [{iqn: "iqn.2026-11.io.example:wait", luns: [{lun: 0, array: md3}]}]
                """.formatted(dir));
        try (StripestackServer server = StripestackServer.start(ConfigLoader.load(config))) {
            String socket = server.adminSocket().toString();
            assertEquals(0, cli("ctl", "--socket", socket, "set", "md3/sync_speed_min", "1000").code());
            assertEquals(0, cli("ctl", "--socket", socket, "set", "md3/sync_speed_max", "1000").code());
            assertEquals(0, cli("ctl", "--socket", socket, "set", "md3/sync_action", "check").code());
            Outcome waited = cli("ctl", "--socket", socket, "wait", "md3");
            assertEquals(0, waited.code(), waited.err());
            assertEquals("idle\n", cli("ctl", "--socket", socket, "get", "md3/sync_action").out());
            Outcome twoArrays = cli("ctl", "--socket", socket, "wait", "md3", "md4");
            assertEquals(1, twoArrays.code());
            assertTrue(twoArrays.err().contains("ctl wait takes one array name"), twoArrays.err());
        }
    }

    /**
     * {@code help} lists every command with its whole description (picocli's list stopped at the first line, cutting
     * "serve" at "(conf/default.yaml):"), in words a new user knows, within 100 columns.
     */
    @Test
    void helpShowsWholeDescriptionsInPlainWords() {
        Outcome o = cli("help");
        assertEquals(0, o.code(), o.err());
        String flat = o.out().replaceAll("\\s+", " ");
        assertTrue(flat.contains("exported as LUN 0 on 127.0.0.1:3260. SIGTERM or Ctrl-C drains in-flight commands,"
                + " flushes every member and marks the arrays clean."), o.out());
        assertTrue(flat.contains("Existing arrays are left alone; 'serve' assembles them."), o.out());
        assertTrue(flat.contains("Exit status: 0 no corruption and no I/O error, 1 corruption found,"
                + " 2 I/O errors only."), o.out());
        for (String history : new String[] {"thread", "seed", "%n"}) {
            assertTrue(!o.out().contains(history), "'" + history + "' in:\n" + o.out());
        }
        for (String line : o.out().split("\n")) {
            assertTrue(line.length() <= 100, line);
        }
        Outcome bench = cli("bench", "--help");
        assertTrue(!bench.out().contains("thread"), bench.out());
    }
}
