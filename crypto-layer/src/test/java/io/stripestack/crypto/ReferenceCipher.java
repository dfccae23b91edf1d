package io.stripestack.crypto;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import javax.crypto.Cipher;
import javax.crypto.spec.SecretKeySpec;
import org.junit.jupiter.api.Assumptions;

/**
 * The reference the layer is judged by: dm-crypt IVs computed here independently of the layer's code, and
 * sectors encrypted by OpenSSL outside the JVM. CBC goes through {@code openssl enc -nopad}; XTS through
 * OpenSSL's AES-XTS via Python's {@code cryptography} package, because {@code openssl enc} 3.0 refuses XTS
 * ("enc XTS ciphers not supported").
 *
 * <p>Missing tools fail the test when {@code CI=true}, and skip it otherwise.
 */
final class ReferenceCipher {
    private ReferenceCipher() {
    }

    /** The IV dm-crypt uses for a sector whose IV number (after iv_large_sectors division) is {@code ivSector}. */
    static byte[] dmCryptIv(CryptSpec spec, byte[] volumeKey, long ivSector) throws GeneralSecurityException {
        ByteBuffer iv = ByteBuffer.allocate(16);
        switch (spec.ivMode()) {
            case PLAIN -> iv.order(ByteOrder.LITTLE_ENDIAN).putInt(0, (int) ivSector);
            case PLAIN64 -> iv.order(ByteOrder.LITTLE_ENDIAN).putLong(0, ivSector);
            case PLAIN64BE -> iv.order(ByteOrder.BIG_ENDIAN).putLong(8, ivSector);
            case ESSIV -> {
                iv.order(ByteOrder.LITTLE_ENDIAN).putLong(0, ivSector);
                byte[] salt = MessageDigest.getInstance(spec.ivHash()).digest(volumeKey);
                Cipher ecb = Cipher.getInstance("AES/ECB/NoPadding");
                ecb.init(Cipher.ENCRYPT_MODE, new SecretKeySpec(salt, "AES"));
                return ecb.doFinal(iv.array());
            }
        }
        return iv.array();
    }

    /** Encrypts each {@code (key, iv, sector)} with OpenSSL; returns the ciphertexts in order. */
    static List<byte[]> encrypt(CryptSpec spec, byte[] key, List<byte[]> ivs, List<byte[]> sectors) throws Exception {
        return spec.mode() == CryptSpec.Mode.CBC ? opensslCbc(key, ivs, sectors) : pythonXts(key, ivs, sectors);
    }

    private static List<byte[]> opensslCbc(byte[] key, List<byte[]> ivs, List<byte[]> sectors) throws Exception {
        requireTool("openssl", "version");
        List<byte[]> out = new ArrayList<>();
        for (int i = 0; i < sectors.size(); i++) {
            out.add(run(sectors.get(i), "openssl", "enc", "-aes-" + (key.length * 8) + "-cbc", "-nopad",
                    "-K", Hex.encode(key), "-iv", Hex.encode(ivs.get(i))));
        }
        return out;
    }

    private static final String PYTHON_XTS = String.join("\n",
            "import sys",
            "from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes",
            "for line in sys.stdin:",
            "    k, iv, d = (bytes.fromhex(x) for x in line.split())",
            "    e = Cipher(algorithms.AES(k), modes.XTS(iv)).encryptor()",
            "    print((e.update(d) + e.finalize()).hex())");

    /** Debian's interpreter, where .ci/run installs python3-cryptography; another python3 on PATH may lack it. */
    private static final String PYTHON = java.nio.file.Files.isExecutable(java.nio.file.Path.of("/usr/bin/python3"))
            ? "/usr/bin/python3" : "python3";

    private static List<byte[]> pythonXts(byte[] key, List<byte[]> ivs, List<byte[]> sectors) throws Exception {
        requireTool(PYTHON, "-c", "import cryptography.hazmat.primitives.ciphers");
        StringBuilder input = new StringBuilder();
        for (int i = 0; i < sectors.size(); i++) {
            input.append(Hex.encode(key)).append(' ').append(Hex.encode(ivs.get(i))).append(' ')
                    .append(Hex.encode(sectors.get(i))).append('\n');
        }
        String output = new String(run(input.toString().getBytes(StandardCharsets.US_ASCII), PYTHON, "-c", PYTHON_XTS),
                StandardCharsets.US_ASCII);
        List<byte[]> out = new ArrayList<>();
        for (String line : output.split("\n")) {
            if (!line.isBlank()) {
                out.add(Hex.decode(line.trim()));
            }
        }
        assertEquals(sectors.size(), out.size(), "python3 XTS output lines");
        return out;
    }

    /** Checks that a tool runs: fails under CI=true when it does not, skips the test otherwise. */
    static void requireTool(String... probe) {
        String why;
        try {
            Process p = new ProcessBuilder(probe).redirectErrorStream(true).start();
            p.getInputStream().readAllBytes();
            if (p.waitFor(30, TimeUnit.SECONDS) && p.exitValue() == 0) {
                return;
            }
            why = String.join(" ", probe) + " exited with " + p.exitValue();
        } catch (IOException | InterruptedException e) {
            why = String.join(" ", probe) + ": " + e.getMessage();
        }
        if ("true".equals(System.getenv("CI"))) {
            fail("required tool missing under CI: " + why + " (install openssl and python3-cryptography)");
        }
        Assumptions.abort("skipped, tool missing: " + why);
    }

    private static byte[] run(byte[] stdin, String... command) throws Exception {
        Process p = new ProcessBuilder(command).start();
        Thread feeder = new Thread(() -> {
            try (OutputStream in = p.getOutputStream()) {
                in.write(stdin);
            } catch (IOException ignored) {
                // the exit status below reports the failure
            }
        });
        feeder.start();
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (InputStream o = p.getInputStream()) {
            o.transferTo(out);
        }
        String err = new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
        feeder.join();
        if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
            fail(command[0] + " failed: " + err);
        }
        return out.toByteArray();
    }
}
