package io.stripestack.targetserver.server;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stripestack.readahead.ReadaheadBlockDevice;
import io.stripestack.readahead.ReadaheadBudget;
import io.stripestack.crypto.CryptSpec;
import io.stripestack.crypto.CryptoBlockDevice;
import io.stripestack.crypto.SectorCipher;
import io.stripestack.raid5.Raid5Array;
import io.stripestack.raid5.Raid5Config;
import io.stripestack.raid5.Raid5Files;
import io.stripestack.raid5.Raid5Options;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The whole chain Readahead(Crypto(Raid5(files))) under random concurrent I/O: every byte read equals an
 * in-memory model, while the writes are in flight and after the array is closed and assembled again.
 * Each writer owns disjoint blocks (so the model is exact) but their rows are shared, so parity updates of
 * one row interleave across threads.
 */
class CryptoOverRaid5RoundTripTest {
    @TempDir
    Path dir;

    @ParameterizedTest
    @CsvSource({"aes-xts-plain64, 64, 162, 512", "aes-cbc-essiv:sha256, 32, 384, 512", "aes-xts-plain64, 64, 8, 4096"})
    void randomConcurrentIoMatchesTheModel(String spec, int keyBytes, long offsetSectors, int sectorSize) throws Exception {
        List<Path> members = List.of(dir.resolve("m0"), dir.resolve("m1"), dir.resolve("m2"), dir.resolve("m3"));
        byte[] key = new byte[keyBytes];
        new Random(3).nextBytes(key);
        Raid5Array array = Raid5Files.create(members, 8L << 20, Raid5Config.defaults("rt").withChunk(16 * 1024),
                Raid5Options.defaults());
        CryptoBlockDevice crypto = new CryptoBlockDevice("crypt-rt", array,
                SectorCipher.create(CryptSpec.parse(spec), key, sectorSize, false), offsetSectors, 0, false);
        ReadaheadBlockDevice top = new ReadaheadBlockDevice(crypto, new ReadaheadBudget(4 << 20));
        int block = sectorSize;
        int blocks = (int) Math.min(top.size() / block, 4096);
        // Never-written sectors hold zero ciphertext, which decrypts to noise: the model starts from what
        // the fresh device reads.
        byte[] model = new byte[blocks * block];
        ByteBuffer initial = ByteBuffer.allocateDirect(model.length);
        top.read(0, initial);
        initial.flip().get(model);
        int threads = 4;
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            List<Future<?>> futures = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                final int owner = t;
                futures.add(pool.submit(() -> {
                    Random r = new Random(100 + owner);
                    ByteBuffer io = ByteBuffer.allocateDirect(16 * block);
                    for (int op = 0; op < 300; op++) {
                        int count = 1 + r.nextInt(16);
                        int first = r.nextInt(blocks - count);
                        io.clear().limit(count * block);
                        if (r.nextBoolean()) {
                            // Write only this thread's blocks (index % threads == owner), one run at a time.
                            for (int b = first; b < first + count; b++) {
                                if (b % threads != owner) {
                                    continue;
                                }
                                byte[] data = new byte[block];
                                r.nextBytes(data);
                                top.write((long) b * block, ByteBuffer.wrap(data));
                                synchronized (model) {
                                    System.arraycopy(data, 0, model, b * block, block);
                                }
                            }
                        } else {
                            top.read((long) first * block, io);
                            io.flip();
                            for (int b = first; b < first + count; b++) {
                                if (b % threads != owner) {
                                    io.position(io.position() + block);
                                    continue;
                                }
                                byte[] got = new byte[block];
                                io.get(got);
                                byte[] want = new byte[block];
                                synchronized (model) {
                                    System.arraycopy(model, b * block, want, 0, block);
                                }
                                assertArrayEquals(want, got, "block " + b + " while writes are in flight");
                            }
                        }
                    }
                    return null;
                }));
            }
            for (Future<?> f : futures) {
                f.get();
            }
        } finally {
            pool.shutdown();
        }
        top.flush();
        assertTrue(array.stats().layerCounter("full_stripe_writes") + array.stats().layerCounter("rmw_writes")
                + array.stats().layerCounter("reconstruct_writes") > 0, "the RAID layer saw the writes");
        top.close();

        Raid5Array again = Raid5Files.assemble(members, Raid5Options.defaults(), false);
        try (CryptoBlockDevice reopened = new CryptoBlockDevice("crypt-rt", again,
                SectorCipher.create(CryptSpec.parse(spec), key, sectorSize, false), offsetSectors, 0, false)) {
            ByteBuffer all = ByteBuffer.allocateDirect(model.length);
            reopened.read(0, all);
            byte[] got = new byte[model.length];
            all.flip().get(got);
            assertArrayEquals(model, got, "after close and assemble");
            assertEquals(0, again.stats().layerCounter("parity_mismatches"));
        }
    }
}
