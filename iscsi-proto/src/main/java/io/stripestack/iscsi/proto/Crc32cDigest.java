package io.stripestack.iscsi.proto;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.zip.CRC32C;

/**
 * One CRC32C header or data digest (RFC 7143 section 13.1 and appendix B), accumulated over a header or over a
 * data segment and its zero padding as the bytes pass, then sent or checked as 4 bytes, least significant byte
 * first (the order of open-iscsi, tgtd and libiscsi). A data digest covers the padding ({@link #addZeroPadding});
 * an empty data segment has none. The JDK's CRC32C works on heap and direct buffers in place, so a digest costs no
 * allocation and no copy.
 *
 * <p>Threads: none of its own and no lock; each user keeps its instances for the one thread (or under the one
 * lock) that computes with them.
 */
public final class Crc32cDigest {
    public static final int LENGTH = 4;
    private static final byte[] ZERO_PADDING = new byte[3];

    private final CRC32C crc = new CRC32C();
    private final ByteBuffer value = ByteBuffer.allocate(LENGTH).order(ByteOrder.LITTLE_ENDIAN);

    public void start() {
        crc.reset();
    }

    /** Adds {@code b}'s bytes from its position to its limit; the position is left as it was. */
    public void add(ByteBuffer b) {
        int position = b.position();
        crc.update(b);
        b.position(position);
    }

    /** Adds the zero bytes a sender pads a segment with (0 to 3, {@link Bhs#pad}). */
    public void addZeroPadding(int bytes) {
        crc.update(ZERO_PADDING, 0, bytes);
    }

    /** The digest of what was added, as a number; on the wire it goes least significant byte first. */
    public int value() {
        return (int) crc.getValue();
    }

    /** The digest of what was added, ready to be written. */
    public ByteBuffer computed() {
        value.clear();
        value.putInt(0, value());
        return value;
    }

    /** The buffer a received digest is read into, then compared by {@link #receivedMatches()}. */
    public ByteBuffer receiveBuffer() {
        return value.clear();
    }

    public boolean receivedMatches() {
        return value.getInt(0) == value();
    }

    /** Both values in words, for the error that ends the connection. */
    public String mismatch() {
        return String.format("CRC32C computed 0x%08x, received 0x%08x", value(), value.getInt(0));
    }
}
