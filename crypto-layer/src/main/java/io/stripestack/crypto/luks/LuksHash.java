package io.stripestack.crypto.luks;

import java.security.GeneralSecurityException;
import java.util.Arrays;
import java.util.Locale;
import java.util.function.Supplier;
import javax.crypto.Mac;
import javax.crypto.ShortBufferException;
import javax.crypto.spec.SecretKeySpec;
import org.bouncycastle.crypto.Digest;
import org.bouncycastle.crypto.digests.RIPEMD160Digest;
import org.bouncycastle.crypto.digests.SHA1Digest;
import org.bouncycastle.crypto.digests.SHA256Digest;
import org.bouncycastle.crypto.digests.SHA384Digest;
import org.bouncycastle.crypto.digests.SHA512Digest;
import org.bouncycastle.crypto.macs.HMac;
import org.bouncycastle.crypto.params.KeyParameter;

/**
 * The hashes a LUKS header may name (LUKS1 {@code hash-spec}, LUKS2 {@code af.hash}, {@code kdf.hash},
 * {@code digests.hash}), under their cryptsetup names, and PBKDF2 over them.
 *
 * <p>PBKDF2 is computed here on an HMAC rather than with {@code javax.crypto}'s PBKDF2WithHmacSHA256 because
 * LUKS feeds it raw bytes (binary key files, the volume key itself for the digest), which the JDK's
 * char[]-based PBEKeySpec cannot represent. The HMAC is the JDK's where it has one (its SHA intrinsics make it
 * about 2.5 times faster than BouncyCastle's, which matters when a cryptsetup keyslot was tuned to 2 s of
 * OpenSSL), BouncyCastle's for RIPEMD-160. Stateless and thread-safe.
 */
public enum LuksHash {
    SHA1("sha1", "HmacSHA1", SHA1Digest::new),
    SHA256("sha256", "HmacSHA256", SHA256Digest::new),
    SHA384("sha384", "HmacSHA384", SHA384Digest::new),
    SHA512("sha512", "HmacSHA512", SHA512Digest::new),
    RIPEMD160("ripemd160", null, RIPEMD160Digest::new);

    private final String luksName;
    private final String jcaHmac;
    private final Supplier<Digest> factory;
    private final int length;

    LuksHash(String luksName, String jcaHmac, Supplier<Digest> factory) {
        this.luksName = luksName;
        this.jcaHmac = jcaHmac;
        this.factory = factory;
        this.length = factory.get().getDigestSize();
    }

    /** The name as LUKS headers and cryptsetup spell it, e.g. {@code sha256}. */
    public String luksName() {
        return luksName;
    }

    /** Digest length in bytes. */
    public int length() {
        return length;
    }

    Digest newDigest() {
        return factory.get();
    }

    /**
     * Looks a hash up by its LUKS name.
     *
     * @throws IllegalArgumentException naming the hash and the supported ones
     */
    public static LuksHash forName(String name) {
        String lower = name == null ? "" : name.trim().toLowerCase(Locale.ROOT);
        for (LuksHash hash : values()) {
            if (hash.luksName.equals(lower)) {
                return hash;
            }
        }
        throw new IllegalArgumentException("hash '" + name + "' is not supported; use sha1, sha256, sha384, sha512 or ripemd160");
    }

    /** PBKDF2-HMAC with this hash (RFC 8018 section 5.2), {@code length} bytes of output. */
    public byte[] pbkdf2(byte[] password, byte[] salt, int iterations, int length) {
        if (iterations < 1) {
            throw new IllegalArgumentException("PBKDF2 needs at least one iteration, got " + iterations);
        }
        Hmac mac = newHmac(password);
        int h = mac.length();
        byte[] out = new byte[length];
        byte[] u = new byte[h];
        byte[] t = new byte[h];
        byte[] blockIndex = new byte[4];
        try {
            for (int block = 1, offset = 0; offset < length; block++, offset += h) {
                blockIndex[0] = (byte) (block >>> 24);
                blockIndex[1] = (byte) (block >>> 16);
                blockIndex[2] = (byte) (block >>> 8);
                blockIndex[3] = (byte) block;
                mac.update(salt, salt.length);
                mac.update(blockIndex, 4);
                mac.doFinal(u);
                System.arraycopy(u, 0, t, 0, h);
                for (int i = 1; i < iterations; i++) {
                    mac.update(u, h);
                    mac.doFinal(u);
                    for (int j = 0; j < h; j++) {
                        t[j] ^= u[j];
                    }
                }
                System.arraycopy(t, 0, out, offset, Math.min(h, length - offset));
            }
            return out;
        } finally {
            Arrays.fill(u, (byte) 0);
            Arrays.fill(t, (byte) 0);
        }
    }

    /** The few HMAC operations PBKDF2 needs, over the JDK's Mac or BouncyCastle's HMac. */
    private interface Hmac {
        int length();

        void update(byte[] data, int length);

        void doFinal(byte[] out);
    }

    private Hmac newHmac(byte[] password) {
        // HMAC pads its key with zeros to the block size, so an empty key equals a single zero byte; the JDK's
        // SecretKeySpec refuses empty keys.
        byte[] key = password.length == 0 ? new byte[1] : password;
        if (jcaHmac == null) {
            HMac mac = new HMac(newDigest());
            mac.init(new KeyParameter(key));
            return new Hmac() {
                @Override
                public int length() {
                    return mac.getMacSize();
                }

                @Override
                public void update(byte[] data, int n) {
                    mac.update(data, 0, n);
                }

                @Override
                public void doFinal(byte[] out) {
                    mac.doFinal(out, 0);
                }
            };
        }
        try {
            Mac mac = Mac.getInstance(jcaHmac);
            mac.init(new SecretKeySpec(key, jcaHmac));
            return new Hmac() {
                @Override
                public int length() {
                    return mac.getMacLength();
                }

                @Override
                public void update(byte[] data, int n) {
                    mac.update(data, 0, n);
                }

                @Override
                public void doFinal(byte[] out) {
                    try {
                        mac.doFinal(out, 0);
                    } catch (ShortBufferException e) {
                        throw new IllegalStateException("HMAC output buffer of " + out.length + " bytes too small", e);
                    }
                }
            };
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("this JVM lacks " + jcaHmac + ", which every Java 17 runtime provides", e);
        }
    }
}
