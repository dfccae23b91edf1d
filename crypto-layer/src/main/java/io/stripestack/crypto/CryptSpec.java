package io.stripestack.crypto;

import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Locale;

/**
 * A dm-crypt cipher specification, {@code cipher-mode-ivmode[:ivopts]} as in a dm-crypt table or
 * {@code cryptsetup --cipher}: {@code aes-cbc-essiv:sha256}, {@code aes-cbc-plain64}, {@code aes-cbc-plain},
 * {@code aes-cbc-plain64be}, {@code aes-xts-plain64}. Only AES is supported; the IV generator is
 * independent of the mode, so e.g. {@code aes-xts-essiv:sha256} is accepted as dm-crypt accepts it.
 *
 * <p>Immutable and thread-safe.
 *
 * @param mode   how sectors are chained
 * @param ivMode how a sector number becomes the 16-byte IV (for XTS: the tweak before encryption)
 * @param ivHash the ESSIV hash (a JCA digest name such as {@code SHA-256}), null for other IV modes
 */
public record CryptSpec(Mode mode, IvMode ivMode, String ivHash) {

    /** Block chaining of a sector. */
    public enum Mode {
        CBC, XTS;

        String specName() {
            return name().toLowerCase(Locale.ROOT);
        }
    }

    /** dm-crypt IV generators (drivers/md/dm-crypt.c). */
    public enum IvMode {
        /** 32-bit little-endian sector number (wraps after 2 TiB of 512-byte sectors). */
        PLAIN,
        /** 64-bit little-endian sector number. */
        PLAIN64,
        /** 64-bit big-endian sector number in the IV's last 8 bytes. */
        PLAIN64BE,
        /** The plain64 IV encrypted with AES under the hash of the volume key. */
        ESSIV;

        String specName() {
            return name().toLowerCase(Locale.ROOT);
        }
    }

    public CryptSpec {
        if (mode == null || ivMode == null) {
            throw new IllegalArgumentException("mode and ivMode are required");
        }
        if ((ivMode == IvMode.ESSIV) != (ivHash != null)) {
            throw new IllegalArgumentException("an ESSIV hash is given exactly when the IV mode is essiv");
        }
    }

    /** cryptsetup's plain-mode default, {@code aes-cbc-essiv:sha256}. */
    public static final CryptSpec PLAIN_DEFAULT = new CryptSpec(Mode.CBC, IvMode.ESSIV, "SHA-256");

    /** LUKS2's default, {@code aes-xts-plain64}. */
    public static final CryptSpec LUKS2_DEFAULT = new CryptSpec(Mode.XTS, IvMode.PLAIN64, null);

    /**
     * Parses {@code cipher-mode-ivmode[:ivopts]}, e.g. {@code aes-xts-plain64} or {@code aes-cbc-essiv:sha256}.
     * Case-insensitive.
     *
     * @throws IllegalArgumentException naming the spec and what is supported
     */
    public static CryptSpec parse(String spec) {
        if (spec == null) {
            throw new IllegalArgumentException("cipher spec is missing; use e.g. aes-xts-plain64 or aes-cbc-essiv:sha256");
        }
        String lower = spec.trim().toLowerCase(Locale.ROOT);
        String[] parts = lower.split("-", 3);
        if (parts.length != 3) {
            throw unsupported(spec, "expected cipher-mode-ivmode[:ivopts]");
        }
        if (!parts[0].equals("aes")) {
            throw unsupported(spec, "cipher '" + parts[0] + "' is not supported (only aes)");
        }
        Mode mode = switch (parts[1]) {
            case "cbc" -> Mode.CBC;
            case "xts" -> Mode.XTS;
            default -> throw unsupported(spec, "mode '" + parts[1] + "' is not supported (cbc or xts)");
        };
        String iv = parts[2];
        String ivOpts = null;
        int colon = iv.indexOf(':');
        if (colon >= 0) {
            ivOpts = iv.substring(colon + 1);
            iv = iv.substring(0, colon);
        }
        IvMode ivMode = switch (iv) {
            case "plain" -> IvMode.PLAIN;
            case "plain64" -> IvMode.PLAIN64;
            case "plain64be" -> IvMode.PLAIN64BE;
            case "essiv" -> IvMode.ESSIV;
            default -> throw unsupported(spec, "IV mode '" + iv + "' is not supported (plain, plain64, plain64be, essiv:HASH)");
        };
        String hash = null;
        if (ivMode == IvMode.ESSIV) {
            if (ivOpts == null || ivOpts.isEmpty()) {
                throw unsupported(spec, "essiv needs a hash, e.g. essiv:sha256");
            }
            hash = jcaDigestName(ivOpts);
            int digestBytes = digestLength(hash, spec);
            if (digestBytes != 16 && digestBytes != 24 && digestBytes != 32) {
                throw unsupported(spec, "the essiv hash must yield an AES key (16, 24 or 32 bytes), "
                        + ivOpts + " yields " + digestBytes + "; use essiv:sha256");
            }
        } else if (ivOpts != null) {
            throw unsupported(spec, "IV mode '" + iv + "' takes no options");
        }
        return new CryptSpec(mode, ivMode, hash);
    }

    /**
     * Checks a volume key length for this spec: 16/24/32 bytes for CBC, 32/48/64 for XTS (two AES keys).
     *
     * @throws IllegalArgumentException naming the spec and the valid lengths (never the key)
     */
    public void checkKeyLength(int keyBytes) {
        boolean ok = mode == Mode.XTS
                ? keyBytes == 32 || keyBytes == 48 || keyBytes == 64
                : keyBytes == 16 || keyBytes == 24 || keyBytes == 32;
        if (!ok) {
            throw new IllegalArgumentException(this + ": a " + (keyBytes * 8) + "-bit key is invalid; use "
                    + (mode == Mode.XTS ? "256 or 512 bits (--key-size 512)" : "128 or 256 bits (--key-size 256)"));
        }
    }

    /** The dm-crypt form, e.g. {@code aes-cbc-essiv:sha256}. */
    @Override
    public String toString() {
        String base = "aes-" + mode.specName() + "-" + ivMode.specName();
        return ivHash == null ? base : base + ":" + dmCryptDigestName(ivHash);
    }

    /** Maps kernel/cryptsetup hash names (sha256, sha1, md5...) to JCA names (SHA-256, SHA-1, MD5). */
    static String jcaDigestName(String name) {
        String lower = name.toLowerCase(Locale.ROOT);
        if (lower.startsWith("sha") && !lower.startsWith("sha-") && lower.length() > 3
                && Character.isDigit(lower.charAt(3))) {
            String bits = lower.substring(3);
            return bits.equals("1") ? "SHA-1" : "SHA-" + bits;
        }
        return name.toUpperCase(Locale.ROOT);
    }

    private static String dmCryptDigestName(String jcaName) {
        return jcaName.toLowerCase(Locale.ROOT).replace("-", "");
    }

    private static int digestLength(String jcaName, String spec) {
        try {
            return MessageDigest.getInstance(jcaName).getDigestLength();
        } catch (NoSuchAlgorithmException e) {
            throw unsupported(spec, "hash '" + jcaName + "' is not available in this JVM");
        }
    }

    private static IllegalArgumentException unsupported(String spec, String why) {
        return new IllegalArgumentException("cipher spec '" + spec + "': " + why);
    }
}
