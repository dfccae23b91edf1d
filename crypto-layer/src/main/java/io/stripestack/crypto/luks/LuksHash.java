package io.stripestack.crypto.luks;

import java.util.Locale;
import java.util.function.Supplier;
import org.bouncycastle.crypto.Digest;
import org.bouncycastle.crypto.digests.RIPEMD160Digest;
import org.bouncycastle.crypto.digests.SHA1Digest;
import org.bouncycastle.crypto.digests.SHA256Digest;
import org.bouncycastle.crypto.digests.SHA384Digest;
import org.bouncycastle.crypto.digests.SHA512Digest;
import org.bouncycastle.crypto.generators.PKCS5S2ParametersGenerator;
import org.bouncycastle.crypto.params.KeyParameter;

/**
 * The hashes a LUKS header may name (LUKS1 {@code hash-spec}, LUKS2 {@code af.hash}, {@code kdf.hash},
 * {@code digests.hash}), under their cryptsetup names.
 *
 * <p>PBKDF2 runs on BouncyCastle rather than {@code javax.crypto}'s PBKDF2WithHmacSHA256 because LUKS feeds
 * it raw bytes (binary key files, the volume key itself for the digest), which the JDK's char[]-based
 * PBEKeySpec cannot represent. Stateless and thread-safe.
 */
public enum LuksHash {
    SHA1("sha1", SHA1Digest::new),
    SHA256("sha256", SHA256Digest::new),
    SHA384("sha384", SHA384Digest::new),
    SHA512("sha512", SHA512Digest::new),
    RIPEMD160("ripemd160", RIPEMD160Digest::new);

    private final String luksName;
    private final Supplier<Digest> factory;
    private final int length;

    LuksHash(String luksName, Supplier<Digest> factory) {
        this.luksName = luksName;
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

    /** PBKDF2-HMAC with this hash (RFC 8018), {@code length} bytes of output. */
    public byte[] pbkdf2(byte[] password, byte[] salt, int iterations, int length) {
        if (iterations < 1) {
            throw new IllegalArgumentException("PBKDF2 needs at least one iteration, got " + iterations);
        }
        PKCS5S2ParametersGenerator generator = new PKCS5S2ParametersGenerator(newDigest());
        generator.init(password, salt, iterations);
        KeyParameter key = (KeyParameter) generator.generateDerivedParameters(length * 8);
        return key.getKey();
    }
}
