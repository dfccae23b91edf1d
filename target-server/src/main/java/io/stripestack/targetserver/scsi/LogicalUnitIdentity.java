package io.stripestack.targetserver.scsi;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.UUID;

/**
 * What a logical unit tells initiators about itself: standard INQUIRY strings, the unit serial number
 * (VPD 0x80) and the NAA designator of the device identification page (VPD 0x83). Initiators (multipath,
 * udev's /dev/disk/by-id) key on the serial and NAA, so both must stay the same across restarts: derive
 * them from a stable per-LUN id in the configuration, never from anything random at start-up.
 *
 * @param vendorId     T10 vendor identification, up to 8 printable ASCII characters (e.g. {@code STRIPSTK})
 * @param productId    up to 16 printable ASCII characters
 * @param revision     product revision level, up to 4 printable ASCII characters
 * @param serialNumber unit serial number, 1 to 252 printable ASCII characters
 * @param naa          the 16-byte NAA IEEE Registered Extended designator (its first nibble is 6)
 */
public record LogicalUnitIdentity(String vendorId, String productId, String revision, String serialNumber,
        byte[] naa) {

    public static final String DEFAULT_VENDOR = "STRIPSTK";
    public static final String DEFAULT_PRODUCT = "stripestack LUN";
    public static final String DEFAULT_REVISION = "0001";

    public LogicalUnitIdentity {
        requireAscii("vendorId", vendorId, 1, 8);
        requireAscii("productId", productId, 1, 16);
        requireAscii("revision", revision, 1, 4);
        requireAscii("serialNumber", serialNumber, 1, 252);
        if (naa == null || naa.length != 16 || (naa[0] & 0xf0) != 0x60) {
            throw new IllegalArgumentException("naa must be 16 bytes starting with nibble 6 (NAA IEEE Registered"
                    + " Extended); build it with LogicalUnitIdentity.naaFrom(UUID)");
        }
        naa = naa.clone();
    }

    /**
     * An identity with the default vendor, product and revision, whose serial number and NAA both derive
     * from {@code stableId} (a UUID the configuration keeps for the LUN).
     */
    public static LogicalUnitIdentity of(UUID stableId) {
        return new LogicalUnitIdentity(DEFAULT_VENDOR, DEFAULT_PRODUCT, DEFAULT_REVISION,
                stableId.toString().replace("-", "").substring(0, 16), naaFrom(stableId));
    }

    /**
     * An NAA 6 designator built from a UUID: the nibble 6 followed by the UUID's low 124 bits. The
     * company-id bits are therefore not an IEEE-registered OUI; the designator is unique with the
     * probability of the UUID, which is what initiators need (a stable, distinct name per LUN).
     */
    public static byte[] naaFrom(UUID stableId) {
        byte[] naa = ByteBuffer.allocate(16).putLong(stableId.getMostSignificantBits())
                .putLong(stableId.getLeastSignificantBits()).array();
        naa[0] = (byte) (0x60 | (naa[0] & 0x0f));
        return naa;
    }

    /** A name-based (version 3) UUID for configurations that name LUNs by a string instead of a UUID. */
    public static UUID stableIdFromName(String name) {
        return UUID.nameUUIDFromBytes(name.getBytes(StandardCharsets.UTF_8));
    }

    @Override
    public byte[] naa() {
        return naa.clone();
    }

    /** The designator without a defensive copy, for building VPD pages. */
    byte[] naaBytes() {
        return naa;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof LogicalUnitIdentity other && vendorId.equals(other.vendorId)
                && productId.equals(other.productId) && revision.equals(other.revision)
                && serialNumber.equals(other.serialNumber) && Arrays.equals(naa, other.naa);
    }

    @Override
    public int hashCode() {
        return serialNumber.hashCode() * 31 + Arrays.hashCode(naa);
    }

    @Override
    public String toString() {
        return "LogicalUnitIdentity[" + vendorId + " " + productId + " " + revision + " serial=" + serialNumber + "]";
    }

    private static void requireAscii(String field, String value, int min, int max) {
        if (value == null || value.length() < min || value.length() > max) {
            throw new IllegalArgumentException(field + " must be " + min + " to " + max + " characters, got "
                    + (value == null ? "null" : "\"" + value + "\""));
        }
        for (int i = 0; i < value.length(); i++) {
            char c = value.charAt(i);
            if (c < 0x20 || c > 0x7e) {
                throw new IllegalArgumentException(field + " \"" + value + "\" must be printable ASCII (SPC 4.4.1)");
            }
        }
    }
}
