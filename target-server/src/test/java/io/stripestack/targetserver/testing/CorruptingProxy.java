package io.stripestack.targetserver.testing;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A TCP relay on a loopback port in front of a target, which flips one bit of the target's answers when asked:
 * the damage a bad NIC or switch port does and TCP's checksum can miss, for digests to catch.
 *
 * <p>Threads: one acceptor, and two pump threads per relayed connection (daemons, ended by closing the
 * sockets); the arming flag is atomic, so exactly one byte is damaged per {@link #damageNextAnswer()}.
 */
public final class CorruptingProxy implements AutoCloseable {
    /** Reads of the target's stream at least this long are mostly data segments, where the bit is flipped. */
    private static final int LARGE_READ = 16 << 10;

    private final ServerSocket listener;
    private final int targetPort;
    private final AtomicBoolean armed = new AtomicBoolean();
    private final AtomicBoolean damaged = new AtomicBoolean();

    private CorruptingProxy(int targetPort) throws IOException {
        this.targetPort = targetPort;
        this.listener = new ServerSocket(0, 16, InetAddress.getLoopbackAddress());
        Thread acceptor = new Thread(this::accept, "corrupting-proxy");
        acceptor.setDaemon(true);
        acceptor.start();
    }

    public static CorruptingProxy inFrontOf(int targetPort) throws IOException {
        return new CorruptingProxy(targetPort);
    }

    public int port() {
        return listener.getLocalPort();
    }

    /** Flips a bit in the middle of the next large read from the target's side. */
    public void damageNextAnswer() {
        damaged.set(false);
        armed.set(true);
    }

    /** Whether the bit asked for was flipped. */
    public boolean damaged() {
        return damaged.get();
    }

    private void accept() {
        try {
            while (true) {
                Socket initiator = listener.accept();
                Socket target = new Socket(InetAddress.getLoopbackAddress(), targetPort);
                pump(initiator, target, false);
                pump(target, initiator, true);
            }
        } catch (IOException closed) {
            // the proxy was closed
        }
    }

    private void pump(Socket from, Socket to, boolean fromTarget) {
        Thread t = new Thread(() -> {
            byte[] buffer = new byte[64 << 10];
            try (from; to) {
                InputStream in = from.getInputStream();
                OutputStream out = to.getOutputStream();
                for (int n; (n = in.read(buffer)) > 0; ) {
                    if (fromTarget && n >= LARGE_READ && armed.compareAndSet(true, false)) {
                        buffer[n / 2] ^= 0x10;
                        damaged.set(true);
                    }
                    out.write(buffer, 0, n);
                }
            } catch (IOException closed) {
                // either side hung up: the other is closed with it
            }
        }, "corrupting-proxy-pump");
        t.setDaemon(true);
        t.start();
    }

    @Override
    public void close() throws IOException {
        listener.close();
    }
}
