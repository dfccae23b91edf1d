package io.stripestack.targetserver.server;

import static io.stripestack.targetserver.testing.AdminAttributes.get;
import static io.stripestack.targetserver.testing.AdminAttributes.waitFor;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stripestack.blockdev.BlockDevice;
import io.stripestack.targetserver.config.ConfigLoader;
import io.stripestack.targetserver.config.StripestackConfig;
import io.stripestack.targetserver.control.AdminServer;
import io.stripestack.targetserver.testing.Tgtd;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Random;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Changes to arrays at run time that must do what an mdadm user expects and leave the configuration true: a
 * failed and removed member re-added, a replaced member listed by saveconfig and at the next start, a remote
 * LUN's URL added as a remote member (never as a file named after it), arrays of remote members created and
 * stopped at run time, a reshape of an array that keeps a partial parity log said before it happens and the
 * operator's stripe cache kept across it, saveconfig after a grow and on a server without a file of its own.
 */
class RunTimeChangesTest {
    private static final String IQN = "iqn.2026-11.io.stripestack:runtime";
    private static final long LUN_BYTES = 24L << 20;

    @TempDir
    Path dir;

    private Path data() {
        return dir.resolve("data");
    }

    /** A four-member array of 8 MiB files exported as LUN 0; {@code arrayKeys} are more keys of md0. */
    private Path configFile(String serverKeys, String arrayKeys) throws IOException {
        Path file = dir.resolve("runtime.yaml");
        Files.writeString(file, """
                # the operator's notes
                data_dir: %s
                server:
                  portals: ["127.0.0.1:0"]
                  io_threads: 4
                %s
                arrays:
                  md0:
                    members: [md0/m0.img, md0/m1.img, md0/m2.img, md0/m3.img]   # four to start with
                    create_member_size: 8MiB
                    chunk: 64KiB
                %s
                targets:
                  - iqn: %s
                    luns: [{lun: 0, array: md0}]
                """.formatted(data(), serverKeys.indent(2).stripTrailing(), arrayKeys.indent(4).stripTrailing(), IQN));
        return file;
    }

    private static String admin(StripestackServer server, String request) throws IOException {
        return AdminServer.request(server.adminSocket(), request);
    }

    private static String refused(StripestackServer server, String request) {
        return assertThrows(IOException.class, () -> admin(server, request), request).getMessage();
    }

    private static byte[] written(StripestackServer server, long seed) throws IOException {
        byte[] data = new byte[2 << 20];
        new Random(seed).nextBytes(data);
        server.luns().get(0).top().write(0, ByteBuffer.wrap(data));
        return data;
    }

    private static void assertReadsBack(StripestackServer server, byte[] expected) throws IOException {
        BlockDevice top = server.luns().get(0).top();
        ByteBuffer back = ByteBuffer.allocate(expected.length);
        top.read(0, back);
        assertArrayEquals(expected, back.array(), "the LUN reads back what was written");
    }

    @Test
    void aFailedAndRemovedMemberIsReAddedThroughTheBitmap() throws Exception {
        StripestackConfig config = ConfigLoader.load(configFile("", """
                consistency_policy: bitmap
                bitmap_chunk: 1MiB"""));
        try (StripestackServer server = StripestackServer.start(config)) {
            Path socket = server.adminSocket();
            waitFor(socket, "md0/sync_action", "idle");
            byte[] before = written(server, 1);
            admin(server, "set md0/fail 1");
            admin(server, "set md0/remove 1");
            assertTrue(admin(server, "status").contains("[4/3] [U_UU]"), admin(server, "status"));
            byte[] meanwhile = written(server, 2);

            String answer = admin(server, "set md0/add md0/m1.img");
            assertTrue(answer.contains("re-added") && answer.contains("as member 1")
                    && answer.contains("write-intent bitmap"), answer);
            waitFor(socket, "md0/array_state", "clean");
            String status = admin(server, "status");
            assertTrue(status.contains("[4/4] [UUUU]") && status.contains("m1.img[1]"), status);
            assertFalse(status.contains("(S)"), "re-added into its role, not as a spare: " + status);
            assertReadsBack(server, meanwhile);
            assertFalse(java.util.Arrays.equals(before, meanwhile));

            String again = refused(server, "set md0/add md0/m1.img");
            assertTrue(again.contains("is a member of array md0 already"), again);
        }
    }

    @Test
    void aReplacedMemberIsWhatSaveconfigAndAutosaveListAndTheRestartIsClean() throws Exception {
        Path file = configFile("autosave: true", "");
        StripestackConfig config = ConfigLoader.load(file);
        byte[] data;
        try (StripestackServer server = StripestackServer.start(config)) {
            Path socket = server.adminSocket();
            waitFor(socket, "md0/sync_action", "idle");
            data = written(server, 3);
            admin(server, "set md0/fail 1");
            admin(server, "set md0/remove 1");
            String added = admin(server, "set md0/add md0/new.img");
            assertTrue(added.contains("created " + data().resolve("md0/new.img")), added);
            waitFor(socket, "md0/array_state", "clean");
            String saved = admin(server, "saveconfig");
            assertTrue(saved.contains("saved") && saved.contains(file.toString()), saved);
        }
        String text = Files.readString(file);
        assertTrue(text.contains("\"md0/new.img\"") && !text.contains("m1.img"), text);
        assertTrue(text.contains("# the operator's notes") && text.contains("create_member_size: 8MiB"), text);
        assertTrue(Files.exists(data().resolve("md0/m1.img")), "the replaced file is still there, as it was");
        StripestackConfig reloaded = ConfigLoader.load(file);
        try (StripestackServer again = StripestackServer.start(reloaded)) {
            assertEquals(java.util.List.of(), again.arrays().get("md0").assemblyProblems(),
                    "a clean start: no member is missing or stale");
            assertTrue(admin(again, "status").contains("[4/4] [UUUU]"), admin(again, "status"));
            assertReadsBack(again, data);
        }
    }

    @Test
    void autosaveAloneListsTheReplacement() throws Exception {
        Path file = configFile("autosave: true", "");
        try (StripestackServer server = StripestackServer.start(ConfigLoader.load(file))) {
            waitFor(server.adminSocket(), "md0/sync_action", "idle");
            admin(server, "set md0/fail 2");
            admin(server, "set md0/remove 2");
            String answer = admin(server, "set md0/add md0/other.img");
            assertTrue(answer.contains("saved") && answer.contains(file.toString()), answer);
            String text = Files.readString(file);
            assertTrue(text.contains("\"md0/other.img\"") && !text.contains("m2.img"), text);
            waitFor(server.adminSocket(), "md0/array_state", "clean");
        }
    }

    @Test
    void saveconfigAfterAGrowListsEveryMemberWhateverTheBaseFileSays() throws Exception {
        Path file = configFile("", "");
        String original = Files.readString(file);
        StripestackConfig config = ConfigLoader.load(file);
        try (StripestackServer server = StripestackServer.start(config)) {
            Path socket = server.adminSocket();
            waitFor(socket, "md0/sync_action", "idle");
            admin(server, "set md0/stripe_cache_size 300");
            admin(server, "set md0/sync_speed_max 777777");
            admin(server, "set md0/add md0/m4.img");
            String why = refused(server, "set md0/raid_disks 5");
            assertTrue(why.contains("partial parity log") && why.contains("resync") && why.contains("'5 force'"), why);
            assertEquals("4", get(socket, "md0/raid_disks"), "nothing changed");
            admin(server, "set md0/raid_disks 5 force");
            waitFor(socket, "md0/sync_action", "idle");
            assertEquals("5", get(socket, "md0/raid_disks"));
            assertEquals("300", get(socket, "md0/stripe_cache_size"), "the operator's setting outlives the reshape");
            assertEquals("777777", get(socket, "md0/sync_speed_max"), "and so does the sync speed cap");

            Files.writeString(file, original);   // a base that still says four members (as the embedded default does)
            admin(server, "saveconfig");
        }
        StripestackConfig saved = ConfigLoader.load(file);
        assertEquals(5, saved.arrays().get("md0").members().size(), Files.readString(file));
        assertEquals(300, saved.arrays().get("md0").stripeCacheSize(), Files.readString(file));
        assertTrue(Files.readString(file).contains("# four to start with"), "the entry's comment is kept");
    }

    @Test
    void saveconfigOfAServerWithoutAFileWritesOneInTheDataDirectoryAndSaysSo() throws Exception {
        String text = Files.readString(configFile("", ""));
        Path nowhere = dir.resolve("not-a-file.yaml (embedded)");
        StripestackConfig config = ConfigLoader.parse(nowhere.toString(), text, Path.of(""));
        try (StripestackServer server = StripestackServer.start(config)) {
            String answer = admin(server, "saveconfig");
            Path written = data().resolve("stripestack.yaml");
            assertTrue(answer.contains("to " + written) && answer.contains("--config " + written), answer);
            assertTrue(Files.isRegularFile(written));
            admin(server, "target create iqn.2026-11.io.stripestack:later");
            String second = admin(server, "saveconfig");
            assertTrue(second.contains("to " + written) && !second.contains("from now on"), second);
            assertTrue(Files.readString(written).contains("iqn.2026-11.io.stripestack:later"));

            String error = refused(server, "saveconfig " + dir.resolve("no/such/dir/x.yaml"));
            assertTrue(error.contains(dir.resolve("no/such/dir/x.yaml").toString()), "names the file: " + error);
        }
    }

    @Test
    void aRemoteLunsUrlIsAddedAsARemoteMemberAndSavedAndAssembledAgain() throws Exception {
        Path file = configFile("", "");
        try (Tgtd tgt = Tgtd.start(dir.resolve("tgt"), 2, LUN_BYTES)) {
            byte[] data;
            try (StripestackServer server = StripestackServer.start(ConfigLoader.load(file))) {
                Path socket = server.adminSocket();
                waitFor(socket, "md0/sync_action", "idle");
                data = written(server, 4);
                String bad = refused(server, "set md0/add iscsi://127.0.0.1:1/not-an-iqn");
                assertTrue(bad.contains("iscsi://"), bad);
                refused(server, "set md0/add iscsi:/127.0.0.1:3260/iqn.2026-11.io.example:one-slash/1");
                admin(server, "set md0/fail 3");
                admin(server, "set md0/remove 3");
                String answer = admin(server, "set md0/add " + tgt.url(1));
                assertTrue(answer.contains("remote LUN " + tgt.url(1)), answer);
                waitFor(socket, "md0/array_state", "clean");
                assertTrue(get(socket, "md0/remote/0").startsWith(tgt.url(1) + ": connected"), get(socket, "md0/remote/0"));
                String status = admin(server, "status");
                assertTrue(status.contains("[4/4] [UUUU]") && status.contains(tgt.url(1)), status);
                String taken = refused(server, "set md0/add " + tgt.url(1));
                assertTrue(taken.contains("already") || taken.contains("is a member"), taken);
                admin(server, "saveconfig");
            }
            try (Stream<Path> files = Files.walk(data())) {
                assertTrue(files.noneMatch(p -> p.toString().contains("iscsi:")), "no file is named after the URL");
            }
            String text = Files.readString(file);
            assertTrue(text.contains("\"" + tgt.url(1) + "\"") && !text.contains("m3.img"), text);
            try (StripestackServer again = StripestackServer.start(ConfigLoader.load(file))) {
                assertTrue(admin(again, "status").contains("[4/4] [UUUU]"), admin(again, "status"));
                assertEquals(java.util.List.of(), again.arrays().get("md0").assemblyProblems());
                assertReadsBack(again, data);
            }
        }
    }

    @Test
    void aRemoteLunBehindChapIsAddedWithItsSecretFileAndSavedInTheFilesForm() throws Exception {
        Path file = configFile("", "");
        Files.createDirectories(data());
        Path secret = data().resolve("member.chap");
        Files.writeString(secret, "member-secret-0123\n");
        Files.setPosixFilePermissions(secret, java.nio.file.attribute.PosixFilePermissions.fromString("rw-------"));
        try (Tgtd tgt = Tgtd.start(dir.resolve("tgt"), 1, LUN_BYTES)) {
            tgt.requireChap("gateway", "member-secret-0123");
            String url = tgt.url(1).replace("iscsi://", "iscsi://gateway@");
            try (StripestackServer server = StripestackServer.start(ConfigLoader.load(file))) {
                waitFor(server.adminSocket(), "md0/sync_action", "idle");
                String noSecret = refused(server, "set md0/add " + url);
                assertTrue(noSecret.contains("no secret file"), noSecret);
                String withSecret = refused(server, "set md0/add " + url.replace("gateway@", "gateway%secret@"));
                assertTrue(withSecret.contains("would sit in the configuration file")
                        && !withSecret.contains("%secret"), withSecret);
                admin(server, "set md0/fail 0");
                admin(server, "set md0/remove 0");
                String added = admin(server, "set md0/add " + url + " --chap-secret-file member.chap");
                assertTrue(added.contains("remote LUN " + url), added);
                waitFor(server.adminSocket(), "md0/array_state", "clean");
                admin(server, "saveconfig");
            }
            String text = Files.readString(file);
            assertTrue(text.contains("{url: \"" + url + "\", chap_secret_file: \"member.chap\"}"), text);
            assertFalse(text.contains("member-secret-0123"), "no secret in the file");
            StripestackConfig saved = ConfigLoader.load(file);
            assertEquals(secret, saved.arrays().get("md0").remote().members().get(0).chapSecretFile());
            try (StripestackServer again = StripestackServer.start(saved)) {
                assertTrue(admin(again, "status").contains("[4/4] [UUUU]"), admin(again, "status"));
            }
        }
    }

    @Test
    void aMemberFileMissingAtStartStaysListedUntilItsRoleIsRebuiltElsewhere() throws Exception {
        Path file = configFile("autosave: true", "");
        StripestackServer.start(ConfigLoader.load(file)).close();
        Path m2 = data().resolve("md0/m2.img");
        Path away = dir.resolve("m2.img.away");
        Files.move(m2, away);                       // a disk not there at this start
        try (StripestackServer server = StripestackServer.start(ConfigLoader.load(file))) {
            assertTrue(admin(server, "status").contains("[4/3]"), admin(server, "status"));
            admin(server, "target create iqn.2026-11.io.stripestack:meanwhile");   // autosaves
            assertTrue(Files.readString(file).contains("md0/m2.img"), "still listed: " + Files.readString(file));
            admin(server, "set md0/add md0/fresh.img");                           // its role rebuilt elsewhere
            waitFor(server.adminSocket(), "md0/array_state", "clean");
            String text = Files.readString(file);
            assertTrue(text.contains("md0/fresh.img") && !text.contains("m2.img"), text);
        }
    }

    @Test
    void aRemoteMemberWhoseTargetIsDownAtStartStaysInTheSavedFile() throws Exception {
        try (Tgtd tgt = Tgtd.start(dir.resolve("tgt"), 1, LUN_BYTES)) {
            Path file = dir.resolve("remote.yaml");
            Files.writeString(file, """
                    data_dir: %s
                    server: {portals: ["127.0.0.1:0"]}
                    arrays:
                      md0:
                        members: [md0/m0.img, md0/m1.img, md0/m2.img, %s]
                        create_member_size: 8MiB
                        chunk: 64KiB
                        remote_retry_timeout_seconds: 1
                    targets:
                      - iqn: %s
                        luns: [{lun: 0, array: md0}]
                    """.formatted(data(), tgt.url(1), IQN));
            StripestackServer.start(ConfigLoader.load(file)).close();   // created on all four
            tgt.kill();
            try (StripestackServer server = StripestackServer.start(ConfigLoader.load(file))) {
                assertTrue(admin(server, "status").contains("[4/3]"), admin(server, "status"));
                admin(server, "saveconfig");
            }
            String text = Files.readString(file);
            assertTrue(text.contains(tgt.url(1)), "the member the server could not reach is still listed: " + text);
        }
    }

    @Test
    void anArrayOfRemoteMembersIsCreatedExportedAndStoppedAtRunTime() throws Exception {
        Path file = configFile("", "");
        try (Tgtd tgt = Tgtd.start(dir.resolve("tgt"), 3, LUN_BYTES)) {
            try (StripestackServer server = StripestackServer.start(ConfigLoader.load(file))) {
                String created = admin(server, "array create md1 " + tgt.url(1) + " " + tgt.url(2) + " md1/local.img"
                        + " --spare " + tgt.url(3) + " --member-size 16M --chunk 64K");
                assertTrue(created.contains("created array md1") && created.contains("created "
                        + data().resolve("md1/local.img")), created);
                assertTrue(get(server.adminSocket(), "md1/remote/0").contains(": connected"));
                admin(server, "target create iqn.2026-11.io.stripestack:remote");
                admin(server, "lun create iqn.2026-11.io.stripestack:remote 0 --array md1");
                admin(server, "saveconfig");
                String inUse = refused(server, "array delete md1");
                assertTrue(inUse.contains("delete that LUN first"), inUse);
                admin(server, "lun delete iqn.2026-11.io.stripestack:remote 0");
                String stopped = admin(server, "array delete md1");
                assertTrue(stopped.contains("stopped array md1") && stopped.contains("3 remote members logged out"),
                        stopped);
                assertFalse(admin(server, "status").contains(tgt.url(1)));
            }
            StripestackConfig saved = ConfigLoader.load(file);
            assertEquals(2, saved.arrays().get("md1").remote().members().size(), Files.readString(file));
            assertEquals(1, saved.arrays().get("md1").remote().spares().size(), Files.readString(file));
            try (StripestackServer again = StripestackServer.start(saved)) {
                String status = admin(again, "status");
                assertTrue(status.contains("md1") && status.contains("[3/3] [UUU]"), status);
            }
        }
    }

    @Test
    void filesOutsideTheDataDirectoryAndTheServersOwnFilesAreRefusedByName() throws Exception {
        Path file = configFile("", "");
        Files.createDirectories(data());
        try (StripestackServer server = StripestackServer.start(ConfigLoader.load(file))) {
            String target = "iqn.2026-11.io.stripestack:files";
            admin(server, "target create " + target);

            String shadow = refused(server, "lun create " + target + " 0 --file /etc/shadow");
            assertTrue(shadow.contains("outside the data directory") && shadow.contains("--outside-data-dir"), shadow);
            String shadowAnyway = refused(server, "lun create " + target + " 0 --file /etc/shadow --outside-data-dir");
            assertTrue(shadowAnyway.contains("system's own files"), shadowAnyway);
            String configAsLun = refused(server, "lun create " + target + " 0 --file " + file + " --outside-data-dir");
            assertTrue(configAsLun.contains("configuration file"), configAsLun);
            String dirAsLun = refused(server, "lun create " + target + " 0 --file md0");
            assertTrue(dirAsLun.contains("not a regular file or a block device"), dirAsLun);

            Path key = data().resolve("lun1.key");
            byte[] keyBytes = new byte[64];
            new Random(6).nextBytes(keyBytes);
            Files.write(key, keyBytes);
            Files.setPosixFilePermissions(key, java.nio.file.attribute.PosixFilePermissions.fromString("rw-------"));
            String withKey = admin(server, "lun create " + target + " 1 --file plain.img --size 4M --key-file lun1.key");
            assertTrue(withKey.contains("created " + data().resolve("plain.img")), withKey);
            String keyAsLun = refused(server, "lun create " + target + " 2 --file lun1.key");
            assertTrue(keyAsLun.contains("the key file of " + target + "/lun1"), keyAsLun);
            String keyAsChap = refused(server, "chap set " + target + " user " + data().resolve("lun1.key"));
            assertTrue(keyAsChap.contains("key file"), keyAsChap);

            Path rawKey = data().resolve("raw.bin");
            byte[] raw = new byte[64];
            new Random(5).nextBytes(raw);
            raw[0] = 1;   // a byte no text has
            Files.write(rawKey, raw);
            Files.setPosixFilePermissions(rawKey, java.nio.file.attribute.PosixFilePermissions.fromString("rw-------"));
            String rawAsChap = refused(server, "chap set " + target + " user " + rawKey);
            assertTrue(rawAsChap.contains("not text"), rawAsChap);

            String outside = refused(server, "set md0/add ../../outside/x.img");
            assertTrue(outside.contains("outside the data directory"), outside);
            assertFalse(Files.exists(dir.resolve("outside")) || Files.exists(dir.getParent().resolve("outside")),
                    "nothing was created");
        }
    }
}
