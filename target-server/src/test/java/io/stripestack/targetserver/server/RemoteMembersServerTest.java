package io.stripestack.targetserver.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stripestack.crypto.CryptSpec;
import io.stripestack.crypto.SectorCipher;
import io.stripestack.initiator.InitiatorOptions;
import io.stripestack.initiator.IscsiInitiator;
import io.stripestack.initiator.IscsiUrl;
import io.stripestack.secrets.FilePermissions;
import io.stripestack.targetserver.config.ConfigLoader;
import io.stripestack.targetserver.config.StripestackConfig;
import io.stripestack.targetserver.control.AdminServer;
import io.stripestack.targetserver.testing.CommandTap;
import io.stripestack.targetserver.testing.ExternalTools;
import io.stripestack.targetserver.testing.Dashboard;
import io.stripestack.targetserver.testing.Promtool;
import io.stripestack.targetserver.testing.MemberImages;
import io.stripestack.targetserver.testing.Tgtd;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLongArray;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A RAID-5 across four LUNs on four real tgt targets (one tgtd each) and one local file, exported by our own
 * front end: libiscsi's tools (iscsi-ls, iscsi-inq, iscsi-readcapacity16, iscsi-test-cu's READ(16) and WRITE(16)
 * suites, FUA included) and qemu's clients use it, mdadm reads the superblocks on the remote LUNs, the array
 * assembles again from them after a restart; a target killed under a verifying write load makes the array
 * degraded and loses no acknowledged write, and a second one stops the array with an error while the member files
 * still hold every acknowledged block; a spare on a fifth target is rebuilt into a lost member's role; a target
 * that comes back is re-added and only the regions written meanwhile are rebuilt; two targets that die at once and
 * come back leave the array failed until {@code md0/force} brings it back; SYNCHRONIZE CACHE and FUA reach every member; an encrypted LUN sends only ciphertext.
 */
class RemoteMembersServerTest {
    private static final String IQN = "iqn.2026-11.io.stripestack:remote";
    private static final long LUN_BYTES = 32L << 20;

    @TempDir
    Path dir;

    private final List<Tgtd> targets = new ArrayList<>();
    /** When not empty, the array reaches target i through tap i. */
    private final List<CommandTap> taps = new ArrayList<>();
    private boolean throughTaps;

    @AfterEach
    void killTargets() throws IOException {
        targets.forEach(Tgtd::close);
        for (CommandTap t : taps) {
            t.close();
        }
    }

    private String memberUrl(int i) {
        String url = targets.get(i).url(1);
        return taps.isEmpty() ? url : taps.get(i).relay(url);
    }

    private StripestackConfig config() throws Exception {
        return config("");
    }

    /** @param arrayKeys more keys of md0, each line indented by four spaces */
    private StripestackConfig config(String arrayKeys) throws Exception {
        return config(arrayKeys, "");
    }

    /**
     * @param arrayKeys more keys of md0, each line indented by four spaces
     * @param lunKeys   more keys of the LUN on md0, in YAML flow style ({@code , key: value})
     */
    private StripestackConfig config(String arrayKeys, String lunKeys) throws Exception {
        for (int i = 0; i < 4; i++) {
            targets.add(Tgtd.start(dir.resolve("tgt" + i), 1, LUN_BYTES));
            if (throughTaps) {
                taps.add(CommandTap.inFrontOf(IscsiUrl.parse(targets.get(i).url(1)).port()));
            }
        }
        String yaml = """
                data_dir: %s
                server:
                  portals: ["127.0.0.1:0"]
                  io_threads: 8
                  metrics: "127.0.0.1:0"
                arrays:
                  md0:
                    members: [%s, %s, local.img, %s, %s]
                    create_member_size: 32MiB
                    chunk: 64KiB
                    remote_connections: 2
                    remote_queue_depth: 16
                    remote_retry_timeout_seconds: 3
                    remote_command_timeout_seconds: 5
                    %s
                targets:
                  - iqn: %s
                    luns:
                      - {lun: 0, array: md0, readahead: 0%s}
                """.formatted(dir.resolve("data"), memberUrl(0), memberUrl(1), memberUrl(2), memberUrl(3),
                arrayKeys.strip(), IQN, lunKeys);
        Path file = dir.resolve("remote.yaml");
        Files.writeString(file, yaml);
        return ConfigLoader.load(file);
    }

    private static String url(StripestackServer server) {
        return "iscsi://127.0.0.1:" + server.boundAddresses().get(0).getPort() + "/" + IQN + "/0";
    }

    @Test
    void realClientsUseAnArrayOfRemoteMembersAndItAssemblesAgainFromTheirSuperblocks() throws Exception {
        StripestackConfig config = config();
        long arrayBytes;
        try (StripestackServer server = StripestackServer.start(config)) {
            String capacity = ExternalTools.run("iscsi-readcapacity16", url(server))
                    .requireSuccess("iscsi-readcapacity16").output();
            arrayBytes = Long.parseLong(capacity.replaceAll("(?s).*Total size:(\\d+).*", "$1"));
            assertTrue(arrayBytes >= 4 * (LUN_BYTES - (2 << 20)), capacity);
            String listed = ExternalTools.run("iscsi-ls", "-s", "iscsi://127.0.0.1:"
                    + server.boundAddresses().get(0).getPort() + "/").requireSuccess("iscsi-ls").output();
            assertTrue(listed.contains("Target:" + IQN) && listed.contains("Lun:0"), listed);
            String inquiry = ExternalTools.run("iscsi-inq", url(server)).requireSuccess("iscsi-inq").output();
            assertTrue(inquiry.contains("STRIPSTK") || inquiry.toLowerCase(Locale.ROOT).contains("stripestack"),
                    inquiry);
            for (String suite : List.of("SCSI.Read16", "SCSI.Write16")) {
                ConformanceSubsetTest.runWithoutFailures(suite, url(server)); // overwrites: before the data below
            }
            String written = ExternalTools.run("qemu-io", "-f", "raw", "-c", "write -P 0x5a 0 3M",
                    "-c", "write -P 0xc3 5M 200k", "-c", "read -P 0x5a 0 3M", url(server))
                    .requireSuccess("qemu-io write").output();
            assertFalse(written.contains("fail"), written);

            Path socket = config.server().adminSocket();
            String status = AdminServer.request(socket, "status");
            assertTrue(status.contains("[5/5] [UUUUU]"), status);
            assertTrue(status.contains("md0 remote " + targets.get(0).url(1) + ": connected, sessions 2/2, queue_depth 16"),
                    status);
            assertTrue(AdminServer.request(socket, "get md0/remote/3").startsWith(targets.get(3).url(1) + ": connected"));
            String metrics = new String(java.net.URI.create("http://127.0.0.1:" + server.metricsPort() + "/metrics")
                    .toURL().openStream().readAllBytes());
            Promtool.check(metrics);
            Set<String> unknown = new TreeSet<>(Dashboard.families());
            unknown.removeIf(f -> !f.startsWith("stripestack_remote_member_"));
            unknown.removeAll(Dashboard.declared(metrics));
            assertTrue(unknown.isEmpty(), Dashboard.FILE + " reads remote member families /metrics lacks: " + unknown);
            assertTrue(metrics.contains("stripestack_remote_member_state{array=\"md0\",member=\""
                    + targets.get(2).url(1) + "\",state=\"connected\"} 1"), metrics);
            assertTrue(metrics.contains("stripestack_remote_member_state{array=\"md0\",member=\""
                    + targets.get(2).url(1) + "\",state=\"failed\"} 0"), metrics);
            assertTrue(metrics.matches("(?s).*stripestack_remote_member_commands_total\\{[^}]*\\} [1-9].*"), metrics);
            String member0 = "{array=\"md0\",member=\"" + targets.get(0).url(1) + "\"} ";
            assertTrue(metrics.contains("stripestack_remote_member_queue_depth" + member0 + "16\n"), metrics);
            assertTrue(metrics.contains("stripestack_remote_member_sessions_up" + member0 + "2\n"), metrics);
            assertTrue(metrics.contains("stripestack_remote_member_retries_total" + member0 + "0\n"), metrics);
            assertTrue(metrics.matches(
                    "(?s).*stripestack_remote_member_mean_latency_seconds\\{[^}]*\\} [0-9.e+-]*[1-9].*"), metrics);
        }
        String examine = ExternalTools.run("mdadm", "--examine", targets.get(1).backingFile(1).toString())
                .requireSuccess("mdadm --examine").output();
        assertTrue(examine.contains("Raid Level : raid5") && examine.contains("Raid Devices : 5"), examine);

        try (StripestackServer server = StripestackServer.start(config)) {
            String status = AdminServer.request(config.server().adminSocket(), "status");
            assertTrue(status.contains("[5/5] [UUUUU]"), "assembled from the remote superblocks: " + status);
            String read = ExternalTools.run("qemu-io", "-f", "raw", "-r", "-c", "read -P 0x5a 0 3M",
                    "-c", "read -P 0xc3 5M 200k", url(server)).requireSuccess("qemu-io read").output();
            assertFalse(read.contains("fail"), read);
        }
    }

    @Test
    void synchronizeCacheAndFuaOnTheFrontEndReachEveryRemoteMemberOverItsConfiguredSessions() throws Exception {
        throughTaps = true;
        StripestackConfig config = config("consistency_policy: resync");
        try (StripestackServer server = StripestackServer.start(config);
             IscsiInitiator client = IscsiInitiator.login(IscsiUrl.parse(url(server)), InitiatorOptions.defaults())) {
            ByteBuffer data = ByteBuffer.allocateDirect(1 << 20); // 16 chunks: every member holds some
            client.write16(0, data);
            for (int i = 0; i < taps.size(); i++) {
                assertEquals(2, taps.get(i).connectionsWithCommands(), "member " + i + ": remote_connections 2");
            }

            long[] before = syncsOnceQuiet();
            client.synchronizeCache16();
            long[] after = syncsOnceQuiet();
            for (int i = 0; i < taps.size(); i++) {
                assertTrue(after[i] > before[i], "SYNCHRONIZE CACHE reached member " + i);
            }

            client.write16Fua(64, data.clear().limit(64 << 10)); // one chunk: a FUA write flushes the whole stack
            long[] afterFua = syncsOnceQuiet();
            for (int i = 0; i < taps.size(); i++) {
                assertTrue(afterFua[i] > after[i], "the FUA write's flush reached member " + i);
            }
        }
    }

    /**
     * Each member's SYNCHRONIZE CACHE count once no command has reached any member for half a second, so what the
     * array does by itself after a write (its superblocks) is not taken for what the next command causes.
     */
    private long[] syncsOnceQuiet() throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        long seen = -1;
        for (;;) {
            long now = taps.stream().mapToLong(CommandTap::commands).sum();
            if (now == seen) {
                return taps.stream().mapToLong(CommandTap::synchronizeCaches).toArray();
            }
            assertTrue(System.nanoTime() < deadline, "the members never went quiet");
            seen = now;
            Thread.sleep(500);
        }
    }

    @Test
    void anEncryptedLunOverRemoteMembersSendsOnlyCiphertextToTheTargets() throws Exception {
        byte[] key = new byte[64];
        new Random(42).nextBytes(key);
        Path keyFile = FilePermissions.createPrivate(dir.resolve("md0.key"));
        Files.write(keyFile, key);
        StripestackConfig config = config("", ", crypto: {cipher: aes-xts-plain64, key_size: 512, key_file: " + keyFile
                + "}");
        int bytes = 1 << 20;
        long lunOffset = 3L << 20;
        ByteBuffer plaintext = ByteBuffer.allocateDirect(bytes);
        for (int sector = 0; sector < bytes / 512; sector++) {
            byte[] line = String.format(Locale.ROOT, "%-512s", PLAINTEXT_MARK + " sector " + sector)
                    .getBytes(StandardCharsets.US_ASCII);
            plaintext.put(line);
        }
        plaintext.flip();
        try (StripestackServer server = StripestackServer.start(config);
             IscsiInitiator client = IscsiInitiator.login(IscsiUrl.parse(url(server)), InitiatorOptions.defaults())) {
            client.write16(lunOffset / 512, plaintext);
            client.synchronizeCache16();
            ByteBuffer back = ByteBuffer.allocateDirect(bytes);
            client.read16(lunOffset / 512, back);
            assertEquals(plaintext.rewind(), back.flip(), "read back through the encrypted LUN");
        }

        byte[] mark = PLAINTEXT_MARK.getBytes(StandardCharsets.US_ASCII);
        Path[] files = {targets.get(0).backingFile(1), targets.get(1).backingFile(1), dir.resolve("data/local.img"),
                targets.get(2).backingFile(1), targets.get(3).backingFile(1)};
        for (Path f : files) {
            assertEquals(-1, indexOf(Files.readAllBytes(f), mark), f + " holds plaintext");
        }
        // what the members hold there is the data encrypted with the LUN's key at its sectors, nothing else
        MemberImages members = MemberImages.examine(files);
        try (SectorCipher cipher = SectorCipher.create(CryptSpec.parse("aes-xts-plain64"), key, 512, false)) {
            for (long at = 0; at < bytes; at += members.chunk()) {
                ByteBuffer stored = members.read(lunOffset + at, members.chunk(), -1);
                cipher.decrypt(stored, (lunOffset + at) / 512);
                ByteBuffer written = plaintext.duplicate().position((int) at).limit((int) at + members.chunk());
                assertEquals(written, stored,
                        "the members' bytes at LUN offset " + (lunOffset + at) + " decrypt to the data written");
            }
        }
    }

    private static final String PLAINTEXT_MARK = "stripestack plaintext that must not leave the gateway";

    private static int indexOf(byte[] haystack, byte[] needle) {
        outer:
        for (int i = 0; i + needle.length <= haystack.length; i++) {
            for (int j = 0; j < needle.length; j++) {
                if (haystack[i + j] != needle[j]) {
                    continue outer;
                }
            }
            return i;
        }
        return -1;
    }

    @Test
    void aKilledTargetMakesTheArrayDegradedWithoutLosingAWriteAndASecondOneStopsItWithNothingAcknowledgedLost()
            throws Exception {
        StripestackConfig config = config();
        VerifyingLoad load = new VerifyingLoad();
        try (StripestackServer server = StripestackServer.start(config);
             IscsiInitiator client = IscsiInitiator.login(IscsiUrl.parse(url(server)), InitiatorOptions.defaults())) {
            Path socket = config.server().adminSocket();
            load.start(client);
            Thread.sleep(1500);
            targets.get(1).kill();
            Thread.sleep(6000); // the retry window (3 s) passes under load
            long writes = load.stop();
            assertTrue(load.failures.isEmpty(), "no write failed while one member was lost: " + load.failures);
            assertEquals("degraded\n", AdminServer.request(socket, "get md0/array_state"));
            String status = AdminServer.request(socket, "status");
            assertTrue(status.contains("md0 remote " + targets.get(1).url(1) + ": failed"), status);
            // whether a command was in flight on the member when its target died is timing: the retry window itself
            // is RemoteBlockDeviceTgtdTest's (aTargetThatStaysAway...); here the member is failed, not hanging
            String lost = AdminServer.request(socket, "get md0/remote/1");
            assertTrue(lost.matches("(?s).*failed, sessions 0/\\d.*"), "the lost member is failed: " + lost);
            assertTrue(writes > VerifyingLoad.BLOCKS, "the load kept writing: " + writes);
            load.verifyThrough(client);

            load.start(client);
            Thread.sleep(1500);
            targets.get(3).kill();                // the second member lost under the same load
            load.awaitAllFailed(60);
            for (IOException e : load.failures.values()) {
                assertTrue(e.getMessage().contains("CHECK CONDITION") && e.getMessage().contains("MEDIUM ERROR"),
                        "every writer got an error, none hung: " + e.getMessage());
            }
            assertEquals("failed\n", AdminServer.request(socket, "get md0/array_state"));
            status = AdminServer.request(socket, "status");
            assertTrue(status.contains("md0 remote " + targets.get(3).url(1) + ": failed"), status);
            assertTrue(status.contains("md0 : inactive") && status.contains("[5/3]"), status);
            IOException read = assertThrows(IOException.class,
                    () -> client.read16(0, ByteBuffer.allocateDirect(VerifyingLoad.BLOCK_BYTES)));
            assertTrue(read.getMessage().contains("MEDIUM ERROR"), "a failed array reads nothing: "
                    + read.getMessage());
        } // the server stops, its close returning with the array failed

        // Offline, as an operator restoring the array would: every acknowledged block is on the members. The member
        // lost first (stale) is left out and rebuilt from the others, the one lost second still holds all it
        // acknowledged. A row a failed write was changing may hold its new data without its parity (md's write
        // hole, only for writes never acknowledged): the stale member's chunks of those rows cannot be rebuilt and
        // are not asked for.
        MemberImages members = MemberImages.examine(targets.get(0).backingFile(1), targets.get(1).backingFile(1),
                dir.resolve("data/local.img"), targets.get(2).backingFile(1), targets.get(3).backingFile(1));
        int stale = members.roleOf(targets.get(1).backingFile(1));
        Set<Long> tornRows = new HashSet<>();
        load.failures.keySet().forEach(b -> tornRows.add(members.rowOf((long) b * VerifyingLoad.BLOCK_BYTES)));
        int checked = 0;
        int unrebuildable = 0;
        for (int b = 0; b < VerifyingLoad.BLOCKS; b++) {
            long offset = (long) b * VerifyingLoad.BLOCK_BYTES;
            boolean onLostMember = members.roleOf(offset) == stale;
            if (load.acknowledged.get(b) == 0) {
                continue;
            }
            if (onLostMember && tornRows.contains(members.rowOf(offset))) {
                unrebuildable++;
                continue;
            }
            ByteBuffer stored = members.read(offset, VerifyingLoad.BLOCK_BYTES, stale);
            assertTrue(load.isAcknowledgedOrInFlight(b, stored), "block " + b + (onLostMember ? ", rebuilt," : "")
                    + " holds what was acknowledged (generation " + load.acknowledged.get(b) + ")");
            checked++;
        }
        assertTrue(unrebuildable <= VerifyingLoad.WRITERS && checked >= VerifyingLoad.BLOCKS - VerifyingLoad.WRITERS,
                "checked " + checked + " blocks, left " + unrebuildable + " in rows of failed writes");
    }

    /**
     * Four writers, each over its own blocks (b % 4), so each block's acknowledgements are ordered: the generation
     * of every block's last acknowledged write, and the one a writer had in flight when its write failed.
     */
    private static final class VerifyingLoad {
        static final int BLOCK_BYTES = 64 << 10;
        static final int BLOCKS = 256;
        static final int WRITERS = 4;

        final AtomicLongArray acknowledged = new AtomicLongArray(BLOCKS);
        final AtomicLongArray inFlight = new AtomicLongArray(BLOCKS);
        /** The block whose write failed, and the error, for each writer that stopped on one. */
        final Map<Integer, IOException> failures = new ConcurrentHashMap<>();
        private final AtomicBoolean stop = new AtomicBoolean();
        private ExecutorService writers;
        private final List<Future<Long>> done = new ArrayList<>();

        void start(IscsiInitiator client) {
            stop.set(false);
            done.clear();
            writers = Executors.newFixedThreadPool(WRITERS);
            for (int w = 0; w < WRITERS; w++) {
                int writer = w;
                done.add(writers.submit(() -> {
                    ByteBuffer buf = ByteBuffer.allocateDirect(BLOCK_BYTES);
                    long writes = 0;
                    while (!stop.get()) {
                        for (int b = writer; b < BLOCKS && !stop.get(); b += WRITERS) {
                            long generation = acknowledged.get(b) + 1;
                            fill(buf, b, generation);
                            inFlight.set(b, generation);
                            try {
                                client.write16((long) b * BLOCK_BYTES / 512, buf);
                            } catch (IOException e) {
                                failures.put(b, e);
                                return writes;
                            }
                            acknowledged.set(b, generation);
                            writes++;
                        }
                    }
                    return writes;
                }));
            }
        }

        /** Stops the writers; returns how many writes they had acknowledged. */
        long stop() throws Exception {
            stop.set(true);
            return awaitWriters(60);
        }

        /** Waits for every writer to have stopped on an error of its own. */
        void awaitAllFailed(int seconds) throws Exception {
            awaitWriters(seconds);
            assertEquals(WRITERS, failures.size(), "every writer stopped on an error: " + failures);
        }

        private long awaitWriters(int seconds) throws Exception {
            long writes = 0;
            for (Future<Long> f : done) {
                writes += f.get(seconds, TimeUnit.SECONDS);
            }
            writers.shutdown();
            return writes;
        }

        /** Every written block reads back, through the array, as its last acknowledged generation. */
        void verifyThrough(IscsiInitiator client) throws IOException {
            ByteBuffer back = ByteBuffer.allocateDirect(BLOCK_BYTES);
            ByteBuffer expected = ByteBuffer.allocateDirect(BLOCK_BYTES);
            for (int b = 0; b < BLOCKS; b++) {
                long generation = acknowledged.get(b);
                if (generation == 0) {
                    continue;
                }
                back.clear();
                client.read16((long) b * BLOCK_BYTES / 512, back);
                fill(expected, b, generation);
                assertEquals(expected, back.flip(), "block " + b + " generation " + generation);
            }
        }

        /** The block holds its last acknowledged generation, or the one that was in flight when its write failed. */
        boolean isAcknowledgedOrInFlight(int b, ByteBuffer stored) {
            ByteBuffer expected = ByteBuffer.allocate(BLOCK_BYTES);
            fill(expected, b, acknowledged.get(b));
            if (expected.equals(stored)) {
                return true;
            }
            if (!failures.containsKey(b)) {
                return false;
            }
            fill(expected, b, inFlight.get(b));
            return expected.equals(stored);
        }
    }

    @Test
    void aSpareOnARemoteTargetIsRebuiltIntoTheLostMembersRoleUnderLoad() throws Exception {
        Tgtd spare = Tgtd.start(dir.resolve("spare"), 1, LUN_BYTES);
        StripestackConfig config;
        try {
            config = config("spares: [" + spare.url(1) + "]");
        } finally {
            targets.add(spare); // index 4, closed with the others
        }
        VerifyingLoad load = new VerifyingLoad();
        try (StripestackServer server = StripestackServer.start(config);
             IscsiInitiator client = IscsiInitiator.login(IscsiUrl.parse(url(server)), InitiatorOptions.defaults())) {
            Path socket = config.server().adminSocket();
            assertTrue(AdminServer.request(socket, "get md0/remote/4").startsWith(spare.url(1) + ": connected"));
            load.start(client);
            Thread.sleep(1000);
            targets.get(1).kill();
            Thread.sleep(5000);                   // the retry window (3 s) passes under the load, the rebuild starts
            load.stop();
            assertTrue(load.failures.isEmpty(), "no write failed while one member was lost: " + load.failures);
            io.stripestack.targetserver.testing.AdminAttributes.waitFor(socket, "md0/array_state", "clean");

            targets.get(3).kill();                // now every row needs the rebuilt spare
            load.verifyThrough(client);           // the first read that needs member 3 waits out its retry window
            assertEquals("degraded", io.stripestack.targetserver.testing.AdminAttributes.get(socket,
                    "md0/array_state"));
        }
        String examine = ExternalTools.run("mdadm", "--examine", spare.backingFile(1).toString())
                .requireSuccess("mdadm --examine").output();
        String lostRole = ExternalTools.run("mdadm", "--examine", targets.get(1).backingFile(1).toString())
                .requireSuccess("mdadm --examine").output().replaceAll("(?s).*Device Role : (Active device \\d+).*", "$1");
        assertTrue(examine.contains("Device Role : " + lostRole), "the spare holds the lost member's role ("
                + lostRole + "):\n" + examine);
    }

    @Test
    void aTargetThatComesBackIsReAddedAndOnlyTheRegionsWrittenMeanwhileAreRebuilt() throws Exception {
        StripestackConfig config = config("""
                    consistency_policy: bitmap
                    bitmap_chunk: 1MiB
                """);
        StripestackServer.start(config).close(); // created (its initial parity pass dirties every region), closed clean
        VerifyingLoad load = new VerifyingLoad();
        try (StripestackServer server = StripestackServer.start(config);
             IscsiInitiator client = IscsiInitiator.login(IscsiUrl.parse(url(server)), InitiatorOptions.defaults())) {
            Path socket = config.server().adminSocket();
            load.start(client);
            Thread.sleep(1000);
            targets.get(1).kill();
            Thread.sleep(5000);                   // the retry window (3 s) passes under the load
            load.stop();
            assertTrue(load.failures.isEmpty(), "no write failed while one member was lost: " + load.failures);
            assertEquals("degraded", io.stripestack.targetserver.testing.AdminAttributes.get(socket, "md0/array_state"));
            long commandsWhileAway = commands(AdminServer.request(socket, "get md0/remote/1"));

            targets.get(1).restart();
            io.stripestack.targetserver.testing.AdminAttributes.waitFor(socket, "md0/array_state", "clean");
            String line = AdminServer.request(socket, "get md0/remote/1");
            assertTrue(line.contains(": connected"), line);
            long rebuildCommands = commands(line) - commandsWhileAway;
            // A bitmap region is 1 MiB of each member: 16 rows of 64 KiB chunks, one 64 KiB write to the re-added
            // member per row rebuilt. The load's 16 MiB are the array's first 64 rows, 4 regions, all written
            // while the member was away; the superblock and bitmap writes are fewer than a region's rows. Rebuilding
            // the whole member would write all of its ~490 rows (31 regions), rebuilding nothing none.
            int rowsPerRegion = 16;
            int arrayBytesPerRegion = 4 << 20;    // a region's 16 rows hold four data chunks each
            int loadRegions = VerifyingLoad.BLOCKS * VerifyingLoad.BLOCK_BYTES / arrayBytesPerRegion;
            assertTrue(rebuildCommands >= rowsPerRegion && rebuildCommands < (loadRegions + 1) * rowsPerRegion,
                    "rebuild commands " + rebuildCommands);

            targets.get(3).kill();                // now every row needs the re-added member
            io.stripestack.targetserver.testing.AdminAttributes.waitFor(socket, "md0/array_state", "degraded");
            load.verifyThrough(client);
        }
    }

    @Test
    void twoTargetsThatDieAtOnceAndComeBackAreForcedBackWithEveryAcknowledgedWrite() throws Exception {
        StripestackConfig config = config();
        VerifyingLoad load = new VerifyingLoad();
        try (StripestackServer server = StripestackServer.start(config);
             IscsiInitiator client = IscsiInitiator.login(IscsiUrl.parse(url(server)), InitiatorOptions.defaults())) {
            Path socket = config.server().adminSocket();
            load.start(client);
            long written = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (acknowledgedBlocks(load) < VerifyingLoad.BLOCKS / 2 && System.nanoTime() < written) {
                Thread.sleep(50);
            }
            targets.get(1).kill();                // both targets die at once, under load
            targets.get(3).kill();
            load.awaitAllFailed(60);
            assertEquals("failed", io.stripestack.targetserver.testing.AdminAttributes.get(socket, "md0/array_state"));
            targets.get(1).restart();
            targets.get(3).restart();
            // the sessions come back (the server reconnects given-up members), the array stays failed until forced
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (true) {
                try {
                    AdminServer.request(socket, "set md0/force 1");
                    break;
                } catch (IOException notYet) {
                    assertTrue(notYet.getMessage().contains("does not answer yet"), notYet.getMessage());
                    assertTrue(System.nanoTime() < deadline, "the members never answered: " + notYet.getMessage());
                    Thread.sleep(500);
                }
            }
            String done = io.stripestack.targetserver.testing.AdminAttributes.get(socket, "md0/force");
            assertTrue(done.contains("FORCED back in sync") && done.contains("re-added"), done);
            io.stripestack.targetserver.testing.AdminAttributes.waitFor(socket, "md0/array_state", "clean");
            // A row a failed (never acknowledged) write was changing may hold new data without its parity (the write
            // hole): the re-added member's chunks of those rows are rebuilt from it, so they are not asked for.
            int rowBlocks = 4;                    // a row holds four 64 KiB data chunks
            Set<Integer> tornRows = new HashSet<>();
            load.failures.keySet().forEach(b -> tornRows.add(b / rowBlocks));
            ByteBuffer back = ByteBuffer.allocateDirect(VerifyingLoad.BLOCK_BYTES);
            int checked = 0;
            for (int b = 0; b < VerifyingLoad.BLOCKS; b++) {
                if (load.acknowledged.get(b) == 0 || tornRows.contains(b / rowBlocks)) {
                    continue;
                }
                back.clear();
                client.read16((long) b * VerifyingLoad.BLOCK_BYTES / 512, back);
                ByteBuffer stored = ByteBuffer.allocate(VerifyingLoad.BLOCK_BYTES).put(back.flip()).flip();
                assertTrue(load.isAcknowledgedOrInFlight(b, stored), "block " + b + " holds what was acknowledged");
                checked++;
            }
            assertTrue(checked >= VerifyingLoad.BLOCKS / 2 - VerifyingLoad.WRITERS * rowBlocks
                            && tornRows.size() <= VerifyingLoad.WRITERS,
                    "checked " + checked + " blocks, left out the rows of " + tornRows.size() + " failed writes");
        }
    }

    private static int acknowledgedBlocks(VerifyingLoad load) {
        int n = 0;
        for (int b = 0; b < VerifyingLoad.BLOCKS; b++) {
            n += load.acknowledged.get(b) > 0 ? 1 : 0;
        }
        return n;
    }

    private static long commands(String statusLine) {
        return Long.parseLong(statusLine.replaceAll("(?s).*commands (\\d+),.*", "$1"));
    }

    /** A block's contents for one generation: every 8 bytes say block and generation, so a stale block shows. */
    private static void fill(ByteBuffer buf, int block, long generation) {
        buf.clear();
        while (buf.hasRemaining()) {
            buf.putLong((long) block << 40 | generation);
        }
        buf.flip();
    }
}
