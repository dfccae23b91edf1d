package io.stripestack.targetserver.server;

import static io.stripestack.targetserver.testing.ExternalTools.run;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stripestack.initiator.InitiatorOptions;
import io.stripestack.initiator.IscsiInitiator;
import io.stripestack.initiator.IscsiUrl;
import io.stripestack.initiator.ScsiCommandException;
import io.stripestack.targetserver.config.ConfigLoader;
import io.stripestack.targetserver.config.StripestackConfig;
import io.stripestack.targetserver.control.AdminServer;
import io.stripestack.targetserver.testing.ExternalTools;
import io.stripestack.targetserver.testing.ExternalTools.Result;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Targets, LUNs, ACLs and CHAP changed on a running server through its admin socket, used through libiscsi's
 * tools and qemu-io, while another session does verified I/O on an unrelated target that must never see an
 * error; refusals that name what and why and change nothing; saveconfig and a restart from the saved file.
 */
class LiveAdministrationTest {
    private static final String STEADY = "iqn.2026-11.io.stripestack:steady";
    private static final String LIVE = "iqn.2026-11.io.stripestack:live";
    private static final String OTHER_INITIATOR = "iqn.2026-11.io.example:other";

    @TempDir
    Path dir;

    private Path configFile() throws IOException {
        return configFile("");
    }

    private Path configFile(String serverExtra) throws IOException {
        String yaml = """
                # the operator's own notes: saveconfig keeps them
                data_dir: %s
                server:
                  portals: ["127.0.0.1:0"]   # an ephemeral port for the test
                  io_threads: 4
                  admin_socket: admin.sock
                %s
                arrays:
                  md0:
                    members: [md0/m0.img, md0/m1.img, md0/m2.img]
                    create_member_size: 8MiB
                    chunk: 16KiB
                targets:
                  - iqn: %s
                    luns:
                      - {lun: 0, file: steady.img, create_size: 16MiB}
                # what follows the targets stays too
                """.formatted(dir.resolve("data"), serverExtra, STEADY);
        Path file = dir.resolve("live.yaml");
        Files.writeString(file, yaml);
        return file;
    }

    private static String admin(StripestackServer server, String request) throws IOException {
        return AdminServer.request(server.adminSocket(), request);
    }

    /**
     * {@code request} (a delete without --force) once the sessions of tools that exited are gone: the server may
     * handle a tool's logout a moment after the tool returned.
     */
    private static String onceClientsLeft(StripestackServer server, String request) throws Exception {
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        for (;;) {
            try {
                return admin(server, request);
            } catch (IOException e) {
                if (!e.getMessage().contains("is in use by") || System.nanoTime() > until) {
                    throw e;
                }
                Thread.sleep(20);
            }
        }
    }

    private static String refused(StripestackServer server, String request) {
        return assertThrows(IOException.class, () -> admin(server, request), request).getMessage();
    }

    /** The tree without the ephemeral port, which differs from start to start. */
    private static String withoutPort(String tree) {
        return tree.replaceAll("(127\\.0\\.0\\.\\d+):\\d+", "$1:PORT");
    }

    private static String portal(StripestackServer server) {
        return "127.0.0.1:" + server.boundAddresses().get(0).getPort();
    }

    private static String url(StripestackServer server, String iqn, int lun) {
        return "iscsi://" + portal(server) + "/" + iqn + "/" + lun;
    }

    /** Writes and reads back distinct blocks on the steady LUN until stopped; counts rounds, fails on any error. */
    private static final class SteadyLoad implements AutoCloseable {
        final AtomicBoolean stop = new AtomicBoolean();
        final AtomicLong rounds = new AtomicLong();
        final ExecutorService thread = Executors.newSingleThreadExecutor();
        final Future<?> done;

        SteadyLoad(StripestackServer server) throws IOException {
            this(server, STEADY, 0);
        }

        SteadyLoad(StripestackServer server, String iqn, int lun) throws IOException {
            IscsiInitiator session = IscsiInitiator.login(IscsiUrl.parse(url(server, iqn, lun)),
                    InitiatorOptions.defaults().withInitiatorIqn("iqn.2026-11.io.example:steady"));
            done = thread.submit(() -> {
                try (session) {
                    Random random = new Random(3);
                    ByteBuffer out = ByteBuffer.allocateDirect(64 << 10);
                    ByteBuffer in = ByteBuffer.allocateDirect(64 << 10);
                    byte[] expected = new byte[64 << 10];
                    byte[] actual = new byte[64 << 10];
                    while (!stop.get()) {
                        long lba = (rounds.get() % 200) * 128;
                        random.nextBytes(expected);
                        out.clear();
                        out.put(expected).flip();
                        session.write16(lba, out);
                        in.clear();
                        session.read16(lba, in);
                        in.flip();
                        in.get(actual);
                        if (!java.util.Arrays.equals(expected, actual)) {
                            throw new AssertionError("steady LUN read back other data at LBA " + lba);
                        }
                        rounds.incrementAndGet();
                    }
                }
                return null;
            });
        }

        /** Rethrows the load's error at once if it stopped by itself. */
        void check() throws Exception {
            if (done.isDone()) {
                done.get();
                throw new AssertionError("the load stopped by itself");
            }
        }

        @Override
        public void close() throws Exception {
            stop.set(true);
            done.get(60, TimeUnit.SECONDS); // rethrows the load's first error
            thread.shutdown();
        }
    }

    private static void qemuIo(String url, String... commands) throws Exception {
        java.util.List<String> cmd = new java.util.ArrayList<>(java.util.List.of("qemu-io", "-f", "raw"));
        for (String c : commands) {
            cmd.add("-c");
            cmd.add(c);
        }
        cmd.add(url);
        Result r = ExternalTools.run(60, cmd).requireSuccess("qemu-io");
        assertFalse(r.output().contains("Pattern verification failed"), r.output());
        assertFalse(r.output().toLowerCase().contains("error"), r.output());
    }

    @Test
    void targetsAndLunsCreatedAtRunTimeServeLibiscsiWhileAnUnrelatedSessionNeverSeesAnError() throws Exception {
        ExternalTools.requireTool("qemu-io");
        ExternalTools.requireTool("iscsi-ls");
        ExternalTools.requireTool("iscsi-inq");
        ExternalTools.requireTool("iscsi-readcapacity16");
        try (StripestackServer server = StripestackServer.start(ConfigLoader.load(configFile()))) {
            try (SteadyLoad steady = new SteadyLoad(server)) {
                assertTrue(admin(server, "target create " + LIVE + " --alias scratch").contains("created target " + LIVE));
                assertTrue(admin(server, "lun create " + LIVE + " 0 --file " + dir.resolve("data/live0.img")
                        + " --size 12M").contains("created LUN 0"));
                Result ls = run("iscsi-ls", "-s", "iscsi://" + portal(server) + "/").requireSuccess("iscsi-ls");
                assertTrue(ls.output().contains("Target:" + LIVE), ls.output());
                assertTrue(ls.output().contains("Lun:0"), ls.output());
                Result inq = run("iscsi-inq", url(server, LIVE, 0)).requireSuccess("iscsi-inq");
                assertTrue(inq.output().contains("STRIPSTK") || inq.output().toLowerCase().contains("stripestack"),
                        inq.output());
                Result capacity = run("iscsi-readcapacity16", url(server, LIVE, 0)).requireSuccess("iscsi-readcapacity16");
                assertTrue(capacity.output().contains("LOGICAL BLOCK LENGTH IN BYTES:512"), capacity.output());
                assertTrue(capacity.output().contains("RETURNED LOGICAL BLOCK ADDRESS:" + (12 * 2048 - 1)), capacity.output());
                qemuIo(url(server, LIVE, 0), "write -P 0x6b 0 1M", "write -P 0x1d 300k 200k", "read -P 0x6b 0 300k",
                        "read -P 0x1d 300k 200k", "read -P 0x6b 500k 524k");

                // A second LUN on the array and a RAM one; both listed by the next discovery.
                admin(server, "lun create " + LIVE + " 1 --array md0");
                admin(server, "lun create " + LIVE + " 2 --ram 4M");
                Result ls2 = run("iscsi-ls", "-s", "iscsi://" + portal(server) + "/").requireSuccess("iscsi-ls");
                assertTrue(ls2.output().contains("Lun:1") && ls2.output().contains("Lun:2"), ls2.output());
                qemuIo(url(server, LIVE, 1), "write -P 0x33 0 256k", "read -P 0x33 0 256k");

                // Read-only at run time: qemu-io cannot open it for writing, reading still works.
                admin(server, "lun set " + LIVE + " 0 read_only 1");
                Result write = ExternalTools.run(60, java.util.List.of("qemu-io", "-f", "raw", "-c", "write -P 0x44 0 4k",
                        url(server, LIVE, 0)));
                assertTrue(write.exitCode() != 0 && write.output().contains("write protected"), write.output());
                Result read = ExternalTools.run(60, java.util.List.of("qemu-io", "-r", "-f", "raw", "-c",
                        "read -P 0x6b 0 300k", url(server, LIVE, 0))).requireSuccess("qemu-io -r");
                assertFalse(read.output().contains("Pattern verification failed"), read.output());
                admin(server, "lun set " + LIVE + " 0 read_only 0");

                // Deleting, with no session left: the array-backed LUN goes, the array stays usable.
                onceClientsLeft(server, "lun delete " + LIVE + " 1");
                onceClientsLeft(server, "lun delete " + LIVE + " 2");
                admin(server, "lun create " + LIVE + " 3 --array md0");
                qemuIo(url(server, LIVE, 3), "read -P 0x33 0 256k");
                assertTrue(onceClientsLeft(server, "target delete " + LIVE).contains("deleted target " + LIVE));
                Result ls3 = run("iscsi-ls", "-s", "iscsi://" + portal(server) + "/").requireSuccess("iscsi-ls");
                assertFalse(ls3.output().contains(LIVE), ls3.output());
                assertTrue(steady.rounds.get() > 0, "the steady session did I/O meanwhile");
            }
        }
    }

    @Test
    void arraysCreatedAssembledAndStoppedAtRunTimeServeLibiscsiWhileAnUnrelatedSessionNeverSeesAnError()
            throws Exception {
        ExternalTools.requireTool("qemu-io");
        ExternalTools.requireTool("iscsi-readcapacity16");
        ExternalTools.requireTool("mdadm");
        Path data = dir.resolve("data");
        String members = data.resolve("md1/a.img") + " " + data.resolve("md1/b.img") + " " + data.resolve("md1/c.img");
        try (StripestackServer server = StripestackServer.start(ConfigLoader.load(configFile()))) {
            try (SteadyLoad steady = new SteadyLoad(server)) {
                String created = admin(server, "array create md1 " + members + " --member-size 8M --chunk 16K --spare "
                        + data.resolve("md1/s.img"));
                assertTrue(created.contains("created array md1"), created);
                assertFalse(admin(server, "get md1/array_state").isBlank(), "md1's attributes are registered");
                Result examine = run("mdadm", "--examine", data.resolve("md1/b.img").toString()).requireSuccess("mdadm");
                assertTrue(examine.output().contains("Raid Level : raid5") && examine.output().contains("Chunk Size : 16K"),
                        examine.output());
                admin(server, "target create " + LIVE);
                admin(server, "lun create " + LIVE + " 0 --array md1");
                Result capacity = run("iscsi-readcapacity16", url(server, LIVE, 0)).requireSuccess("iscsi-readcapacity16");
                long bytes = Long.parseLong(admin(server, "get " + LIVE + "/lun0/size").trim());
                assertTrue(bytes > 8 << 20 && bytes < 16 << 20, "two members' data: " + bytes);
                assertTrue(capacity.output().contains("RETURNED LOGICAL BLOCK ADDRESS:" + (bytes / 512 - 1)),
                        capacity.output());
                qemuIo(url(server, LIVE, 0), "write -P 0x5a 0 2M", "write -P 0xa5 5M 1M", "read -P 0x5a 0 2M");
                steady.check();

                String exported = refused(server, "array delete md1");
                assertTrue(exported.contains("array md1 is exported by " + LIVE + "/lun0"), exported);
                onceClientsLeft(server, "lun delete " + LIVE + " 0");
                String stopped = admin(server, "array delete md1");
                assertTrue(stopped.contains("stopped array md1"), stopped);
                assertFalse(admin(server, "ls").contains("md1"), "the tree no longer lists md1");
                assertTrue(refused(server, "get md1/array_state").contains("md1/array_state"),
                        "its attributes went with it");
                assertTrue(Files.exists(data.resolve("md1/a.img")), "its member files stay");

                // From the existing member files: assembled, with the data written before.
                String assembled = admin(server, "array create md1 " + members);
                assertTrue(assembled.contains("assembled array md1"), assembled);
                admin(server, "lun create " + LIVE + " 0 --array md1");
                qemuIo(url(server, LIVE, 0), "read -P 0x5a 0 2M", "read -P 0xa5 5M 1M");
                assertTrue(admin(server, "ls").contains("o- md1 [raid5, 3 members, chunk 16 KiB"), admin(server, "ls"));
                String taken = refused(server, "set md1/add md0/m0.img");
                assertTrue(taken.contains("file " + data.resolve("md0/m0.img") + " is a member of array md0"), taken);
                admin(server, "set md1/add md1/t.img");
                String twice = refused(server, "set md0/add md1/t.img");
                assertTrue(twice.contains("is a member of array md1"), "a spare added at run time counts: " + twice);
                assertTrue(steady.rounds.get() > 0, "the steady session did I/O meanwhile");
            }
        }
    }

    @Test
    void portalsAddedAndRemovedAtRunTimeServeLibiscsiAndTheSessionsThroughThemStay() throws Exception {
        ExternalTools.requireTool("iscsi-ls");
        ExternalTools.requireTool("iscsi-inq");
        try (StripestackServer server = StripestackServer.start(ConfigLoader.load(configFile()));
                java.net.ServerSocket taken = new java.net.ServerSocket(0, 1, java.net.InetAddress.getByName("127.0.0.4"))) {
            try (SteadyLoad steady = new SteadyLoad(server)) {
                String before = admin(server, "ls");
                String[][] refusals = {
                        {"portal create " + portal(server), "listens on " + portal(server) + " already"},
                        {"portal create 127.0.0.4:" + taken.getLocalPort(), "cannot listen on"},
                        {"portal create 127.0.0.1:99999", "is not HOST:PORT"},
                        {"portal delete 127.0.0.9:3260", "does not listen on 127.0.0.9:3260"},
                        {"portal delete " + portal(server), "the server's only portal"},
                };
                for (String[] c : refusals) {
                    String message = refused(server, c[0]);
                    assertTrue(message.contains(c[1]), c[0] + " -> " + message);
                    assertEquals(before, admin(server, "ls"), "refused '" + c[0] + "' changed nothing");
                }
                String added = admin(server, "portal create 127.0.0.2:0");
                String second = added.replaceAll("(?s).*listening on (127\\.0\\.0\\.2:\\d+).*", "$1");
                assertTrue(admin(server, "ls").contains("o- " + second), admin(server, "ls"));
                Result ls = run("iscsi-ls", "-s", "iscsi://" + second + "/").requireSuccess("iscsi-ls");
                assertTrue(ls.output().contains("Target:" + STEADY) && ls.output().contains("Portal:" + second),
                        "SendTargets through the new portal names it: " + ls.output());
                IscsiInitiator throughSecond = IscsiInitiator.login(IscsiUrl.parse("iscsi://" + second + "/" + STEADY + "/0"),
                        InitiatorOptions.defaults().withInitiatorIqn(OTHER_INITIATOR));
                try (throughSecond) {
                    throughSecond.testUnitReady();
                    assertTrue(admin(server, "portal delete " + second).contains("no longer listening on " + second));
                    throughSecond.testUnitReady(); // its session stays
                    assertTrue(run("iscsi-inq", "iscsi://" + second + "/" + STEADY + "/0").exitCode() != 0,
                            "no new connection through the removed portal");
                    run("iscsi-inq", url(server, STEADY, 0)).requireSuccess("iscsi-inq through the first portal");
                }
                assertFalse(admin(server, "ls").contains("127.0.0.2"));
                assertTrue(steady.rounds.get() > 0);
            }
        }
    }

    /** iscsi-inq with CHAP (and mutual CHAP when a target secret is given) through libiscsi's variables. */
    private static Result inqWithChap(String url, String user, String secret, String targetUser, String targetSecret)
            throws Exception {
        java.util.Map<String, String> env = new java.util.HashMap<>(java.util.Map.of("LIBISCSI_CHAP_USERNAME", user,
                "LIBISCSI_CHAP_PASSWORD", secret));
        if (targetUser != null) {
            env.put("LIBISCSI_CHAP_TARGET_USERNAME", targetUser);
            env.put("LIBISCSI_CHAP_TARGET_PASSWORD", targetSecret);
        }
        return ExternalTools.run(60, env, java.util.List.of("iscsi-inq", "-i", OTHER_INITIATOR, url));
    }

    @Test
    void chapMutualChapAndAclsSetAtRunTimeAreWhatLibiscsiMeets() throws Exception {
        ExternalTools.requireTool("iscsi-inq");
        Path secret = dir.resolve("one-way.secret");
        Path targetSecret = dir.resolve("mutual.secret");
        Files.writeString(secret, "initiator-secret-1\n");
        Files.writeString(targetSecret, "target-secret-22\n");
        for (Path s : new Path[] {secret, targetSecret}) {
            Files.setPosixFilePermissions(s, PosixFilePermissions.fromString("rw-------"));
        }
        try (StripestackServer server = StripestackServer.start(ConfigLoader.load(configFile()))) {
            try (SteadyLoad steady = new SteadyLoad(server)) {
                admin(server, "target create " + LIVE);
                admin(server, "lun create " + LIVE + " 0 --ram 4M");
                String url = url(server, LIVE, 0);
                admin(server, "chap set " + LIVE + " alice " + secret);
                assertTrue(run("iscsi-inq", "-i", OTHER_INITIATOR, url).exitCode() != 0, "CHAP is required now");
                assertTrue(inqWithChap(url, "alice", "a-wrong-secret-9", null, null).exitCode() != 0, "a wrong secret");
                inqWithChap(url, "alice", "initiator-secret-1", null, null).requireSuccess("iscsi-inq with CHAP");

                admin(server, "chap set " + LIVE + " target " + targetSecret + " --mutual");
                inqWithChap(url, "alice", "initiator-secret-1", "target", "target-secret-22")
                        .requireSuccess("iscsi-inq with mutual CHAP: the target proved its secret");
                assertTrue(inqWithChap(url, "alice", "initiator-secret-1", "target", "not-the-target-22").exitCode() != 0,
                        "libiscsi refuses a target that does not know the secret it expects");
                admin(server, "chap clear " + LIVE + " --mutual");
                assertTrue(inqWithChap(url, "alice", "initiator-secret-1", "target", "target-secret-22").exitCode() != 0,
                        "mutual CHAP cleared: the target can no longer answer the initiator's challenge");
                inqWithChap(url, "alice", "initiator-secret-1", null, null).requireSuccess("one-way CHAP still works");
                admin(server, "chap clear " + LIVE);
                run("iscsi-inq", "-i", OTHER_INITIATOR, url).requireSuccess("no CHAP any more");
                // ACLs as libiscsi meets them: the first entry shuts every other initiator out
                admin(server, "acl add " + LIVE + " iqn.2026-11.io.example:me");
                Result shut = run("iscsi-inq", "-i", OTHER_INITIATOR, url);
                assertTrue(shut.exitCode() != 0, "not on the list: " + shut.output());
                run("iscsi-inq", "-i", "iqn.2026-11.io.example:me", url).requireSuccess("iscsi-inq as the listed initiator");
                admin(server, "acl add " + LIVE + " " + OTHER_INITIATOR);
                run("iscsi-inq", "-i", OTHER_INITIATOR, url).requireSuccess("iscsi-inq once listed");
                steady.check();
            }
        }
    }

    @Test
    void aLuksVolumeIsExportedAtRunTimeWithItsPassphraseOrKeyFileAndAnOpenKeyFileIsRefused() throws Exception {
        ExternalTools.requireTool("qemu-io");
        Path image = dir.resolve("data/luks.img");
        Files.createDirectories(image.getParent());
        byte[] passphrase = "luks-passphrase-1".getBytes(java.nio.charset.StandardCharsets.UTF_8);
        try (var device = io.stripestack.blockdev.FileBlockDevice.create(image, 32 << 20, 512, false)) {
            io.stripestack.crypto.luks.LuksFormatter.format(device, io.stripestack.crypto.luks.LuksFormatOptions.luks2()
                    .withKdf(new io.stripestack.crypto.luks.Kdf.Pbkdf2(io.stripestack.crypto.luks.LuksHash.SHA256, 1000))
                    .withDigestIterations(1000), passphrase);
        }
        Path pass = dir.resolve("luks.pass");
        Path key = dir.resolve("luks.key");
        for (Path p : new Path[] {pass, key}) {
            Files.write(p, passphrase);
            Files.setPosixFilePermissions(p, PosixFilePermissions.fromString("rw-------"));
        }
        try (StripestackServer server = StripestackServer.start(ConfigLoader.load(configFile()))) {
            try (SteadyLoad steady = new SteadyLoad(server)) {
                admin(server, "target create " + LIVE);
                String created = admin(server, "lun create " + LIVE + " 0 --file " + image + " --luks-passphrase-file " + pass);
                assertTrue(created.contains("created LUN 0"), created);
                assertTrue(admin(server, "ls").contains("lun0 [file " + image + ", luks, read-write]"), admin(server, "ls"));
                qemuIo(url(server, LIVE, 0), "write -P 0x6b 0 1M", "read -P 0x6b 0 1M");
                onceClientsLeft(server, "lun delete " + LIVE + " 0");
                byte[] stored = Files.readAllBytes(image);
                for (int sector = 0; sector < stored.length; sector += 512) {
                    int run = 0;
                    while (run < 512 && stored[sector + run] == 0x6b) {
                        run++;
                    }
                    assertTrue(run < 512, "sector " + sector / 512 + " holds the plaintext written, not ciphertext");
                }

                admin(server, "lun create " + LIVE + " 0 --file " + image + " --luks-key-file " + key);
                qemuIo(url(server, LIVE, 0), "read -P 0x6b 0 1M");
                onceClientsLeft(server, "lun delete " + LIVE + " 0");
                Files.setPosixFilePermissions(key, PosixFilePermissions.fromString("rw-r--r--"));
                String before = admin(server, "ls");
                String open = refused(server, "lun create " + LIVE + " 0 --file " + image + " --luks-key-file " + key);
                assertTrue(open.contains(key.toString()) && open.contains("readable by group or others"), open);
                assertEquals(before, admin(server, "ls"), "the refusal changed nothing");
                steady.check();
            }
        }
    }

    @Test
    void aLunInUseIsDeletedOnlyWithForceAndARemovedAclEndsThatInitiatorsSession() throws Exception {
        try (StripestackServer server = StripestackServer.start(ConfigLoader.load(configFile()))) {
            try (SteadyLoad steady = new SteadyLoad(server)) {
                admin(server, "target create " + LIVE);
                admin(server, "lun create " + LIVE + " 0 --ram 4M");
                String me = "iqn.2026-11.io.example:me";
                admin(server, "acl add " + LIVE + " " + me);
                admin(server, "acl add " + LIVE + " " + OTHER_INITIATOR);
                IscsiInitiator session = IscsiInitiator.login(IscsiUrl.parse(url(server, LIVE, 0)),
                        InitiatorOptions.defaults().withInitiatorIqn(me));
                try (session) {
                    session.testUnitReady();
                    String before = admin(server, "ls");
                    String busy = refused(server, "lun delete " + LIVE + " 0");
                    assertTrue(busy.contains("LUN 0 of " + LIVE + " is in use by 1 session") && busy.contains("--force"), busy);
                    assertEquals(before, admin(server, "ls"), "a refusal changes nothing");
                    session.testUnitReady();

                    // A LUN added while logged in: the session is told (its initiator retries past the unit
                    // attention) and can use the new LUN at once.
                    admin(server, "lun create " + LIVE + " 1 --ram 4M");
                    session.testUnitReady();

                    String other = admin(server, "acl delete " + LIVE + " " + OTHER_INITIATOR);
                    assertFalse(other.contains("logged out"), "another initiator's ACL leaves this session: " + other);
                    session.testUnitReady();
                    String last = refused(server, "acl delete " + LIVE + " " + me);
                    assertTrue(last.contains("would let any initiator log in"), "an empty list allows anyone: " + last);
                    session.testUnitReady();
                }
                admin(server, "acl add " + LIVE + " " + OTHER_INITIATOR);
                IscsiInitiator second = IscsiInitiator.login(IscsiUrl.parse(url(server, LIVE, 0)),
                        InitiatorOptions.defaults().withInitiatorIqn(me));
                try (second) {
                    second.testUnitReady();
                    String ended = admin(server, "acl delete " + LIVE + " " + me);
                    assertTrue(ended.contains("its 1 sessions were logged out"), ended);
                    assertThrows(IOException.class, second::testUnitReady, "the session ended with its ACL");
                    assertThrows(IOException.class, () -> IscsiInitiator.login(IscsiUrl.parse(url(server, LIVE, 0)),
                            InitiatorOptions.defaults().withInitiatorIqn(me)).close(), "and it may not log in again");
                }
                admin(server, "acl add " + LIVE + " " + me);
                IscsiInitiator onLun1 = IscsiInitiator.login(IscsiUrl.parse(url(server, LIVE, 1)),
                        InitiatorOptions.defaults().withInitiatorIqn(OTHER_INITIATOR));
                IscsiInitiator onLun0 = IscsiInitiator.login(IscsiUrl.parse(url(server, LIVE, 0)),
                        InitiatorOptions.defaults().withInitiatorIqn(me));
                try (onLun1; onLun0) {
                    onLun1.testUnitReady();
                    onLun0.testUnitReady();
                    String forced = admin(server, "lun delete " + LIVE + " 0 --force");
                    assertTrue(forced.contains("deleted LUN 0") && forced.contains("its 2 sessions were told"), forced);
                    onLun1.testUnitReady(); // past REPORTED LUNS DATA HAS CHANGED, the other LUN works on
                    ScsiCommandException gone = assertThrows(ScsiCommandException.class, onLun0::testUnitReady);
                    assertEquals(0x25, gone.asc(), "LOGICAL UNIT NOT SUPPORTED: " + gone.getMessage());
                    assertTrue(onLun0.isConnected() && onLun1.isConnected(), "--force keeps the sessions");
                }
                assertTrue(refused(server, "lun delete " + LIVE + " 0").contains("has no LUN 0"));
                assertTrue(steady.rounds.get() > 0);
            }
        }
    }

    @Test
    void lunsComingAndGoingBesideALunInUseNeverDisturbItsVerifiedIo() throws Exception {
        try (StripestackServer server = StripestackServer.start(ConfigLoader.load(configFile()))) {
            admin(server, "lun create " + STEADY + " 1 --ram 16M");
            try (SteadyLoad sameTarget = new SteadyLoad(server, STEADY, 1)) {
                for (int round = 0; round < 20; round++) {
                    long before = sameTarget.rounds.get();
                    sameTarget.check();
                    assertTrue(admin(server, "lun create " + STEADY + " 2 --ram 1M").contains("REPORTED LUNS DATA HAS CHANGED"));
                    assertTrue(admin(server, "lun delete " + STEADY + " 2 --force").contains("were told"));
                    long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
                    while (sameTarget.rounds.get() == before && System.nanoTime() < until) {
                        Thread.sleep(1);
                    }
                    assertTrue(sameTarget.rounds.get() > before, "the session goes on after round " + round);
                }
            } // close() rethrows any error the session saw
        }
    }

    @Test
    void everyRefusalNamesWhatAndWhyAndChangesNothing() throws Exception {
        try (StripestackServer server = StripestackServer.start(ConfigLoader.load(configFile()))) {
            admin(server, "target create " + LIVE);
            admin(server, "lun create " + LIVE + " 0 --ram 4M");
            admin(server, "lun create " + LIVE + " 1 --array md0");
            String before = admin(server, "ls");
            Path openKey = dir.resolve("open.key");
            Files.write(openKey, new byte[64]);
            Files.setPosixFilePermissions(openKey, PosixFilePermissions.fromString("rw-r-----"));
            Path openSecret = dir.resolve("open.secret");
            Files.writeString(openSecret, "a-long-enough-secret\n");
            Files.setPosixFilePermissions(openSecret, PosixFilePermissions.fromString("rw-r--r--"));
            String[][] cases = {
                    {"target create " + LIVE, "exists already"},
                    {"target create " + STEADY, "exists already"},
                    {"target create not-an-iqn", "'not-an-iqn' is not an iSCSI name"},
                    {"lun create " + LIVE + " 0 --ram 4M", "has LUN 0 already"},
                    {"lun create " + LIVE + " 2 --array md0", "array md0 is exported already by " + LIVE + "/lun1"},
                    {"lun create " + LIVE + " 2 --array md9", "no array named 'md9'"},
                    {"lun create " + LIVE + " 2 --file " + dir.resolve("data/md0/m1.img"), "is a member of array md0"},
                    {"lun create " + LIVE + " 2 --file " + dir.resolve("data/steady.img"), "backs " + STEADY + "/lun0 already"},
                    {"lun create " + LIVE + " 2 --file " + dir.resolve("data/none.img"), "does not exist"},
                    {"lun create " + LIVE + " 2", "give exactly one of --file PATH, --ram SIZE or --array NAME"},
                    {"lun create iqn.2026-11.io.example:nope 0 --ram 4M", "no target iqn.2026-11.io.example:nope"},
                    {"lun delete " + LIVE + " 7", "has no LUN 7"},
                    {"acl add " + LIVE + " bogus", "'bogus' is not an iSCSI name"},
                    {"acl delete " + LIVE + " " + OTHER_INITIATOR, "has no ACL for " + OTHER_INITIATOR},
                    {"chap set " + LIVE + " user " + openSecret, "is readable by group or others"},
                    {"chap set " + LIVE + " user " + dir.resolve("missing.secret"), "does not exist"},
                    {"chap clear " + LIVE, "has no CHAP credentials"},
                    {"lun create " + LIVE + " 2 --ram 4M --key-file " + openKey, "key file " + openKey + " is readable by group or others"},
                    {"lun create " + LIVE + " 2 --ram 4M --luks-key-file " + openKey, "ram-lun2 has no LUKS header"},
                    {"lun create " + LIVE + " 2 --ram 4M --key-file " + openKey + " --luks-key-file " + openKey, "give one of"},
                    {"chap set " + LIVE + " user " + openSecret + " --mutual", "readable by group or others"},
                    {"array create md0 " + fresh("x", "y", "z") + " --member-size 8M", "array md0 exists already"},
                    {"array create md2 " + dir.resolve("data/md0/m1.img") + " " + fresh("y", "z") + " --member-size 8M",
                            "file " + dir.resolve("data/md0/m1.img") + " is a member of array md0"},
                    {"array create md2 " + fresh("x", "y", "z") + " --spare " + dir.resolve("data/md0/m2.img")
                            + " --member-size 8M", "is a member of array md0"},
                    {"array create md2 " + dir.resolve("data/steady.img") + " " + fresh("y", "z") + " --member-size 8M",
                            "backs " + STEADY + "/lun0"},
                    {"array create md2 " + fresh("x", "y") + " --member-size 8M", "RAID-5 needs at least 3 members"},
                    {"array create md2 " + fresh("x", "x", "y") + " --member-size 8M", "is given twice"},
                    {"array create md2 " + fresh("x", "y", "z"), "give --member-size SIZE to create"},
                    {"array create md2 " + dir.resolve("data/steady.img") + " " + fresh("y", "z"), "backs " + STEADY},
                    {"array create md2 " + dir.resolve("open.key") + " " + fresh("y", "z"), "is outside the data directory"},
                    {"array create md2 " + dir.resolve("open.key") + " " + fresh("y", "z") + " --outside-data-dir",
                            "1 of 3 member files exist"},
                    {"array create md2 " + fresh("x", "y", "z") + " --chunk 16K", "go with --member-size"},
                    {"array create md2 " + fresh("x", "y", "z") + " --member-size 8M --chunk 3K", "not a power of two"},
                    {"array create no/slash " + fresh("x", "y", "z") + " --member-size 8M", "is not an array name"},
                    {"array create md2 " + fresh("x", "y", "z") + " --spare " + dir.resolve("data/steady.img/under-a-file.img")
                            + " --member-size 8M", "array md2 not created"},
                    {"array delete md0", "array md0 is exported by " + LIVE + "/lun1"},
                    {"array delete md9", "no array md9"},
                    {"set md0/add " + dir.resolve("data/steady.img"), "backs " + STEADY + "/lun0 already and cannot be"
                            + " added to md0"},
                    {"set md0/add md0/m1.img", "is a member of array md0"},
            };
            for (String[] c : cases) {
                String message = refused(server, c[0]);
                assertTrue(message.contains(c[1]), c[0] + " -> " + message);
                for (String name : new String[] {"x", "y", "z"}) {
                    assertFalse(Files.exists(dir.resolve("data/new/" + name + ".img")), "refused '" + c[0] + "' made no file");
                }
                assertFalse(message.contains("a-long-enough-secret"), "no secret in a message: " + message);
                assertEquals(before, admin(server, "ls"), "refused '" + c[0] + "' changed nothing");
            }
            Path secret = dir.resolve("live.secret");
            Files.writeString(secret, "a-long-enough-secret\n");
            Files.setPosixFilePermissions(secret, PosixFilePermissions.fromString("rw-------"));
            String mutualFirst = refused(server, "chap set " + LIVE + " target-user " + secret + " --mutual");
            assertTrue(mutualFirst.contains("mutual CHAP needs one-way CHAP"), mutualFirst);
            assertEquals(before, admin(server, "ls"));
            admin(server, "chap set " + LIVE + " initiator-user " + secret);
            String sameSecret = refused(server, "chap set " + LIVE + " target-user " + secret + " --mutual");
            assertTrue(sameSecret.contains("must differ"), sameSecret);
            assertNotEquals(before, admin(server, "ls"));
            // CHAP is now required: a login without credentials is refused, one with them works, also after the
            // definition was rebuilt for another change.
            InitiatorOptions other = InitiatorOptions.defaults().withInitiatorIqn(OTHER_INITIATOR);
            int port = server.boundAddresses().get(0).getPort();
            assertThrows(IOException.class, () -> IscsiInitiator.login(IscsiUrl.parse(url(server, LIVE, 0)), other).close());
            assertThrows(IOException.class, () -> IscsiInitiator.login(new IscsiUrl("127.0.0.1", port, LIVE, 0,
                    "initiator-user", "a-wrong-long-secret".toCharArray()), other).close());
            for (String change : new String[] {"acl add " + LIVE + " " + OTHER_INITIATOR, "lun set " + LIVE + " 0 read_only 1"}) {
                try (IscsiInitiator session = IscsiInitiator.login(new IscsiUrl("127.0.0.1", port, LIVE, 0,
                        "initiator-user", "a-long-enough-secret".toCharArray()), other)) {
                    session.testUnitReady();
                }
                admin(server, change);
            }
        }
    }

    @Test
    void aConfigurationWhoseArraysOrLunsShareAFileDoesNotStart() throws Exception {
        StripestackServer.start(ConfigLoader.load(configFile())).close();   // md0's files exist (a failed start removes those it created)
        String shared = Files.readString(configFile()).replace("    chunk: 16KiB\n", """
                    chunk: 16KiB
                  md1:
                    members: [md1/a.img, md0/m2.img, md1/c.img]
                    create_member_size: 8MiB
                """);
        Files.writeString(dir.resolve("shared.yaml"), shared);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> StripestackServer.start(ConfigLoader.load(dir.resolve("shared.yaml"))).close());
        assertTrue(e.getMessage().contains("file " + dir.resolve("data/md0/m2.img") + " is a member of array md"),
                e.getMessage());
        String lunOnMember = Files.readString(configFile()).replace("file: steady.img, create_size: 16MiB",
                "file: md0/m1.img");
        Files.writeString(dir.resolve("lun-on-member.yaml"), lunOnMember);
        e = assertThrows(IllegalArgumentException.class,
                () -> StripestackServer.start(ConfigLoader.load(dir.resolve("lun-on-member.yaml"))).close());
        assertTrue(e.getMessage().contains("is a member of array md0 and cannot back LUN 0 of " + STEADY), e.getMessage());
    }

    /** Paths of member files that do not exist. */
    private String fresh(String... names) {
        StringBuilder out = new StringBuilder();
        for (String n : names) {
            out.append(out.length() == 0 ? "" : " ").append(dir.resolve("data/new/" + n + ".img"));
        }
        return out.toString();
    }

    @Test
    void autosaveWritesEveryChangeThatSucceeded() throws Exception {
        Path file = configFile("  autosave: true");
        try (StripestackServer server = StripestackServer.start(ConfigLoader.load(file))) {
            String answer = admin(server, "target create " + LIVE);
            assertTrue(answer.contains("saved 1 portals, 1 arrays and 2 targets to " + file), answer);
            assertTrue(admin(server, "array create md1 md1/a.img md1/b.img md1/c.img --member-size 4M").contains(
                    "saved 1 portals, 2 arrays and 2 targets"));
            assertTrue(ConfigLoader.load(file).arrays().containsKey("md1"));
            assertTrue(ConfigLoader.load(file).targets().stream().anyMatch(t -> t.iqn().equals(LIVE)));
            String before = Files.readString(file);
            refused(server, "target create " + LIVE);
            assertEquals(before, Files.readString(file), "a refused change saves nothing");
            admin(server, "lun create " + LIVE + " 0 --ram 1M");
            assertEquals(1, ConfigLoader.load(file).targets().get(1).luns().size());
        }
    }

    @Test
    void saveconfigWritesTheRunningStateThatARestartedServerLoadsToTheSameTree() throws Exception {
        Path file = configFile();
        Path secret = dir.resolve("data/live.secret");
        Path mutualSecret = dir.resolve("data/live-mutual.secret");
        Files.createDirectories(secret.getParent());
        for (Path s : new Path[] {secret, mutualSecret}) {
            Files.writeString(s, s == secret ? "initiator-secret-1\n" : "target-secret-22\n");
            Files.setPosixFilePermissions(s, PosixFilePermissions.fromString("rw-------"));
        }
        String tree;
        StripestackConfig config = ConfigLoader.load(file);
        try (StripestackServer server = StripestackServer.start(config)) {
            admin(server, "target create " + LIVE + " --alias scratch");
            admin(server, "lun create " + LIVE + " 0 --file " + dir.resolve("data/live0.img") + " --size 4M --serial LIVE0");
            admin(server, "lun create " + LIVE + " 3 --array md0");
            admin(server, "lun create " + LIVE + " 4 --ram 2M");
            Path key = dir.resolve("data/live5.key");
            Files.write(key, new byte[32]);
            Files.setPosixFilePermissions(key, PosixFilePermissions.fromString("rw-------"));
            admin(server, "lun create " + LIVE + " 5 --ram 2M --key-file " + key + " --cipher aes-cbc-essiv:sha256");
            admin(server, "lun set " + LIVE + " 4 read_only 1");
            admin(server, "acl add " + LIVE + " " + OTHER_INITIATOR);
            admin(server, "chap set " + LIVE + " initiator-user " + secret);
            admin(server, "chap set " + LIVE + " target-user " + mutualSecret + " --mutual");
            admin(server, "lun delete " + STEADY + " 0");
            admin(server, "lun create " + STEADY + " 1 --ram 1M");
            admin(server, "array create md1 md1/a.img md1/b.img md1/c.img --member-size 4M --chunk 64K --spare md1/s.img");
            admin(server, "lun create " + LIVE + " 6 --array md1");
            admin(server, "array create md2 md2/a.img md2/b.img md2/c.img --member-size 4M");
            admin(server, "portal create 127.0.0.2:0");
            admin(server, "portal create 127.0.0.3:0");
            admin(server, "saveconfig"); // md2 and 127.0.0.3 are in the file now
            admin(server, "array delete md2");
            admin(server, "portal delete 127.0.0.3:0");
            String saved = admin(server, "saveconfig");
            assertTrue(saved.contains("saved 2 portals, 2 arrays and 2 targets to " + file)
                    && saved.contains("comments and layout outside"), saved);
            tree = admin(server, "ls");
        }
        String text = Files.readString(file);
        assertTrue(text.contains("""
                  md0:
                    members: [md0/m0.img, md0/m1.img, md0/m2.img]
                    create_member_size: 8MiB
                    chunk: 16KiB
                """), "md0's entry is kept as written: " + text);
        assertTrue(text.contains("""
                  "md1":
                    members: ["md1/a.img", "md1/b.img", "md1/c.img"]
                    spares: ["md1/s.img"]
                """), "md1's entry is added, relative to the data directory: " + text);
        assertFalse(text.contains("md2"), "md2's entry went with it: " + text);
        assertTrue(text.contains("# the operator's own notes: saveconfig keeps them"), text);
        assertTrue(text.contains("portals: [\"127.0.0.1:0\", \"127.0.0.2:0\"]   # an ephemeral port for the test"), text);
        assertTrue(text.contains("# what follows the targets stays too"), text);
        assertFalse(text.contains("initiator-secret-1") || text.contains("target-secret-22"), "no secret in the file");
        assertTrue(tree.contains("lun4 [ram 2MiB, read-only]"), tree);
        assertTrue(tree.contains("lun5 [ram 2MiB, crypt aes-cbc-essiv:sha256, read-write]"), tree);
        assertTrue(tree.contains("o- 127.0.0.2:") && !tree.contains("o- 127.0.0.3:"), tree);
        assertTrue(tree.contains("lun6 [array md1, read-write]") && tree.contains("o- md1 [raid5, 3 members, chunk 64 KiB"),
                tree);
        try (StripestackServer restarted = StripestackServer.start(ConfigLoader.load(file))) {
            assertEquals(withoutPort(tree), withoutPort(admin(restarted, "ls")), "the saved file loads to the same tree");
        }
    }
}
