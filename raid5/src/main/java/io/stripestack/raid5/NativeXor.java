package io.stripestack.raid5;

import java.io.IOException;
import java.io.InputStream;
import java.net.URL;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Locale;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The native XOR passes of {@code src/main/c/xor.c}: the same fixed-arity passes as the Java routines,
 * compiled by gcc with vector instructions (the x86-64 baseline's SSE2, and AVX2 where the CPU has it),
 * which JDK 17's JIT never emits for loops over native memory. The build compiles the library into the jar
 * when gcc is present (profile {@code native-xor} of raid5/pom.xml); without it, or on another OS or
 * architecture, {@link #AVAILABLE} is false and parity uses the Java routines. Whether a native variant is
 * used at all is decided by measurement ({@link Xor#best()}).
 *
 * <p>Every address must be that of a direct buffer's bytes, checked against its limit by the caller, and
 * kept reachable until the call returns. Stateless and thread-safe once loaded (class initialisation).
 */
final class NativeXor {
    private static final Logger LOG = LoggerFactory.getLogger(NativeXor.class);
    /** Where the build puts the library, next to this class. */
    static final String RESOURCE = "native/linux-amd64/libstripestack-xor.so";

    /** Whether the library is loaded. */
    static final boolean AVAILABLE;
    /** Whether this CPU runs the AVX2 variant (asked of the CPU by the library). */
    static final boolean AVX2;
    /** Why the library is not loaded, or null. */
    static final String UNAVAILABLE_REASON;

    static {
        String reason = load();
        AVAILABLE = reason == null;
        AVX2 = AVAILABLE && hasAvx2() != 0;
        UNAVAILABLE_REASON = reason;
        if (reason != null) {
            LOG.debug("xor: no native routines: {}", reason);
        }
    }

    private NativeXor() {
    }

    /** Loads the library from the class path; returns null on success, else why not. */
    private static String load() {
        String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
        String arch = System.getProperty("os.arch", "");
        if (!os.equals("linux") || !arch.equals("amd64")) {
            return "built for linux-amd64 only, this is " + os + "-" + arch;
        }
        URL url = NativeXor.class.getResource(RESOURCE);
        if (url == null) {
            return "the jar has no " + RESOURCE + " (built without gcc: install gcc and rebuild)";
        }
        Path copy = null;
        try {
            // A library inside a jar cannot be mapped: copy it out, load it, and unlink it (the mapping stays).
            copy = Files.createTempFile("stripestack-xor-", ".so");
            try (InputStream in = url.openStream()) {
                Files.copy(in, copy, StandardCopyOption.REPLACE_EXISTING);
            }
            System.load(copy.toAbsolutePath().toString());
            return null;
        } catch (IOException | UnsatisfiedLinkError | SecurityException e) {
            return "loading " + RESOURCE + " failed: " + e;
        } finally {
            if (copy != null) {
                try {
                    Files.deleteIfExists(copy);
                } catch (IOException e) {
                    LOG.debug("xor: could not remove the temporary copy {}: {}", copy, e.toString());
                }
            }
        }
    }

    static native int hasAvx2();

    /** {@code d ^= a} over {@code length} bytes (a multiple of 8). */
    static native void pass1(int avx2, long d, long a, int length);

    static native void pass2(int avx2, long d, long a, long b, int length);

    static native void pass3(int avx2, long d, long a, long b, long c, int length);

    static native void pass4(int avx2, long d, long a, long b, long c, long e, int length);
}
