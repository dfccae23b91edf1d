package io.stripestack.targetserver.config;

import io.stripestack.blockdev.Sizes;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

class ConfigLoaderTest {

    private static StripestackConfig parse(String yaml) throws ConfigException {
        return ConfigLoader.parse("test.yaml", yaml, Path.of("/srv"));
    }

    private static String errorOf(String yaml) {
        return assertThrows(ConfigException.class, () -> parse(yaml)).getMessage();
    }

    @Test
    void shippedDefaultParses() throws Exception {
        Path conf = Path.of("..", "conf", "default.yaml");
        StripestackConfig config = ConfigLoader.parse(conf.toString(), Files.readString(conf), Path.of("/work"));
        assertEquals(Path.of("/work/data"), config.dataDir());
        assertEquals(4, config.arrays().get("md0").members().size());
        assertEquals(512 * 1024, config.arrays().get("md0").chunkBytes());
        assertEquals("127.0.0.1", config.server().portals().get(0).host());
        assertEquals(3260, config.server().portals().get(0).port());
        assertEquals("md0", config.targets().get(0).luns().get(0).backing().array());
    }

    @Test
    void defaultsAndRelativePaths() throws Exception {
        StripestackConfig c = parse("""
                arrays:
                  a: {members: [m0, m1, m2]}
                targets:
                  - iqn: iqn.2026-11.io.example:t
                    luns: [{lun: 3, array: a, crypto: {key_file: k.key, offset: 162}}]
                """);
        assertEquals(Path.of("/srv/data/m0"), c.arrays().get("a").members().get(0));
        assertEquals("left-symmetric", c.arrays().get("a").layout());
        assertFalse(c.arrays().get("a").createSparse(), "members are created allocated unless create_sparse says so");
        assertTrue(parse("""
                arrays:
                  a: {members: [m0, m1, m2], create_member_size: 8MiB, create_sparse: true}
                targets:
                  - iqn: iqn.2026-11.io.example:t
                    luns: [{lun: 0, array: a}]
                """).arrays().get("a").createSparse());
        var crypto = c.targets().get(0).luns().get(0).crypto();
        assertEquals("aes-cbc-essiv:sha256", crypto.cipher());
        assertEquals(162, crypto.offsetSectors());
        assertEquals(Path.of("/srv/data/k.key"), crypto.keyFile());
        assertNull(c.targets().get(0).chap());
        assertEquals(-1, c.targets().get(0).luns().get(0).readahead().readAheadKb());
    }

    @Test
    void errorsNameFileLineKeyAndFix() {
        String unknown = errorOf("""
                targets:
                  - iqn: iqn.2026-11.io.example:t
                    luns: [{lun: 0, file: x.img}]
                    chapp: {user: u}
                """);
        assertTrue(unknown.startsWith("test.yaml:4: targets[0].chapp: unknown key"), unknown);

        String chunk = errorOf("""
                arrays:
                  a: {members: [m0, m1, m2], chunk: 96K}
                targets: [{iqn: "iqn.2026-11.io.example:t", luns: [{lun: 0, array: a}]}]
                """);
        assertTrue(chunk.contains("test.yaml:2: arrays.a.chunk: 96KiB is not a power of two"), chunk);

        String members = errorOf("""
                arrays:
                  a: {members: [m0, m1]}
                targets: [{iqn: "iqn.2026-11.io.example:t", luns: [{lun: 0, array: a}]}]
                """);
        assertTrue(members.contains("at least 3 members, 2 given"), members);

        String missingArray = errorOf("""
                targets: [{iqn: "iqn.2026-11.io.example:t", luns: [{lun: 0, array: nope}]}]
                """);
        assertTrue(missingArray.contains("no array named 'nope'"), missingArray);

        String shortSecret = errorOf("""
                targets: [{iqn: "iqn.2026-11.io.example:t", chap: {user: u, secret: short}, luns: [{lun: 0, file: f}]}]
                """);
        assertTrue(shortSecret.contains("at least 12 characters"), shortSecret);
        assertTrue(!shortSecret.contains("short'"), "the secret must not appear in the message");

        String badIqn = errorOf("""
                targets: [{iqn: "target1", luns: [{lun: 0, file: f}]}]
                """);
        assertTrue(badIqn.contains("is not an iSCSI name"), badIqn);

        String yaml = errorOf("targets: [unclosed\n");
        assertTrue(yaml.startsWith("test.yaml:"), yaml);
        assertTrue(yaml.contains("not valid YAML"), yaml);
    }

    @Test
    void writeBufferBudgetDefaultsTo256MiBAndIsRangeChecked() throws Exception {
        String target = "targets: [{iqn: \"iqn.2026-11.io.example:t\", luns: [{lun: 0, file: f}]}]\n";
        assertEquals(256L << 20, parse(target).server().writeBufferBudget());
        assertEquals(1L << 30, parse("server:\n  write_buffer_budget: 1GiB\n" + target).server().writeBufferBudget());
        String tooSmall = errorOf("server:\n  queue_depth: 32\n  write_buffer_budget: 4KiB\n" + target);
        assertTrue(tooSmall.startsWith("test.yaml:3: server.write_buffer_budget: 4KiB is outside the valid range 64KiB..64GiB"),
                tooSmall);
    }

    @Test
    void chapSecretFilesMustBePrivate(@org.junit.jupiter.api.io.TempDir Path dir) throws Exception {
        Path secret = dir.resolve("chap.secret");
        Files.writeString(secret, "a-long-chap-secret\n");
        Files.setPosixFilePermissions(secret, java.nio.file.attribute.PosixFilePermissions.fromString("rw-r--r--"));
        String yaml = "data_dir: " + dir + "\n"
                + "targets: [{iqn: \"iqn.2026-11.io.example:t\", chap: {user: u, secret_file: chap.secret},"
                + " luns: [{lun: 0, file: f}]}]\n";
        String refused = assertThrows(ConfigException.class, () -> ConfigLoader.parse("c.yaml", yaml, dir)).getMessage();
        assertTrue(refused.contains("c.yaml:2: targets[0].chap.secret_file: CHAP secret file " + secret
                + " is readable by group or others"), refused);
        assertTrue(refused.contains("chmod 600 " + secret), refused);
        assertTrue(!refused.contains("a-long-chap-secret"), "the secret never appears in messages");

        Files.setPosixFilePermissions(secret, java.nio.file.attribute.PosixFilePermissions.fromString("rw-------"));
        var chap = ConfigLoader.parse("c.yaml", yaml, dir).targets().get(0).chap();
        assertEquals("a-long-chap-secret", new String(chap.secret()));
    }

    @Test
    void sizesUseBinaryUnits() {
        assertEquals(512 * 1024, Sizes.parse("512K"));
        assertEquals(256L << 20, Sizes.parse("256MiB"));
        assertEquals(1L << 30, Sizes.parse("1 GiB"));
        assertEquals("96KiB", Sizes.format(96 * 1024));
        assertThrows(IllegalArgumentException.class, () -> Sizes.parse("12Q"));
    }

    @Test
    void sessionLimitsParseWithDefaultsAndRanges() throws Exception {
        String targets = """
                targets:
                  - iqn: iqn.2026-11.io.example:t
                    luns: [{lun: 0, ram_size: 1MiB}]
                """;
        StripestackConfig.SessionLimits defaults = parse(targets).server().sessionLimits();
        assertEquals(256L << 20, defaults.dataInBudget());
        assertEquals(32L << 20, defaults.dataInPerSession());
        assertEquals(256, defaults.maxConnections());
        assertEquals(1000, defaults.authFailureDelayMillis());
        assertEquals(64, defaults.maxConnectionsPerAddress());
        assertEquals(64, defaults.maxSessionsPerInitiator());
        assertEquals(5, defaults.loginIdleTimeoutSeconds());
        assertEquals(64L << 20, defaults.writeBufferPerSession());
        StripestackConfig.SessionLimits set = parse("""
                server: {data_in_budget: 64MiB, data_in_per_session: 8MiB, max_connections: 16,
                         auth_failure_delay_ms: 0,
                         max_connections_per_address: 4, max_sessions_per_initiator: 2, login_idle_timeout_seconds: 3,
                         write_buffer_budget: 32MiB, write_buffer_per_session: 8MiB}
                """ + targets).server().sessionLimits();
        assertEquals(new StripestackConfig.SessionLimits(64L << 20, 8L << 20, 16, 0, 4, 2, 3, 8L << 20), set);
        String shareTooLarge = errorOf("server: {write_buffer_budget: 16MiB, write_buffer_per_session: 32MiB}\n"
                + targets);
        assertTrue(shareTooLarge.contains("write_buffer_per_session"), shareTooLarge);
        assertEquals(16L << 20, parse("server: {write_buffer_budget: 16MiB}\n" + targets).server().sessionLimits()
                .writeBufferPerSession(), "the write share never exceeds the budget");
        String tooLarge = errorOf("server: {data_in_budget: 16MiB, data_in_per_session: 32MiB}\n" + targets);
        assertTrue(tooLarge.contains("data_in_per_session"), tooLarge);
        assertEquals(4L << 20, parse("server: {data_in_budget: 4MiB}\n" + targets).server().sessionLimits().dataInPerSession(),
                "the share never exceeds the budget");
    }
}
