package io.stripestack.targetserver.server;

import static io.stripestack.targetserver.testing.AdminAttributes.get;
import static io.stripestack.targetserver.testing.AdminAttributes.waitFor;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stripestack.initiator.InitiatorOptions;
import io.stripestack.initiator.IscsiInitiator;
import io.stripestack.initiator.IscsiUrl;
import io.stripestack.raid5.Raid5Config;
import io.stripestack.targetserver.config.ConfigLoader;
import io.stripestack.targetserver.config.StripestackConfig;
import io.stripestack.targetserver.control.AdminServer;
import io.stripestack.targetserver.testing.ExternalTools;
import io.stripestack.targetserver.testing.MemberImages;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Reshapes of running arrays while initiators write and verify through iSCSI: a plain LUN's array grows 3 -> 4
 * -> 5 members and then changes its chunk from 64 to 128 KiB, an encrypted LUN's array grows 3 -> 4. Every
 * block reads back as last written, libiscsi's iscsi-readcapacity16 sees each LUN grow, and afterwards the plain
 * array's member files, read by where mdadm --examine says md keeps each block, hold the same data with consistent
 * parity in every row, every member clean.
 */
class ReshapeOverIscsiTest {
    private static final String IQN = "iqn.2026-11.io.stripestack:reshape";
    private static final int IO_BYTES = 16 << 10;
    private static final long MEMBER_BYTES = 8 << 20;
    /** The member size less the data offset of a new ppl array (2 MiB, as mdadm places a ppl array's data). */
    private static final long DATA_BYTES = MEMBER_BYTES - Raid5Config.PPL_DATA_OFFSET_SECTORS * 512;

    @TempDir
    Path dir;

    /** Writes and verifies 16 KiB pieces of one LUN's original size; knows the generation of every piece. */
    private static final class VerifyingLoad implements AutoCloseable {
        final int[] generation;
        final AtomicBoolean stop = new AtomicBoolean();
        final AtomicReference<Throwable> failure = new AtomicReference<>();
        final AtomicLong verified = new AtomicLong();
        final Thread thread;

        VerifyingLoad(String url, long bytes, int seed) throws Exception {
            generation = new int[(int) (bytes / IO_BYTES)];
            IscsiInitiator session = IscsiInitiator.login(IscsiUrl.parse(url),
                    InitiatorOptions.defaults().withInitiatorIqn("iqn.2026-11.io.example:load" + seed));
            thread = new Thread(() -> {
                try (session) {
                    Random random = new Random(seed);
                    ByteBuffer out = ByteBuffer.allocateDirect(IO_BYTES);
                    ByteBuffer in = ByteBuffer.allocateDirect(IO_BYTES);
                    ByteBuffer expected = ByteBuffer.allocateDirect(IO_BYTES);
                    for (int piece = 0; piece < generation.length; piece++) {
                        write(session, piece, 1, out);
                    }
                    while (!stop.get()) {
                        int piece = random.nextInt(generation.length);
                        if (random.nextInt(3) == 0) {
                            write(session, piece, generation[piece] + 1, out);
                        } else {
                            check(session, piece, in, expected);
                            verified.incrementAndGet();
                        }
                    }
                } catch (Throwable e) {
                    failure.compareAndSet(null, e);
                }
            }, "verifying-load-" + seed);
            thread.start();
        }

        void write(IscsiInitiator session, int piece, int g, ByteBuffer out) throws Exception {
            fill(out.clear(), piece, g);
            session.write16(piece * (long) (IO_BYTES / 512), out.clear());
            generation[piece] = g;
        }

        void check(IscsiInitiator session, int piece, ByteBuffer in, ByteBuffer expected) throws Exception {
            in.clear();
            session.read16(piece * (long) (IO_BYTES / 512), in);
            fill(expected.clear(), piece, generation[piece]);
            if (!expected.clear().equals(in.clear())) {
                throw new AssertionError("piece " + piece + " does not read back as generation " + generation[piece]);
            }
        }

        void awaitVerifiedMore(long than) throws InterruptedException {
            while (verified.get() <= than && failure.get() == null && thread.isAlive()) {
                Thread.sleep(10);
            }
        }

        @Override
        public void close() throws InterruptedException {
            stop.set(true);
            thread.join();
        }
    }

    static void fill(ByteBuffer buf, long piece, int g) {
        for (int i = 0; i < IO_BYTES; i += 8) {
            buf.putLong(i, piece * 0x9E3779B97F4A7C15L ^ (g * 0xBF58476D1CE4E5B9L + i));
        }
    }

    private static String url(StripestackServer server, int lun) {
        InetSocketAddress a = server.boundAddresses().get(0);
        return "iscsi://127.0.0.1:" + a.getPort() + "/" + IQN + "/" + lun;
    }

    /** The LUN's size in bytes as libiscsi's iscsi-readcapacity16 reports it. */
    private static long capacity(StripestackServer server, int lun) throws Exception {
        String out = ExternalTools.run("iscsi-readcapacity16", url(server, lun))
                .requireSuccess("iscsi-readcapacity16").output();
        Matcher total = Pattern.compile("Total size:(\\d+)").matcher(out);
        assertTrue(total.find(), out);
        return Long.parseLong(total.group(1));
    }

    /** Runs a reshape the admin request starts while both loads verify, and waits until the array is idle again. */
    private static void reshape(Path socket, String array, String request, VerifyingLoad... loads) throws Exception {
        long[] before = new long[loads.length];
        for (int i = 0; i < loads.length; i++) {
            before[i] = loads[i].verified.get();
        }
        AdminServer.request(socket, request);
        assertEquals("reshape", get(socket, array + "/sync_action"), "the reshape runs under the load");
        String metrics = AdminServer.request(socket, "metrics");
        assertTrue(metrics.contains("stripestack_array_sync_action{array=\"" + array + "\",action=\"reshape\"} 1\n"),
                metrics);
        waitFor(socket, array + "/sync_action", "idle");
        for (int i = 0; i < loads.length; i++) {
            loads[i].awaitVerifiedMore(before[i]);
            assertNull(loads[i].failure.get(), "load " + i + ": " + loads[i].failure.get());
        }
    }

    @Test
    void arraysGrowAndChangeTheirChunkUnderVerifyingIscsiLoads() throws Exception {
        ExternalTools.requireTool("iscsi-readcapacity16");
        ExternalTools.requireTool("mdadm");
        StripestackConfig config = ConfigLoader.parse("reshape.yaml", """
                data_dir: %s
                server: {portals: ["127.0.0.1:0"]}
                arrays:
                  md0:
                    members: [m0.img, m1.img, m2.img]
                    create_member_size: 8MiB
                    chunk: 64KiB
                  md1:
                    members: [e0.img, e1.img, e2.img]
                    create_member_size: 8MiB
                    chunk: 64KiB
                targets:
                  - iqn: %s
                    luns:
                      - {lun: 0, array: md0}
                      - lun: 1
                        array: md1
                        crypto: {cipher: aes-xts-plain64, key_size: 512, key_file: md1.key, create_key: true}
                """.formatted(dir, IQN), dir);
        Path socket = config.server().adminSocket();
        List<Path> md0Members = new ArrayList<>(List.of(dir.resolve("m0.img"), dir.resolve("m1.img"),
                dir.resolve("m2.img")));
        int[] plainGenerations;
        try (StripestackServer server = StripestackServer.start(config)) {
            assertEquals(2 * DATA_BYTES, capacity(server, 0));
            long encryptedBefore = capacity(server, 1);
            for (String array : new String[] {"md0", "md1"}) {
                // slow enough that the loads overlap every part of each reshape (a few seconds)
                AdminServer.request(socket, "set " + array + "/sync_speed_min 2000");
                AdminServer.request(socket, "set " + array + "/sync_speed_max 4000");
            }
            try (VerifyingLoad plain = new VerifyingLoad(url(server, 0), 2 * DATA_BYTES, 1);
                 VerifyingLoad encrypted = new VerifyingLoad(url(server, 1), encryptedBefore, 2)) {
                plain.awaitVerifiedMore(0);
                encrypted.awaitVerifiedMore(0);

                AdminServer.request(socket, "set md0/add m3.img");
                md0Members.add(dir.resolve("m3.img"));
                reshape(socket, "md0", "set md0/raid_disks 4 force", plain, encrypted);
                assertEquals(3 * DATA_BYTES, capacity(server, 0));

                AdminServer.request(socket, "set md1/add e3.img");
                reshape(socket, "md1", "set md1/raid_disks 4 force", plain, encrypted);
                assertEquals(encryptedBefore + DATA_BYTES, capacity(server, 1), "the encrypted LUN grows by a member");

                AdminServer.request(socket, "set md0/add m4.img");
                md0Members.add(dir.resolve("m4.img"));
                reshape(socket, "md0", "set md0/raid_disks 5 force", plain, encrypted);
                assertEquals(4 * DATA_BYTES, capacity(server, 0));

                reshape(socket, "md0", "set md0/chunk_size 131072 force", plain, encrypted);
                assertEquals("131072", get(socket, "md0/chunk_size"));
                String metrics = AdminServer.request(socket, "metrics");
                assertTrue(metrics.contains("stripestack_array_disks_required{array=\"md0\"} 5\n")
                        && metrics.contains("stripestack_array_chunk_bytes{array=\"md0\"} 131072\n"), metrics);
                assertEquals(4 * DATA_BYTES, capacity(server, 0), "a chunk change keeps the size");
                String status = AdminServer.request(socket, "status");
                assertTrue(status.contains("[5/5] [UUUUU]") && status.contains("128k chunk"), status);
                plain.close();
                encrypted.close();
                assertNull(plain.failure.get(), "plain load: " + plain.failure.get());
                assertNull(encrypted.failure.get(), "encrypted load: " + encrypted.failure.get());
                plainGenerations = plain.generation;
            }
            // the new space of the plain LUN reads as zeros, written and read back through qemu-io at its end
            ExternalTools.run("qemu-io", "-f", "raw", "-c", "read -P 0 " + 2 * DATA_BYTES + " 1M",
                    "-c", "write -P 0x5c " + (4 * DATA_BYTES - (1 << 20)) + " 1M",
                    "-c", "read -P 0x5c " + (4 * DATA_BYTES - (1 << 20)) + " 1M", url(server, 0))
                    .requireSuccess("qemu-io over the grown LUN");
        }
        MemberImages md = MemberImages.examine(md0Members.toArray(new Path[0]));
        assertEquals(5, md.members());
        assertEquals(128 << 10, md.chunk());
        assertEquals(4 * DATA_BYTES, md.size());
        for (int role = 0; role < md.members(); role++) {
            String examined = md.examined(role);
            assertEquals("clean", MemberImages.field(examined, "State"), examined);
            assertFalse(examined.contains("Reshape pos'n"), examined);
        }
        md.assertParityConsistent();
        ByteBuffer actual = ByteBuffer.allocate(IO_BYTES);
        ByteBuffer expected = ByteBuffer.allocate(IO_BYTES);
        for (int piece = 0; piece < plainGenerations.length; piece++) {
            md.read(piece * (long) IO_BYTES, actual.clear());
            fill(expected.clear(), piece, plainGenerations[piece]);
            assertEquals(expected.clear(), actual.clear(), "piece " + piece + " in the member files");
        }
        ByteBuffer tail = ByteBuffer.allocate(1 << 20);
        md.read(4 * DATA_BYTES - (1 << 20), tail);
        for (int i = 0; i < tail.capacity(); i++) {
            assertEquals(0x5c, tail.get(i) & 0xff, "qemu-io's write at byte " + i + " of the last MiB");
        }
    }
}
