package io.stripestack.cli;

import static io.stripestack.cli.CliRunner.cli;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stripestack.cli.CliRunner.Outcome;
import io.stripestack.targetserver.config.ConfigLoader;
import io.stripestack.targetserver.server.StripestackServer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The administration verbs as an operator types them: ls, portal, array, target, lun, acl, chap, saveconfig. */
class AdminVerbsCliTest {
    private static final String IQN = "iqn.2026-11.io.stripestack:cli";

    @TempDir
    Path dir;

    @Test
    void theVerbsChangeTheRunningServerAndSaveIt() throws Exception {
        Path config = dir.resolve("cli.yaml");
        Files.writeString(config, """
                data_dir: %s
                server: {portals: ["127.0.0.1:0"], admin_socket: admin.sock, io_threads: 2}
                targets:
                  - {iqn: "iqn.2026-11.io.stripestack:first", luns: [{lun: 0, ram_size: 1MiB}]}
                """.formatted(dir.resolve("data")));
        Path secret = dir.resolve("chap.secret");
        Files.writeString(secret, "a-secret-of-the-cli\n");
        Files.setPosixFilePermissions(secret, PosixFilePermissions.fromString("rw-------"));
        // Paths relative to the operator's directory: the CLI sends them absolute.
        Path here = Path.of("").toAbsolutePath();
        String image = here.relativize(dir.resolve("data/cli0.img")).toString();   // under data_dir
        try (StripestackServer server = StripestackServer.start(ConfigLoader.load(config))) {
            String socket = server.adminSocket().toString();
            ok(cli("target", "--socket", socket, "create", IQN, "--alias", "from-cli"), "created target " + IQN);
            ok(cli("lun", "--socket", socket, "create", IQN, "0", "--file", image, "--size", "4M"), "created LUN 0");
            assertTrue(Files.exists(dir.resolve("data/cli0.img")), "the file was made where the operator meant");
            ok(cli("acl", "--socket", socket, "add", IQN, "iqn.2026-11.io.example:host"), "allows");
            ok(cli("chap", "--socket", socket, "set", IQN, "cliuser", here.relativize(secret).toString()), "CHAP user cliuser");
            ok(cli("lun", "--socket", socket, "set", IQN, "0", "read_only", "1"), "is read-only");
            Outcome ls = cli("ls", "--socket", socket);
            ok(ls, "o- " + IQN + " [alias from-cli]");
            assertTrue(ls.out().contains("lun0 [file " + dir.resolve("data/cli0.img") + ", read-only]"), ls.out());
            assertTrue(!ls.out().contains("a-secret-of-the-cli"), ls.out());

            Outcome spaced = cli("target", "--socket", socket, "create", "iqn.2026-11.io.example:a b");
            assertEquals(1, spaced.code());
            assertTrue(spaced.err().contains("white space"), spaced.err());
            Outcome refused = cli("target", "--socket", socket, "create", IQN);
            assertEquals(1, refused.code());
            assertTrue(refused.err().contains("exists already"), refused.err());

            ok(cli("lun", "--socket", socket, "delete", IQN, "0", "--force"), "deleted LUN 0");
            String[] members = new String[3];
            for (int i = 0; i < 3; i++) {
                members[i] = here.relativize(dir.resolve("data/md1/m" + i + ".img")).toString();
            }
            ok(cli("array", "--socket", socket, "create", "md1", members[0], members[1], members[2], "--member-size", "4M",
                    "--chunk", "64K", "--spare", here.relativize(dir.resolve("data/md1/s.img")).toString()), "created array md1");
            assertTrue(Files.exists(dir.resolve("data/md1/m2.img")) && Files.exists(dir.resolve("data/md1/s.img")),
                    "the members were made where the operator meant");
            ok(cli("lun", "--socket", socket, "create", IQN, "1", "--array", "md1"), "created LUN 1");
            ok(cli("portal", "--socket", socket, "create", "127.0.0.2:0"), "listening on 127.0.0.2:");
            ok(cli("saveconfig", "--socket", socket), "saved 2 portals, 1 arrays and 2 targets to " + config);
        }
        assertTrue(Files.readString(config).contains("secret_file: \"" + secret + "\""), Files.readString(config));
        assertEquals(2, ConfigLoader.load(config).targets().size());
        assertEquals(2, ConfigLoader.load(config).server().portals().size());
        assertEquals(dir.resolve("data/md1/s.img"), ConfigLoader.load(config).arrays().get("md1").spares().get(0));
    }

    @Test
    void eachVerbExplainsItself() {
        ok(cli("lun", "--help"), "stripestack lun create IQN LUN --file PATH [--size SIZE]");
        ok(cli("chap", "--help"), "stripestack chap set IQN USER SECRET_FILE [--mutual]");
        ok(cli("saveconfig", "--help"), "Comments outside the targets: section are kept");
        ok(cli("array", "--help"), "stripestack array create NAME MEMBER_FILE... --member-size SIZE");
        ok(cli("portal", "--help"), "stripestack portal create HOST:PORT");
        Outcome help = cli("--help");
        for (String verb : new String[] {"ls", "portal", "array", "target", "lun", "acl", "chap", "saveconfig"}) {
            assertTrue(help.out().contains("  " + verb + " "), verb + " listed: " + help.out());
        }
    }

    private static void ok(Outcome o, String expected) {
        assertEquals(0, o.code(), o.err());
        assertTrue(o.out().contains(expected), o.out());
    }
}
