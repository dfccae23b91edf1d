package io.stripestack.cli;

import static io.stripestack.targetserver.testing.ExternalTools.run;
import static io.stripestack.cli.CliRunner.cli;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stripestack.crypto.PlainModeKeys;
import io.stripestack.targetserver.config.ConfigLoader;
import io.stripestack.targetserver.server.StripestackServer;
import io.stripestack.targetserver.testing.ExternalTools;
import io.stripestack.targetserver.testing.ExternalTools.Result;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import io.stripestack.cli.CliRunner.Outcome;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code stripestack luks ...} judged by cryptsetup, then a LUN configured with {@code luks: true} on the
 * formatted device, written and read through iSCSI by qemu-io across a restart.
 */
class LuksCliTest {
    @TempDir
    Path dir;

    private Path secret(String name, String text) throws IOException {
        Path p = dir.resolve(name);
        PlainModeKeys.createKeyFile(p, text.getBytes(StandardCharsets.UTF_8));
        return p;
    }

    /**
     * Each refusal of README's {@code luks format} line says the one thing to do, in the order a new user meets
     * them; the commands it names make the line work.
     */
    @Test
    void formatRefusalsSayWhatToDo() throws Exception {
        String device = dir.resolve("lun.img").toString();
        String key = dir.resolve("pass").toString();
        Outcome unconfirmed = cli("luks", "format", "--device", device, "--key-file", key);
        assertEquals(1, unconfirmed.code());
        assertTrue(unconfirmed.err().contains("add --yes to confirm"), unconfirmed.err());

        Outcome noKey = cli("luks", "format", "--device", device, "--key-file", key, "--yes");
        assertEquals(1, noKey.code());
        assertTrue(noKey.err().contains("key file " + key + " does not exist: create one only you can read, e.g. "
                + "'(umask 077; head -c 64 /dev/urandom > " + key + ")'"), noKey.err());
        secret("pass", "correct horse battery staple");

        Outcome noDevice = cli("luks", "format", "--device", device, "--key-file", key, "--yes");
        assertEquals(1, noDevice.code());
        assertTrue(noDevice.err().contains(device + " does not exist: create the device file first, e.g. "
                + "'(umask 077; truncate -s 64M " + device + ")'"), noDevice.err());
        assertFalse(noDevice.err().contains("member"), noDevice.err());
        try (var file = java.nio.channels.FileChannel.open(Path.of(device), java.nio.file.StandardOpenOption.CREATE_NEW,
                java.nio.file.StandardOpenOption.WRITE)) {
            file.truncate(64L << 20);
            file.write(java.nio.ByteBuffer.wrap(new byte[1]), (64L << 20) - 1);
        }
        Files.setPosixFilePermissions(Path.of(device),
                java.nio.file.attribute.PosixFilePermissions.fromString("rw-------"));

        Outcome formatted = cli("luks", "format", "--device", device, "--key-file", key, "--yes",
                "--pbkdf-force-iterations", "1000", "--pbkdf", "pbkdf2");
        assertEquals(0, formatted.code(), formatted.err());
        assertTrue(formatted.out().startsWith("LUKS2 "), formatted.out());
    }

    @Test
    void verbsAgreeWithCryptsetupAndALuksLunServes() throws Exception {
        ExternalTools.requireTool("cryptsetup");
        ExternalTools.requireTool("qemu-io");
        Path device = dir.resolve("lun.img");
        Files.write(device, new byte[0]);
        try (var ch = java.nio.channels.FileChannel.open(device, java.nio.file.StandardOpenOption.WRITE)) {
            ch.write(java.nio.ByteBuffer.allocate(1), (48L << 20) - 1);
        }
        Path pass = secret("pass", "correct horse battery");
        Path second = secret("second", "staple two");

        Outcome refused = cli("luks", "format", "--device", device.toString(), "--passphrase-file", pass.toString());
        assertEquals(1, refused.code(), "format without --yes and without a terminal");
        assertTrue(refused.err().contains("add --yes"), refused.err());

        Outcome format = cli("luks", "format", "--yes", "--device", device.toString(), "--key-file", pass.toString(),
                "--pbkdf", "pbkdf2", "--pbkdf-force-iterations", "1000", "--align-payload", "4096");
        assertEquals(0, format.code(), format.err());
        assertTrue(format.out().contains("aes-xts-plain64"), format.out());

        Result dump = run("cryptsetup", "luksDump", device.toString()).requireSuccess("cryptsetup luksDump");
        assertTrue(dump.output().matches("(?s).*Version:\\s+2\n.*"), dump.output());
        assertTrue(dump.output().contains("aes-xts-plain64"), dump.output());
        run("cryptsetup", "open", "--test-passphrase", "--key-file", pass.toString(), device.toString())
                .requireSuccess("cryptsetup open --test-passphrase");

        Outcome add = cli("luks", "add-key", "--device", device.toString(), "--key-file", pass.toString(),
                "--new-key-file", second.toString(), "--pbkdf-force-iterations", "4");
        assertEquals(0, add.code(), add.err());
        run("cryptsetup", "open", "--test-passphrase", "--key-file", second.toString(), device.toString())
                .requireSuccess("cryptsetup accepts the added key");
        assertEquals(0, cli("luks", "open-test", "--device", device.toString(), "--key-file", second.toString()).code());

        Outcome wrong = cli("luks", "open-test", "--device", device.toString(), "--key-file", secret("wrong", "nope").toString());
        assertEquals(1, wrong.code());
        assertTrue(wrong.err().contains("no keyslot matches"), wrong.err());
        assertFalse(wrong.err().contains("nope"), "the secret never appears in messages");

        Outcome remove = cli("luks", "remove-key", "--device", device.toString(), "--key-file", second.toString());
        assertEquals(0, remove.code(), remove.err());
        Result gone = run("cryptsetup", "open", "--test-passphrase", "--key-file", second.toString(), device.toString());
        assertTrue(gone.exitCode() != 0, "cryptsetup refuses the removed key: " + gone.output());
        Outcome last = cli("luks", "remove-key", "--device", device.toString(), "--key-file", pass.toString());
        assertEquals(1, last.code());
        assertTrue(last.err().contains("is the last one"), last.err());

        Path backup = dir.resolve("header.bak");
        assertEquals(0, cli("luks", "header-backup", "--device", device.toString(), "--header-backup-file", backup.toString()).code());
        run("cryptsetup", "luksDump", backup.toString()).requireSuccess("cryptsetup reads our backup");
        assertTrue(cli("luks", "dump", "--device", device.toString()).out().contains("aes-xts-plain64"));

        String yaml = """
                data_dir: %s
                server: {portals: ["127.0.0.1:0"]}
                targets:
                  - iqn: iqn.2026-11.io.stripestack:luks
                    luns: [{lun: 0, file: lun.img, crypto: {luks: true, key_file: %s}}]
                """;
        var config = ConfigLoader.parse("luks.yaml", yaml.formatted(dir, pass), dir);
        try (StripestackServer server = StripestackServer.start(config)) {
            String url = "iscsi://127.0.0.1:" + server.boundAddresses().get(0).getPort() + "/iqn.2026-11.io.stripestack:luks/0";
            // The LUN is what follows the payload offset cryptsetup reports for the data segment.
            java.util.regex.Matcher m = java.util.regex.Pattern.compile("offset: (\\d+) \\[bytes\\]").matcher(dump.output());
            assertTrue(m.find(), dump.output());
            assertEquals((48L << 20) - Long.parseLong(m.group(1)), server.luns().get(0).top().size());
            Result w = run("qemu-io", "-f", "raw", "-c", "write -P 0x3c 1M 2M", "-c", "read -P 0x3c 1M 2M", url)
                    .requireSuccess("qemu-io");
            assertFalse(w.output().contains("Pattern verification failed"), w.output());
        }
        try (StripestackServer server = StripestackServer.start(config)) {
            String url = "iscsi://127.0.0.1:" + server.boundAddresses().get(0).getPort() + "/iqn.2026-11.io.stripestack:luks/0";
            Result r = run("qemu-io", "-f", "raw", "-c", "read -P 0x3c 1M 2M", url).requireSuccess("qemu-io");
            assertFalse(r.output().contains("Pattern verification failed"), r.output());
        }
        var wrongConfig = ConfigLoader.parse("luks.yaml", yaml.formatted(dir, dir.resolve("wrong")), dir);
        IOException e = assertThrows(IOException.class, () -> StripestackServer.start(wrongConfig));
        assertTrue(e.getMessage().contains("no keyslot matches"), e.getMessage());
    }
}
