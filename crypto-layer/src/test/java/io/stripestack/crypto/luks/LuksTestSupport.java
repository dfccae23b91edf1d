package io.stripestack.crypto.luks;

import static org.junit.jupiter.api.Assertions.fail;

import io.stripestack.blockdev.BlockDevice;
import io.stripestack.blockdev.ForwardingBlockDevice;
import io.stripestack.blockdev.Geometry;
import io.stripestack.blockdev.IoStats;
import io.stripestack.blockdev.MemoryBlockDevice;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;

/** Shared helpers: cheap KDF costs, devices, byte flips and running cryptsetup. */
final class LuksTestSupport {
    static final Kdf.Pbkdf2 CHEAP_PBKDF2 = new Kdf.Pbkdf2(LuksHash.SHA256, 1000);
    static final Kdf.Argon2 CHEAP_ARGON2 = Kdf.Argon2.id(4, 32, 1);

    private LuksTestSupport() {
    }

    /** Writes a passphrase or key file as a user would keep it: readable by its owner only. */
    static java.nio.file.Path writeSecret(java.nio.file.Path file, byte[] secret) throws java.io.IOException {
        io.stripestack.crypto.PlainModeKeys.createKeyFile(file, secret);
        return file;
    }

    static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    static MemoryBlockDevice memory(int mib) {
        return new MemoryBlockDevice("mem", mib << 20, 512);
    }

    static LuksFormatOptions cheap(LuksFormatOptions options) {
        return options.withKdf(options.version() == 1 ? new Kdf.Pbkdf2(options.hash(), 1000) : CHEAP_ARGON2)
                .withDigestIterations(1000);
    }

    /** XORs {@code mask} into the byte at {@code offset}. */
    static void flip(BlockDevice device, long offset, int mask) throws IOException {
        byte[] b = LuksIo.read(device, offset, 1);
        b[0] ^= (byte) mask;
        LuksIo.write(device, offset, b);
    }

    /** A memory device reporting a chosen optimal I/O size (a RAID-5 stripe). */
    static BlockDevice withOptimalIo(MemoryBlockDevice inner, int chunk, int optimal) {
        return new ForwardingBlockDevice(inner) {
            @Override public Geometry geometry() { return new Geometry(chunk, optimal, 0, 0); }
        };
    }

    /**
     * Replaces the JSON text of both copies of the LUKS2 header on {@code device} (hdr_size read from the
     * binary header) and recomputes their SHA-256 checksums, as cryptsetup would write them.
     */
    static void editLuks2Json(BlockDevice device, java.util.function.UnaryOperator<String> edit) throws IOException {
        ByteBuffer binary = ByteBuffer.allocate(512);
        device.read(0, binary);
        int hdrSize = Math.toIntExact(binary.getLong(8));
        for (long copyOffset : new long[] {0, hdrSize}) {
            ByteBuffer buffer = ByteBuffer.allocate(hdrSize);
            device.read(copyOffset, buffer);
            byte[] copy = buffer.array();
            int end = 4096;
            while (copy[end] != 0) {
                end++;
            }
            String json = new String(copy, 4096, end - 4096, StandardCharsets.UTF_8);
            byte[] edited = edit.apply(json).getBytes(StandardCharsets.UTF_8);
            java.util.Arrays.fill(copy, 4096, hdrSize, (byte) 0);
            System.arraycopy(edited, 0, copy, 4096, edited.length);
            java.util.Arrays.fill(copy, 448, 512, (byte) 0);
            try {
                byte[] sum = java.security.MessageDigest.getInstance("SHA-256").digest(copy);
                System.arraycopy(sum, 0, copy, 448, sum.length);
            } catch (java.security.NoSuchAlgorithmException e) {
                throw new AssertionError(e);
            }
            device.write(copyOffset, ByteBuffer.wrap(copy));
        }
        device.flush();
    }

    /** Adds {@code flags} to config.flags, as {@code cryptsetup open --persistent --allow-discards} does. */
    static void addPersistentFlags(BlockDevice device, String... flags) throws IOException {
        StringBuilder list = new StringBuilder();
        for (String f : flags) {
            list.append(list.length() == 0 ? "" : ",").append('"').append(f).append('"');
        }
        editLuks2Json(device, json -> {
            String edited = json.replaceFirst("(\"keyslots_size\":\"\\d+\")", "$1,\"flags\":[" + list + "]");
            if (edited.equals(json)) {
                throw new AssertionError("no config.keyslots_size in " + json);
            }
            return edited;
        });
    }

    // ---- external tools -------------------------------------------------------------------------------

    /** Skips the test if {@code tool} is missing, or fails it when running under CI=true. */
    static void requireTool(String tool) {
        boolean present;
        try {
            present = new ProcessBuilder("sh", "-c", "command -v " + tool).start().waitFor() == 0;
        } catch (IOException | InterruptedException e) {
            present = false;
        }
        if (!present) {
            if ("true".equals(System.getenv("CI"))) {
                fail(tool + " is required under CI=true but is not installed (apt-get install cryptsetup-bin openssl)");
            }
            Assumptions.abort(tool + " is not installed");
        }
    }

    record Result(int exitCode, String stdout, String stderr) {
    }

    static Result run(String... command) throws IOException, InterruptedException {
        Process process = new ProcessBuilder(command).redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")))
                .start();
        byte[] out = process.getInputStream().readAllBytes();
        byte[] err = process.getErrorStream().readAllBytes();
        if (!process.waitFor(60, TimeUnit.SECONDS)) {
            process.destroyForcibly();
            fail(String.join(" ", command) + " timed out");
        }
        return new Result(process.exitValue(), new String(out, StandardCharsets.UTF_8), new String(err, StandardCharsets.UTF_8));
    }

    /** Runs a command that must succeed and returns its standard output. */
    static String runOk(String... command) throws IOException, InterruptedException {
        Result r = run(command);
        if (r.exitCode() != 0) {
            fail(String.join(" ", command) + " exited " + r.exitCode() + ": " + r.stderr() + r.stdout());
        }
        return r.stdout();
    }

    static List<String> cmd(String... parts) {
        return new ArrayList<>(List.of(parts));
    }

    /** The hex after "MK dump:" in {@code cryptsetup luksDump --dump-volume-key} output. */
    static byte[] dumpedVolumeKey(String dump) {
        int at = dump.indexOf("MK dump:");
        if (at < 0) {
            fail("no MK dump in:\n" + dump);
        }
        String hex = dump.substring(at + "MK dump:".length()).replaceAll("[^0-9a-fA-F]", "");
        byte[] key = new byte[hex.length() / 2];
        for (int i = 0; i < key.length; i++) {
            key[i] = (byte) Integer.parseInt(hex.substring(2 * i, 2 * i + 2), 16);
        }
        return key;
    }
}
