package io.stripestack.targetserver.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stripestack.targetserver.config.ConfigLoader;
import io.stripestack.targetserver.config.StripestackConfig;
import io.stripestack.targetserver.testing.StartTests;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A start that cannot succeed fails before it creates or writes anything, naming the file (or address), the reason
 * and what to do: a missing key file, a port or admin socket in use, a member file the server cannot open.
 */
class StartPreflightTest {
    @TempDir
    Path dir;

    private StripestackConfig config(String portal, String socket, String crypto) throws Exception {
        return StartTests.oneArray("preflight", dir, "portals: [\"" + portal + "\"], admin_socket: " + socket, false,
                crypto);
    }

    private StripestackConfig config() throws Exception {
        return config("127.0.0.1:0", "admin.sock", "");
    }

    private List<String> files() throws IOException {
        try (Stream<Path> all = Files.walk(dir)) {
            return all.map(p -> dir.relativize(p).toString()).sorted().toList();
        }
    }

    /** Starts {@code config}, expects a refusal, checks that no file appeared; returns the message. */
    private String refused(StripestackConfig config) throws Exception {
        List<String> before = files();
        IOException e = assertThrows(IOException.class, () -> StripestackServer.start(config).close());
        assertEquals(before, files(), "the failed start left the disk as it found it: " + e.getMessage());
        return e.getMessage();
    }

    @Test
    void aMissingKeyFileIsNamedBeforeAnyMemberIsCreated() throws Exception {
        String message = refused(config("127.0.0.1:0", "admin.sock",
                ", crypto: {cipher: aes-xts-plain64, key_file: missing.key}"));
        assertTrue(message.contains(dir.resolve("missing.key") + " (key file of LUN 0 of "
                + "iqn.2026-11.io.stripestack:preflight): not found -- restore the key file"), message);
    }

    @Test
    void aPortInUseIsNamedBeforeAnyMemberIsCreated() throws Exception {
        try (ServerSocket taken = new ServerSocket()) {
            taken.bind(new InetSocketAddress("127.0.0.1", 0));
            String message = refused(config("127.0.0.1:" + taken.getLocalPort(), "admin.sock", ""));
            assertTrue(message.contains("iSCSI: cannot listen on 127.0.0.1:" + taken.getLocalPort()
                    + " (Address already in use): free the port or choose another one"), message);
        }
    }

    @Test
    void anAdminSocketInUseIsNamedBeforeAnyMemberIsCreated() throws Exception {
        Path other = Files.createDirectories(dir.resolve("other"));
        StripestackConfig running = ConfigLoader.parse("running.yaml", """
                data_dir: %s
                server: {portals: ["127.0.0.1:0"], admin_socket: %s}
                targets:
                  - iqn: iqn.2026-11.io.stripestack:running
                    luns: [{lun: 0, ram_size: 1MiB}]
                """.formatted(other, dir.resolve("shared.sock")), other);
        try (StripestackServer first = StripestackServer.start(running)) {
            String message = refused(config("127.0.0.1:0", dir.resolve("shared.sock").toString(), ""));
            assertTrue(message.contains("another stripestack server is running with admin socket "
                    + dir.resolve("shared.sock")), message);
        }
    }

    @Test
    void aMemberTheServerCannotOpenIsNamedWithTheReason() throws Exception {
        StripestackConfig config = config();
        StripestackServer.start(config).close();   // the array exists
        Path m1 = dir.resolve("m1.img");
        Path moved = Files.move(m1, dir.resolve("m1.img.moved"));
        Files.createDirectory(m1);   // as root a mode 000 file opens: a directory cannot be opened as a member
        String message = refused(config);
        assertTrue(message.contains(m1 + " (member file of array md0): not a regular file (a directory) -- name the "
                + "file itself"), message);
        Files.delete(m1);
        Files.move(moved, m1);
        if (!"root".equals(System.getProperty("user.name"))) {
            Files.setPosixFilePermissions(m1, PosixFilePermissions.fromString("---------"));
            try {
                message = refused(config);
                assertTrue(message.contains(m1 + " (member file of array md0): permission denied -- make it readable "
                        + "and writable by the server's user"), message);
            } finally {
                Files.setPosixFilePermissions(m1, PosixFilePermissions.fromString("rw-------"));
            }
        }
        StripestackServer.start(config).close();
    }
}
