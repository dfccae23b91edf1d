package io.stripestack.initiator;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.zip.CRC32C;

/**
 * One CRC32C digest (RFC 7143 section 13.1 and appendix B) accumulated over a header or over a data segment and
 * its padding as the bytes pass, then sent or checked as 4 bytes, least significant byte first (the order of our
 * target, tgtd and open-iscsi). The JDK's CRC32C works on heap and direct buffers in place, so a digest costs
 * no allocation and no copy.
 *
 * <p>Threads: none of its own and no lock; {@link PduChannel} keeps the send side's instances under its send
 * lock and the receive side's for the one thread that reads.
 */
final class PduDigest {
    static final int LENGTH = 4;
    private static final byte[] ZERO_PADDING = new byte[3];

    private final CRC32C crc = new CRC32C();
    private final ByteBuffer value = ByteBuffer.allocate(LENGTH).order(ByteOrder.LITTLE_ENDIAN);

    void start() {
        crc.reset();
    }

    /** Adds {@code b}'s bytes from its position to its limit; the position is left as it was. */
    void add(ByteBuffer b) {
        int position = b.position();
        crc.update(b);
        b.position(position);
    }

    /** Adds the zero bytes a sender pads a segment with. */
    void addZeroPadding(int bytes) {
        crc.update(ZERO_PADDING, 0, bytes);
    }

    /** The digest of what was added, ready to be written. */
    ByteBuffer computed() {
        value.clear();
        value.putInt(0, (int) crc.getValue());
        return value;
    }

    /** The buffer a received digest is read into, then compared by {@link #receivedMatches()}. */
    ByteBuffer receiveBuffer() {
        return value.clear();
    }

    boolean receivedMatches() {
        return value.getInt(0) == (int) crc.getValue();
    }

    /** Both values in words, for the error that ends the connection. */
    String mismatch() {
        return String.format("CRC32C computed 0x%08x, received 0x%08x", (int) crc.getValue(), value.getInt(0));
    }
}
