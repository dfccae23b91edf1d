package io.stripestack.initiator;

import java.util.Locale;

/**
 * A header or data digest an initiator may ask for (RFC 7143 sections 12.1 and 13.1: HeaderDigest,
 * DataDigest): none, or CRC32C over each PDU's header and each non-empty data segment with its padding.
 * Asking for CRC32C means requiring it: a target that answers None fails the login, as open-iscsi's
 * {@code HeaderDigest = CRC32C} does, rather than running silently without the check that was asked for.
 */
public enum Digest {
    NONE("None"),
    CRC32C("CRC32C");

    private final String keyValue;

    Digest(String keyValue) {
        this.keyValue = keyValue;
    }

    /** The value as the login key carries it. */
    public String keyValue() {
        return keyValue;
    }

    /** {@code none} or {@code crc32c}, any case; otherwise IllegalArgumentException naming the choices. */
    public static Digest parse(String text) {
        return switch (text.trim().toLowerCase(Locale.ROOT)) {
            case "none" -> NONE;
            case "crc32c" -> CRC32C;
            default -> throw new IllegalArgumentException("unknown digest '" + text + "'; use none or crc32c");
        };
    }
}
