package io.stripestack.initiator;

import io.stripestack.iscsi.proto.Bhs;
import io.stripestack.iscsi.proto.Crc32cDigest;
import java.io.EOFException;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.util.concurrent.locks.ReentrantLock;

/**
 * PDU framing on the connection's blocking socket: headers, data segments and their padding on the way in,
 * and gathered header + data + padding writes on the way out, each with its CRC32C digest once the login
 * negotiated digests ({@link #useDigests}). A received digest that does not match fails the connection: a bad
 * header digest leaves the framing untrusted, and a bad data digest may already sit in a caller's buffer, so
 * the command must not complete either way (error recovery level 0; the remote member logs in again and issues
 * the command once more, as after a dropped connection).
 *
 * <p>Threads. Reads are made by one thread at a time: the login caller, then {@code iscsi-reader} alone; the
 * receive digest and the discard buffer are that thread's. {@link #send} holds {@code sendLock}, which keeps
 * each PDU whole on the wire and guards the gather array, the padding buffer and the send digests that all
 * writers share; a caller that needs several PDUs back to back, or its CmdSN order to be the wire order, holds
 * {@link #sendLock()} across them (the lock is reentrant). A failed write fails the connection: once a PDU went
 * out in part, the stream is out of step and nothing more can be sent. The digest switches are set once, by
 * the login thread before the reader starts, and are volatile for the senders of other threads.
 */
final class PduChannel {
    private static final int DISCARD_BYTES = 4096;

    private final SocketChannel socket;
    private final ConnectionLifecycle lifecycle;
    private final ReentrantLock sendLock = new ReentrantLock();
    private final ByteBuffer[] gather = new ByteBuffer[5];
    private final ByteBuffer padding = ByteBuffer.allocate(4);
    private final ByteBuffer noData = ByteBuffer.allocate(0);
    private final Crc32cDigest headerDigestOut = new Crc32cDigest();
    private final Crc32cDigest dataDigestOut = new Crc32cDigest();
    private final Crc32cDigest digestIn = new Crc32cDigest();
    private final ByteBuffer discarded = ByteBuffer.allocate(DISCARD_BYTES);
    private volatile boolean headerDigests;
    private volatile boolean dataDigests;

    PduChannel(SocketChannel socket, ConnectionLifecycle lifecycle) {
        this.socket = socket;
        this.lifecycle = lifecycle;
    }

    /** A connected blocking socket with Nagle off (a PDU header must not wait for the next one). */
    static SocketChannel connect(IscsiUrl url, Duration timeout, String description) throws IOException {
        SocketChannel channel = SocketChannel.open();
        try {
            Socket s = channel.socket();
            s.connect(new InetSocketAddress(url.host(), url.port()), (int) timeout.toMillis());
            channel.setOption(StandardSocketOptions.TCP_NODELAY, true);
            s.setSoTimeout(0);
            return channel;
        } catch (IOException e) {
            channel.close();
            throw new IOException("cannot connect to " + description + ": " + e.getMessage()
                    + " (is the target running and listening on that address?)", e);
        }
    }

    ReentrantLock sendLock() {
        return sendLock;
    }

    /**
     * Sends {@code header} and bytes {@code [from, from + length)} of {@code data} (null for none), padded;
     * data's position and limit are left as they were.
     */
    void send(ByteBuffer header, ByteBuffer data, int from, int length) throws IOException {
        sendLock.lock();
        try {
            if (data == null || length <= 0) {
                writeGathered(header, noData, 0);
                return;
            }
            int savedPosition = data.position();
            int savedLimit = data.limit();
            data.limit(from + length).position(from);
            try {
                writeGathered(header, data, length);
            } finally {
                data.limit(savedLimit).position(savedPosition);
            }
        } finally {
            sendLock.unlock();
        }
    }

    /** From the next PDU on, in both directions (RFC 7143: digests start with the full feature phase). */
    void useDigests(boolean header, boolean data) {
        headerDigests = header;
        dataDigests = data;
    }

    private void writeGathered(ByteBuffer header, ByteBuffer data, int length) throws IOException {
        header.clear();
        int padBytes = Bhs.paddedLength(length) - length;
        padding.clear().limit(padBytes);
        gather[0] = header;
        gather[1] = headerDigests ? digestOf(headerDigestOut, header, 0) : noData;
        gather[2] = data;
        gather[3] = padding;
        gather[4] = dataDigests && length > 0 ? digestOf(dataDigestOut, data, padBytes) : noData;
        long left = header.remaining() + gather[1].remaining() + data.remaining() + padding.remaining()
                + gather[4].remaining();
        try {
            while (left > 0) {
                left -= socket.write(gather);
            }
        } catch (IOException e) {
            throw lifecycle.fail(new IOException("sending to the target failed: " + e.getMessage(), e));
        } finally {
            gather[2] = null; // the caller's buffer is not ours to keep reachable
        }
    }

    private static ByteBuffer digestOf(Crc32cDigest digest, ByteBuffer bytes, int zeroPadding) {
        digest.start();
        digest.add(bytes);
        digest.addZeroPadding(zeroPadding);
        return digest.computed();
    }

    /**
     * Reads the next PDU's header into {@code h}, drops any AHS (none is negotiated, so none is used) and checks
     * the header digest over both.
     */
    void readHeader(ByteBuffer h) throws IOException {
        h.clear();
        while (h.hasRemaining()) {
            if (socket.read(h) < 0) {
                if (h.position() == 0) {
                    throw new EOFException("the target closed the connection");
                }
                throw closedMidPdu();
            }
        }
        if (headerDigests) {
            digestIn.start();
            digestIn.add(h.flip());
            h.clear();
        }
        skipCounted(Bhs.totalAhsBytes(h));
        if (headerDigests) {
            checkDigest("header");
        }
    }

    /** Reads a data segment of {@code length} bytes and its padding into {@code into} from position 0. */
    void readPadded(ByteBuffer into, int length) throws IOException {
        into.clear().limit(Bhs.paddedLength(length));
        readFully(into);
        if (dataDigests && length > 0) {
            digestIn.start();
            digestIn.add(into.flip());
            checkDigest("data");
        }
    }

    /**
     * Reads a data segment of {@code into.remaining()} bytes into {@code into}, its padding and its digest;
     * {@code into}'s position ends at its limit.
     */
    void readSegment(ByteBuffer into) throws IOException {
        int length = into.remaining();
        int start = into.position();
        readFully(into);
        if (dataDigests && length > 0) {
            digestIn.start();
            digestIn.add(into.position(start));
            into.position(start + length);
            skipCounted(Bhs.paddedLength(length) - length);
            checkDigest("data");
        } else {
            skipCounted(Bhs.paddedLength(length) - length);
        }
    }

    /** Reads and drops a data segment of {@code length} bytes with its padding, checking its digest. */
    void discard(int length) throws IOException {
        if (length <= 0) {
            return;
        }
        digestIn.start();
        skipCounted(Bhs.paddedLength(length));
        if (dataDigests) {
            checkDigest("data");
        }
    }

    /** Reads {@code b}'s remaining bytes, all inside a PDU whose header came; the callers account for digests. */
    private void readFully(ByteBuffer b) throws IOException {
        while (b.hasRemaining()) {
            if (socket.read(b) < 0) {
                throw closedMidPdu();
            }
        }
    }

    /** A target that stops between PDUs may be restarting; one that stops inside a PDU sent a broken one. */
    private static IscsiProtocolException closedMidPdu() {
        return new IscsiProtocolException("the target closed the connection in the middle of a PDU");
    }

    private void checkDigest(String what) throws IOException {
        ByteBuffer received = digestIn.receiveBuffer();
        readFully(received);
        if (!digestIn.receivedMatches()) {
            throw new IOException(what + " digest error in a PDU from the target (" + digestIn.mismatch()
                    + "); the bytes were damaged on the way, so the connection is dropped");
        }
    }

    /** Reads and drops {@code bytes} bytes, adding them to the receive digest. */
    private void skipCounted(int bytes) throws IOException {
        for (int left = bytes; left > 0; ) {
            discarded.clear().limit(Math.min(left, DISCARD_BYTES));
            readFully(discarded);
            digestIn.add(discarded.flip());
            left -= discarded.limit();
        }
    }
}
