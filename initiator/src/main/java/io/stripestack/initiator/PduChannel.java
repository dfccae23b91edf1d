package io.stripestack.initiator;

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
 * and gathered header + data + padding writes on the way out.
 *
 * <p>Threads. Reads are made by one thread at a time: the login caller, then {@code iscsi-reader} alone.
 * {@link #send} holds {@code sendLock}, which keeps each PDU whole on the wire and guards the gather array and
 * the padding buffer that all writers share; a caller that needs several PDUs back to back, or its CmdSN order
 * to be the wire order, holds {@link #sendLock()} across them (the lock is reentrant). A failed write fails the
 * connection: once a PDU went out in part, the stream is out of step and nothing more can be sent.
 */
final class PduChannel {
    private final SocketChannel socket;
    private final ConnectionLifecycle lifecycle;
    private final ReentrantLock sendLock = new ReentrantLock();
    private final ByteBuffer[] gather = new ByteBuffer[3];
    private final ByteBuffer padding = ByteBuffer.allocate(4);
    private final ByteBuffer noData = ByteBuffer.allocate(0);

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

    static int paddedLength(int length) {
        return length + ((4 - (length & 3)) & 3);
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

    private void writeGathered(ByteBuffer header, ByteBuffer data, int length) throws IOException {
        header.clear();
        gather[0] = header;
        gather[1] = data;
        padding.clear().limit(paddedLength(length) - length);
        gather[2] = padding;
        try {
            while (header.hasRemaining() || data.hasRemaining() || padding.hasRemaining()) {
                socket.write(gather);
            }
        } catch (IOException e) {
            throw lifecycle.fail(new IOException("sending to the target failed: " + e.getMessage(), e));
        } finally {
            gather[1] = null; // the caller's buffer is not ours to keep reachable
        }
    }

    /** Reads the next PDU's header into {@code h} and skips any AHS (none is negotiated, so none is used). */
    void readHeader(ByteBuffer h) throws IOException {
        readFully(h.clear());
        skip(Bhs.totalAhsBytes(h));
    }

    /** Reads a data segment of {@code length} bytes and its padding into {@code into} from position 0. */
    void readPadded(ByteBuffer into, int length) throws IOException {
        into.clear().limit(paddedLength(length));
        readFully(into);
    }

    void skipPadding(int length) throws IOException {
        skip(paddedLength(length) - length);
    }

    /** Reads and drops a data segment of {@code length} bytes with its padding. */
    void discard(int length) throws IOException {
        skip(paddedLength(length));
    }

    void readFully(ByteBuffer b) throws IOException {
        while (b.hasRemaining()) {
            if (socket.read(b) < 0) {
                throw new EOFException("the target closed the connection");
            }
        }
    }

    private void skip(int bytes) throws IOException {
        if (bytes > 0) {
            readFully(ByteBuffer.allocate(bytes));
        }
    }
}
