package io.stripestack.crypto;

import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stripestack.blockdev.MemoryBlockDevice;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The I/O path allocates nothing once a thread is warm: measured with the JVM's per-thread allocation
 * counter over many reads and writes through the layer (below the parallel threshold, which is the
 * common request size; MemoryBlockDevice's own per-call duplicate() is excluded by measuring the cipher
 * alone, then the layer with a budget of that one small object per call).
 */
class AllocationFreeTest {
    private static final int CALLS = 400;

    @ParameterizedTest
    @ValueSource(strings = {"aes-xts-plain64", "aes-cbc-essiv:sha256", "aes-cbc-plain64"})
    void sectorCipherAllocatesNothingPerCall(String spec) {
        com.sun.management.ThreadMXBean threads = threadBean();
        try (SectorCipher cipher = SectorCipher.create(CryptSpec.parse(spec), new byte[spec.contains("xts") ? 64 : 32], 512, false)) {
            ByteBuffer direct = ByteBuffer.allocateDirect(16 * 1024);
            ByteBuffer heap = ByteBuffer.allocate(16 * 1024);
            for (int i = 0; i < CALLS; i++) { // warm-up: thread-locals, JIT
                cipher.encrypt(direct, i);
                cipher.decrypt(heap, i);
            }
            long before = threads.getThreadAllocatedBytes(Thread.currentThread().getId());
            for (int i = 0; i < CALLS; i++) {
                cipher.encrypt(direct, i);
                cipher.decrypt(heap, i);
            }
            long perCall = (threads.getThreadAllocatedBytes(Thread.currentThread().getId()) - before) / (2 * CALLS);
            assertTrue(perCall < 8, spec + ": " + perCall + " bytes allocated per call");
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"aes-xts-plain64", "aes-cbc-essiv:sha256"})
    void layerAllocatesAtMostTheMemoryDevicesViewPerCall(String spec) throws Exception {
        com.sun.management.ThreadMXBean threads = threadBean();
        try (CryptoBlockDevice crypt = new CryptoBlockDevice("c", new MemoryBlockDevice("mem", 4 * 1024 * 1024, 512),
                SectorCipher.create(CryptSpec.parse(spec), new byte[spec.contains("xts") ? 64 : 32], 512, false), 0, 0, false)) {
            ByteBuffer buf = ByteBuffer.allocateDirect(16 * 1024);
            for (int i = 0; i < CALLS; i++) {
                crypt.write((i % 64) * 16384L, buf.clear());
                crypt.read((i % 64) * 16384L, buf.clear());
            }
            long before = threads.getThreadAllocatedBytes(Thread.currentThread().getId());
            for (int i = 0; i < CALLS; i++) {
                crypt.write((i % 64) * 16384L, buf.clear());
                crypt.read((i % 64) * 16384L, buf.clear());
            }
            long perCall = (threads.getThreadAllocatedBytes(Thread.currentThread().getId()) - before) / (2 * CALLS);
            // MemoryBlockDevice makes one ByteBuffer view per call (about 64 bytes); the layer adds nothing
            assertTrue(perCall <= 160, spec + ": " + perCall + " bytes per call");
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"aes-xts-plain64", "aes-cbc-essiv:sha256"})
    void requestsSplitAcrossCoresAllocateNothingOnTheCallingThread(String spec) {
        com.sun.management.ThreadMXBean threads = threadBean();
        int length = 2 * ParallelCipher.PARALLEL_MIN_BYTES;
        try (SectorCipher cipher = SectorCipher.create(CryptSpec.parse(spec), new byte[spec.contains("xts") ? 64 : 32], 4096, false)) {
            ByteBuffer src = ByteBuffer.allocateDirect(length);
            ByteBuffer dst = ByteBuffer.allocateDirect(length);
            int calls = 60;
            for (int i = 0; i < calls; i++) {
                ParallelCipher.run(cipher, true, src, 0, dst, 0, length, 8L * i);
                ParallelCipher.run(cipher, false, dst, 0, dst, 0, length, 8L * i);
            }
            long before = threads.getThreadAllocatedBytes(Thread.currentThread().getId());
            for (int i = 0; i < calls; i++) {
                ParallelCipher.run(cipher, true, src, 0, dst, 0, length, 8L * i);
                ParallelCipher.run(cipher, false, dst, 0, dst, 0, length, 8L * i);
            }
            long perCall = (threads.getThreadAllocatedBytes(Thread.currentThread().getId()) - before) / (2 * calls);
            assertTrue(perCall < 8, spec + ": " + perCall + " bytes allocated per parallel call");
        }
    }

    private static com.sun.management.ThreadMXBean threadBean() {
        java.lang.management.ThreadMXBean bean = ManagementFactory.getThreadMXBean();
        Assumptions.assumeTrue(bean instanceof com.sun.management.ThreadMXBean, "JVM without per-thread allocation counters");
        com.sun.management.ThreadMXBean threads = (com.sun.management.ThreadMXBean) bean;
        Assumptions.assumeTrue(threads.isThreadAllocatedMemorySupported() && threads.isThreadAllocatedMemoryEnabled());
        return threads;
    }
}
