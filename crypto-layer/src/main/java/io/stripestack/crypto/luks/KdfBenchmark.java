package io.stripestack.crypto.luks;

import java.time.Duration;

/**
 * Picks a keyslot's KDF cost from a short measurement on this machine, as {@code cryptsetup luksFormat} does:
 * the cost that makes one unlock take about {@link #DEFAULT_TARGET} (cryptsetup's {@code --iter-time 2000}).
 * The measurement itself takes a few hundred milliseconds; tests pass explicit tiny costs instead.
 *
 * <p>Stateless and thread-safe; the measured passphrase and salt are dummies.
 */
public final class KdfBenchmark {
    /** cryptsetup's default unlock time per keyslot. */
    public static final Duration DEFAULT_TARGET = Duration.ofSeconds(2);
    /** cryptsetup's floor for PBKDF2 keyslot iterations. */
    public static final int MIN_PBKDF2_ITERATIONS = 1000;
    /** cryptsetup's floor for Argon2 passes. */
    public static final int MIN_ARGON2_TIME = 4;
    /** cryptsetup's default Argon2 memory ceiling, 1 GiB. */
    public static final int DEFAULT_MAX_ARGON2_MEMORY_KIB = 1024 * 1024;

    private static final long MEASURE_AT_LEAST_NANOS = Duration.ofMillis(60).toNanos();
    private static final int ARGON2_PROBE_MEMORY_KIB = 16 * 1024;

    private KdfBenchmark() {
    }

    /** PBKDF2 iterations taking about {@code target} for a {@code keyLength}-byte output, at least 1000. */
    public static Kdf.Pbkdf2 pbkdf2(LuksHash hash, Duration target, int keyLength) {
        byte[] password = new byte[32];
        byte[] salt = new byte[Kdf.SALT_BYTES];
        // Grow the probe until one run is long enough to time (this also lets the JIT compile the HMAC loop),
        // then keep the fastest of three runs: interference from other work only ever makes a run slower.
        int iterations = MIN_PBKDF2_ITERATIONS;
        while (timePbkdf2(hash, password, salt, iterations, keyLength) < MEASURE_AT_LEAST_NANOS
                && iterations < Integer.MAX_VALUE / 4) {
            iterations *= 2;
        }
        long best = Long.MAX_VALUE;
        for (int run = 0; run < 3; run++) {
            best = Math.min(best, timePbkdf2(hash, password, salt, iterations, keyLength));
        }
        double perIteration = (double) best / iterations;
        long wanted = (long) (target.toNanos() / perIteration);
        return new Kdf.Pbkdf2(hash, (int) Math.max(MIN_PBKDF2_ITERATIONS, Math.min(Integer.MAX_VALUE, wanted)));
    }

    private static long timePbkdf2(LuksHash hash, byte[] password, byte[] salt, int iterations, int keyLength) {
        long start = System.nanoTime();
        hash.pbkdf2(password, salt, iterations, keyLength);
        return System.nanoTime() - start;
    }

    /**
     * Argon2id cost taking about {@code target}: the most memory up to {@code maxMemoryKiB} with at least
     * {@link #MIN_ARGON2_TIME} passes, more passes once the memory ceiling is reached (cryptsetup's rule).
     * Argon2 runs on the Java heap, so the ceiling is also kept below a quarter of the maximum heap.
     */
    public static Kdf.Argon2 argon2id(Duration target, int maxMemoryKiB, int parallelism) {
        long heapKiB = Runtime.getRuntime().maxMemory() / 4 / 1024;
        int ceiling = (int) Math.max(8L * parallelism, Math.min(maxMemoryKiB, heapKiB));
        Kdf.Argon2 probe = Kdf.Argon2.id(1, Math.max(ARGON2_PROBE_MEMORY_KIB, 8 * parallelism), parallelism);
        byte[] password = new byte[32];
        byte[] salt = new byte[Kdf.SALT_BYTES];
        long best = Long.MAX_VALUE;
        for (int run = 0; run < 2; run++) { // the first run also pays for JIT warm-up
            long start = System.nanoTime();
            probe.derive(password, salt, 64);
            best = Math.min(best, System.nanoTime() - start);
        }
        double nanosPerKiBPass = (double) best / probe.memoryKiB();
        double budgetKiBPasses = target.toNanos() / nanosPerKiBPass;
        long time = (long) (budgetKiBPasses / ceiling);
        if (time >= MIN_ARGON2_TIME) {
            return Kdf.Argon2.id((int) Math.min(time, Integer.MAX_VALUE), ceiling, parallelism);
        }
        long memory = (long) (budgetKiBPasses / MIN_ARGON2_TIME);
        return Kdf.Argon2.id(MIN_ARGON2_TIME, (int) Math.max(32L * parallelism, Math.min(memory, ceiling)), parallelism);
    }

    /** {@link #argon2id(Duration, int, int)} with cryptsetup's defaults: 2 s, 1 GiB, up to 4 threads. */
    public static Kdf.Argon2 argon2idDefault() {
        return argon2id(DEFAULT_TARGET, DEFAULT_MAX_ARGON2_MEMORY_KIB,
                Math.min(4, Runtime.getRuntime().availableProcessors()));
    }
}
