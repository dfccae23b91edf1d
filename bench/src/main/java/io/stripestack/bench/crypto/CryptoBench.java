package io.stripestack.bench.crypto;

import io.stripestack.blockdev.BlockDevice;
import io.stripestack.blockdev.Geometry;
import io.stripestack.blockdev.IoStats;
import io.stripestack.blockdev.MemoryBlockDevice;
import io.stripestack.crypto.CryptSpec;
import io.stripestack.crypto.CryptoBlockDevice;
import io.stripestack.crypto.SectorCipher;
import java.nio.ByteBuffer;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CountDownLatch;
import javax.crypto.Cipher;
import javax.crypto.spec.IvParameterSpec;
import javax.crypto.spec.SecretKeySpec;

/**
 * A quick throughput table (not JMH; a few seconds in total): the JCE's raw AES rate against what the
 * crypto layer achieves at the same thread count, for XTS and CBC-ESSIV.
 *
 * <pre>
 *   java -cp crypto-layer.jar:blockdev.jar:slf4j-api.jar io.stripestack.bench.crypto.CryptoBench [seconds] [threads] [filter]
 * </pre>
 *
 * Rows:
 * <ul>
 *   <li>{@code jce ecb} / {@code jce cbc} / {@code jce cbc decrypt}: one {@code update} over a 64 KiB heap array
 *       per call, the raw rate; {@code ..., direct buffers}: the same over direct buffers (the JCE copies them
 *       through heap arrays itself);</li>
 *   <li>{@code jce cbc re-init/sector}: re-initialising a CBC cipher with each sector's IV, the obvious way
 *       the layer avoids;</li>
 *   <li>{@code SectorCipher enc/dec}: the layer's cipher on 128 KiB direct buffers, per-sector IVs;</li>
 *   <li>{@code CryptoBlockDevice write/read}: 128 KiB requests through the layer over a memory device (which
 *       copies every byte in and out);</li>
 *   <li>{@code CryptoBlockDevice ... no-copy below}: the same over a device that moves no bytes (a read leaves the
 *       buffer's previous contents, a write drops them): the layer's own cost, what the goal "the layer's
 *       throughput >= 0.9x the cipher's" is about.</li>
 * </ul>
 * Each thread works on its own buffers; the figure is the sum over threads, in MB/s (10^6 bytes). With a
 * filter, only rows whose name contains it run. Rows get 0.5 s of warm-up; the JCE's AES-NI intrinsics
 * take over only once C2 compiled the cipher methods, so on a busy machine give 3 s or more per row.
 */
public final class CryptoBench {
    private static final int SECTOR = 512;
    /**
     * Bytes per raw JCE call, the layer's chunk size: the JCE's intrinsics (AES-NI) replace whole methods once
     * those are compiled, which needs many invocations; megabyte calls reach that much later in warm-up.
     */
    private static final int RAW_BYTES = 64 * 1024;
    private static final int REQUEST = 128 * 1024;

    private static String filter = "";

    private CryptoBench() {
    }

    /** One timed loop body; returns bytes processed. */
    private interface Work {
        long run() throws Exception;
    }

    /** Creates one thread's work (its own cipher objects and buffers). */
    private interface WorkFactory {
        Work create() throws Exception;
    }

    public static void main(String[] args) throws Exception {
        double seconds = args.length > 0 ? Double.parseDouble(args[0]) : 1.0;
        int threads = args.length > 1 ? Integer.parseInt(args[1]) : Runtime.getRuntime().availableProcessors();
        filter = args.length > 2 ? args[2] : "";
        SecureRandom random = new SecureRandom();
        byte[] xtsKey = new byte[64];
        byte[] cbcKey = new byte[32];
        random.nextBytes(xtsKey);
        random.nextBytes(cbcKey);

        System.out.printf(Locale.ROOT, "%-40s %8s %12s%n", "case", "threads", "MB/s");
        for (int t : threads == 1 ? new int[] {1} : new int[] {1, threads}) {
            row("jce ecb (AES-256, XTS ceiling)", t, seconds, () -> rawJce("AES/ECB/NoPadding", cbcKey, Cipher.ENCRYPT_MODE));
            row("jce cbc (AES-256)", t, seconds, () -> rawJce("AES/CBC/NoPadding", cbcKey, Cipher.ENCRYPT_MODE));
            row("jce cbc decrypt (AES-256)", t, seconds, () -> rawJce("AES/CBC/NoPadding", cbcKey, Cipher.DECRYPT_MODE));
            row("jce cbc decrypt, direct buffers", t, seconds, () -> rawJceDirect(cbcKey, Cipher.DECRYPT_MODE));
            row("jce cbc encrypt, direct buffers", t, seconds, () -> rawJceDirect(cbcKey, Cipher.ENCRYPT_MODE));
            row("jce cbc re-init/sector", t, seconds, () -> cbcReinitPerSector(cbcKey));
            for (String spec : new String[] {"aes-xts-plain64", "aes-cbc-essiv:sha256"}) {
                byte[] key = spec.contains("xts") ? xtsKey : cbcKey;
                row("SectorCipher enc " + spec, t, seconds, () -> sectorCipher(spec, key, true));
                row("SectorCipher dec " + spec, t, seconds, () -> sectorCipher(spec, key, false));
                row("CryptoBlockDevice write " + spec, t, seconds, () -> device(spec, key, true));
                row("CryptoBlockDevice read  " + spec, t, seconds, () -> device(spec, key, false));
                row("CryptoBlockDevice write " + spec + " no-copy below", t, seconds, () -> noCopyDevice(spec, key, true));
                row("CryptoBlockDevice read  " + spec + " no-copy below", t, seconds, () -> noCopyDevice(spec, key, false));
            }
        }
    }

    private static void row(String name, int threads, double seconds, WorkFactory factory) throws Exception {
        if (!name.contains(filter)) {
            return;
        }
        List<Work> works = new ArrayList<>();
        for (int i = 0; i < threads; i++) {
            works.add(factory.create());
        }
        for (Work w : works) { // warm-up, lets the JIT compile the loop and the AES intrinsics
            long until = System.nanoTime() + 500_000_000L;
            while (System.nanoTime() < until) {
                w.run();
            }
        }
        long[] bytes = new long[threads];
        CountDownLatch start = new CountDownLatch(1);
        List<Thread> running = new ArrayList<>();
        long nanos = (long) (seconds * 1e9);
        for (int i = 0; i < threads; i++) {
            int index = i;
            Thread thread = new Thread(() -> {
                try {
                    start.await();
                    long until = System.nanoTime() + nanos;
                    long total = 0;
                    while (System.nanoTime() < until) {
                        total += works.get(index).run();
                    }
                    bytes[index] = total;
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            }, "bench-" + i);
            thread.start();
            running.add(thread);
        }
        start.countDown();
        long sum = 0;
        for (int i = 0; i < threads; i++) {
            running.get(i).join();
            sum += bytes[i];
        }
        System.out.printf(Locale.ROOT, "%-40s %8d %12.0f%n", name, threads, sum / seconds / 1e6);
    }

    private static Work rawJce(String transformation, byte[] key, int mode) throws Exception {
        Cipher cipher = Cipher.getInstance(transformation);
        if (transformation.contains("CBC")) {
            cipher.init(mode, new SecretKeySpec(key, "AES"), new IvParameterSpec(new byte[16]));
        } else {
            cipher.init(mode, new SecretKeySpec(key, "AES"));
        }
        byte[] in = new byte[RAW_BYTES];
        byte[] out = new byte[RAW_BYTES];
        return () -> cipher.update(in, 0, in.length, out, 0);
    }

    /** The JCE's own path for direct buffers (where the layer's data lives), 64 KiB per call. */
    private static Work rawJceDirect(byte[] key, int mode) throws Exception {
        Cipher cipher = Cipher.getInstance("AES/CBC/NoPadding");
        cipher.init(mode, new SecretKeySpec(key, "AES"), new IvParameterSpec(new byte[16]));
        ByteBuffer in = ByteBuffer.allocateDirect(RAW_BYTES);
        ByteBuffer out = ByteBuffer.allocateDirect(RAW_BYTES);
        return () -> cipher.update(in.clear(), out.clear());
    }

    private static Work cbcReinitPerSector(byte[] key) throws Exception {
        Cipher cipher = Cipher.getInstance("AES/CBC/NoPadding");
        SecretKeySpec spec = new SecretKeySpec(key, "AES");
        byte[] in = new byte[REQUEST];
        byte[] out = new byte[REQUEST];
        byte[] iv = new byte[16];
        return () -> {
            for (int at = 0; at < REQUEST; at += SECTOR) {
                iv[0] = (byte) at;
                cipher.init(Cipher.ENCRYPT_MODE, spec, new IvParameterSpec(iv));
                cipher.doFinal(in, at, SECTOR, out, at);
            }
            return REQUEST;
        };
    }

    private static Work sectorCipher(String spec, byte[] key, boolean encrypt) {
        SectorCipher cipher = SectorCipher.create(CryptSpec.parse(spec), key, SECTOR, false);
        ByteBuffer buffer = ByteBuffer.allocateDirect(REQUEST);
        long[] sector = {0};
        return () -> {
            if (encrypt) {
                cipher.encrypt(buffer, sector[0]);
            } else {
                cipher.decrypt(buffer, sector[0]);
            }
            sector[0] += REQUEST / SECTOR;
            return REQUEST;
        };
    }

    private static Work device(String spec, byte[] key, boolean write) {
        return through(new MemoryBlockDevice("mem", 32 * REQUEST, SECTOR), spec, key, write);
    }

    private static Work noCopyDevice(String spec, byte[] key, boolean write) {
        return through(new NoCopyDevice(32 * REQUEST), spec, key, write);
    }

    private static Work through(BlockDevice below, String spec, byte[] key, boolean write) {
        long size = below.size();
        CryptoBlockDevice device = new CryptoBlockDevice("bench", below,
                SectorCipher.create(CryptSpec.parse(spec), key, SECTOR, false), 0, 0, false);
        ByteBuffer buffer = ByteBuffer.allocateDirect(REQUEST);
        long[] offset = {0};
        return () -> {
            buffer.clear();
            if (write) {
                device.write(offset[0], buffer);
            } else {
                device.read(offset[0], buffer);
            }
            offset[0] = (offset[0] + REQUEST) % size;
            return REQUEST;
        };
    }

    /** A device that moves no bytes: reads leave the caller's buffer as it is, writes are dropped. Thread-safe. */
    private static final class NoCopyDevice implements BlockDevice {
        private final long size;
        private final IoStats stats = new IoStats("no-copy");

        NoCopyDevice(long size) {
            this.size = size;
        }

        @Override
        public String name() {
            return "no-copy";
        }

        @Override
        public long size() {
            return size;
        }

        @Override
        public int logicalBlockSize() {
            return SECTOR;
        }

        @Override
        public Geometry geometry() {
            return Geometry.simple(SECTOR);
        }

        @Override
        public void read(long offset, ByteBuffer dst) {
            dst.position(dst.limit());
        }

        @Override
        public void write(long offset, ByteBuffer src) {
            src.position(src.limit());
        }

        @Override
        public void flush() {
        }

        @Override
        public IoStats stats() {
            return stats;
        }

        @Override
        public void close() {
        }
    }
}
