package io.stripestack.targetserver.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stripestack.initiator.Digest;
import io.stripestack.secrets.FilePermissions;
import io.stripestack.targetserver.config.StripestackConfig.ArrayConfig;
import io.stripestack.targetserver.config.StripestackConfig.RemoteMemberConfig;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Members and spares on remote targets in the configuration, and the secrets they must not carry inline. */
class RemoteMemberConfigTest {
    private static final String TARGETS = "targets: [{iqn: \"iqn.2026-11.io.example:t\", luns: [{lun: 0, array: a}]}]\n";

    @TempDir
    Path dir;

    private StripestackConfig parse(String arrays) throws ConfigException {
        return ConfigLoader.parse("test.yaml", "data_dir: " + dir + "\n" + arrays + TARGETS, Path.of("/"));
    }

    private String errorOf(String arrays) {
        return assertThrows(ConfigException.class, () -> parse(arrays)).getMessage();
    }

    @Test
    void filesAndRemoteLunsMixWithTheirSettings() throws Exception {
        Path secret = FilePermissions.createPrivate(dir.resolve("m3.chap"));
        Files.writeString(secret, "a-secret-of-sixteen\n");
        ArrayConfig a = parse("""
                arrays:
                  a:
                    members:
                      - m0.img
                      - iscsi://10.0.0.5/iqn.2026-11.io.example:disks/1
                      - iscsi://[fd00::7]:3261/iqn.2026-11.io.example:disks/2
                      - {url: "iscsi://gw@10.0.0.6:3262/iqn.2026-11.io.example:disks/3", chap_secret_file: m3.chap}
                    spares: [iscsi://10.0.0.7/iqn.2026-11.io.example:spare/1, s0.img]
                    remote_connections: 4
                    remote_queue_depth: 64
                    remote_retry_timeout_seconds: 10
                    remote_command_timeout_seconds: 20
                    remote_header_digest: crc32c
                    remote_data_digest: CRC32C
                    remote_initiator_name: iqn.2026-11.io.example:gateway-a
                """).arrays().get("a");
        assertEquals(1, a.members().size());
        assertEquals(dir.resolve("s0.img"), a.spares().get(0));
        assertEquals(3, a.remote().members().size());
        RemoteMemberConfig chap = a.remote().members().get(2);
        assertEquals("gw", chap.url().chapUser());
        assertNull(chap.url().chapSecret(), "the secret stays in its file until a login");
        assertEquals(secret, chap.chapSecretFile());
        assertEquals("fd00::7", a.remote().members().get(1).url().host());
        assertEquals(3261, a.remote().members().get(1).url().port());
        assertEquals(1, a.remote().spares().size());
        assertEquals(4, a.remote().options().connections());
        assertEquals(64, a.remote().options().queueDepth());
        assertEquals(Duration.ofSeconds(10), a.remote().options().retryTimeout());
        assertEquals(Duration.ofSeconds(20), a.remote().options().commandTimeout());
        assertEquals(Digest.CRC32C, a.remote().options().headerDigest());
        assertEquals(Digest.CRC32C, a.remote().options().dataDigest());
        assertEquals("iqn.2026-11.io.example:gateway-a", a.remote().options().initiatorIqn());

        ArrayConfig plain = parse("""
                arrays:
                  a: {members: [m0, m1, "iscsi://10.0.0.5/iqn.2026-11.io.example:d/1"], remote_data_digest: none}
                """).arrays().get("a");
        assertEquals(Digest.NONE, plain.remote().options().headerDigest(), "no digest unless asked for");
        assertEquals(Digest.NONE, plain.remote().options().dataDigest());
    }

    @Test
    void aSecretInTheUrlIsRefusedWithoutShowingIt() {
        String inline = errorOf("""
                arrays:
                  a: {members: [m0, m1, "iscsi://gw%topsecretvalue@10.0.0.5/iqn.2026-11.io.example:d/1"]}
                """);
        assertTrue(inline.contains("arrays.a.members[2]") && inline.contains("chap_secret_file"), inline);
        assertFalse(inline.contains("topsecretvalue"), inline);

        String noFile = errorOf("""
                arrays:
                  a: {members: [m0, m1, "iscsi://gw@10.0.0.5/iqn.2026-11.io.example:d/1"]}
                """);
        assertTrue(noFile.contains("CHAP user 'gw' but no secret file"), noFile);

        String noUser = errorOf("""
                arrays:
                  a: {members: [m0, m1, {url: "iscsi://10.0.0.5/iqn.2026-11.io.example:d/1", chap_secret_file: x}]}
                """);
        assertTrue(noUser.contains("needs the CHAP user"), noUser);

        String missing = errorOf("""
                arrays:
                  a: {members: [m0, m1, {url: "iscsi://gw@10.0.0.5/iqn.2026-11.io.example:d/1", chap_secret_file: x}]}
                """);
        assertTrue(missing.contains("chap_secret_file") && missing.contains("does not exist"), missing);
    }

    @Test
    void badRemoteEntriesNameTheKey() throws Exception {
        Path open = dir.resolve("open.chap");
        Files.writeString(open, "a-secret-of-sixteen");
        Files.setPosixFilePermissions(open, PosixFilePermissions.fromString("rw-r--r--"));
        String readable = errorOf("""
                arrays:
                  a: {members: [m0, m1, {url: "iscsi://gw@h/iqn.2026-11.io.example:d/1", chap_secret_file: open.chap}]}
                """);
        assertTrue(readable.contains("chap_secret_file") && readable.contains("chmod 600"), readable);

        String noLun = errorOf("""
                arrays:
                  a: {members: [m0, m1, "iscsi://h/iqn.2026-11.io.example:d"]}
                """);
        assertTrue(noLun.contains("arrays.a.members[2]") && noLun.contains("lacks the target name or the LUN"), noLun);

        String twice = errorOf("""
                arrays:
                  a: {members: [m0, "iscsi://h/iqn.2026-11.io.example:d/1", "iscsi://h/iqn.2026-11.io.example:d/1"]}
                """);
        assertTrue(twice.contains("listed twice"), twice);

        String typo = errorOf("""
                arrays:
                  a: {members: [m0, m1, {url: "iscsi://h/iqn.2026-11.io.example:d/1", secret_file: s}]}
                """);
        assertTrue(typo.contains("unknown key"), typo);

        String digest = errorOf("""
                arrays:
                  a: {members: [m0, m1, "iscsi://h/iqn.2026-11.io.example:d/1"], remote_header_digest: crc32}
                """);
        assertTrue(digest.contains("remote_header_digest") && digest.contains("use none or crc32c"), digest);

        String name = errorOf("""
                arrays:
                  a: {members: [m0, m1, "iscsi://h/iqn.2026-11.io.example:d/1"], remote_initiator_name: gateway-a}
                """);
        assertTrue(name.contains("remote_initiator_name") && name.contains("is not an iSCSI name"), name);

        String tooFew = errorOf("""
                arrays:
                  a: {members: [m0, "iscsi://h/iqn.2026-11.io.example:d/1"]}
                """);
        assertTrue(tooFew.contains("at least 3 members, 2 given"), tooFew);
    }
}
