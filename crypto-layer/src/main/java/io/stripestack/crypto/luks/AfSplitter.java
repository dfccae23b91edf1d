package io.stripestack.crypto.luks;

import java.security.SecureRandom;
import java.util.Arrays;
import org.bouncycastle.crypto.Digest;

/**
 * The LUKS anti-forensic information splitter (LUKS1 on-disk format, section 2.4; LUKS2 keyslots with
 * {@code af.type = luks1}). A key of {@code n} bytes becomes {@code stripes} blocks of {@code n} bytes: all
 * but the last are random, and the last is the key XOR the running "diffused" XOR of the others, so losing
 * any one byte of the material loses the key.
 *
 * <p>Diffusion hashes the block in digest-sized pieces: piece {@code i} becomes the first bytes of
 * {@code H(be32(i) || piece)} (the last piece may be shorter than the digest, and only its own bytes are
 * hashed). Stateless; each call works on its own buffers and zeroes its intermediate block.
 */
final class AfSplitter {
    /** The stripe count cryptsetup always uses. */
    static final int LUKS_STRIPES = 4000;

    private AfSplitter() {
    }

    /** The number of material bytes for a key of {@code keyLength} bytes. */
    static long splitLength(int keyLength, int stripes) {
        return (long) keyLength * stripes;
    }

    /** Splits {@code key} into {@code stripes} blocks written to {@code out[0, keyLength * stripes)}. */
    static void split(byte[] key, int stripes, LuksHash hash, SecureRandom random, byte[] out) {
        int blockSize = key.length;
        checkLength(out, blockSize, stripes);
        byte[] running = new byte[blockSize];
        byte[] randomBlock = new byte[blockSize];
        Digest digest = hash.newDigest();
        try {
            for (int stripe = 0; stripe < stripes - 1; stripe++) {
                random.nextBytes(randomBlock);
                System.arraycopy(randomBlock, 0, out, stripe * blockSize, blockSize);
                xorInto(running, randomBlock, 0, blockSize);
                diffuse(running, digest);
            }
            int last = (stripes - 1) * blockSize;
            for (int i = 0; i < blockSize; i++) {
                out[last + i] = (byte) (running[i] ^ key[i]);
            }
        } finally {
            Arrays.fill(running, (byte) 0);
            Arrays.fill(randomBlock, (byte) 0);
        }
    }

    /** Recovers the {@code keyLength}-byte key from {@code material[0, keyLength * stripes)}. */
    static byte[] merge(byte[] material, int keyLength, int stripes, LuksHash hash) {
        checkLength(material, keyLength, stripes);
        byte[] running = new byte[keyLength];
        Digest digest = hash.newDigest();
        for (int stripe = 0; stripe < stripes - 1; stripe++) {
            xorInto(running, material, stripe * keyLength, keyLength);
            diffuse(running, digest);
        }
        xorInto(running, material, (stripes - 1) * keyLength, keyLength);
        return running;
    }

    private static void checkLength(byte[] material, int keyLength, int stripes) {
        if (keyLength < 1 || stripes < 1 || material.length < splitLength(keyLength, stripes)) {
            throw new IllegalArgumentException("AF material of " + material.length + " bytes is too short for "
                    + stripes + " stripes of " + keyLength + " bytes");
        }
    }

    private static void xorInto(byte[] target, byte[] source, int sourceOffset, int length) {
        for (int i = 0; i < length; i++) {
            target[i] ^= source[sourceOffset + i];
        }
    }

    private static void diffuse(byte[] block, Digest digest) {
        int digestSize = digest.getDigestSize();
        byte[] hashed = new byte[digestSize];
        byte[] counter = new byte[4];
        for (int offset = 0, piece = 0; offset < block.length; offset += digestSize, piece++) {
            int length = Math.min(digestSize, block.length - offset);
            counter[0] = (byte) (piece >>> 24);
            counter[1] = (byte) (piece >>> 16);
            counter[2] = (byte) (piece >>> 8);
            counter[3] = (byte) piece;
            digest.update(counter, 0, 4);
            digest.update(block, offset, length);
            digest.doFinal(hashed, 0);
            System.arraycopy(hashed, 0, block, offset, length);
        }
        Arrays.fill(hashed, (byte) 0);
    }
}
