package io.stripestack.targetserver.control;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The admin socket and the metrics endpoint against clients that connect and hold: idle
 * connections cost no threads, half-sent requests are cut off at the deadline, and a normal
 * request is answered meanwhile.
 */
class ControlEndpointsUnderLoadTest {
    @TempDir
    Path dir;

    private static ControlRegistry registry() {
        ControlRegistry registry = new ControlRegistry();
        registry.setStatusReport(() -> "md0 : active raid5\n");
        registry.setMetricsReport(() -> "stripestack_up 1\n");
        return registry;
    }

    private static long threadsNamed(String prefix) {
        return Thread.getAllStackTraces().keySet().stream().filter(t -> t.getName().startsWith(prefix)).count();
    }

    @Test
    @Timeout(60)
    void twoHundredIdleAdminConnectionsCostNoThreadsAndAHalfSentLineIsCutOff() throws Exception {
        Path socket = dir.resolve("admin.sock");
        long before = Thread.activeCount();
        try (AdminServer server = new AdminServer(socket, registry(), 1000)) {
            List<SocketChannel> idle = new ArrayList<>();
            try {
                for (int i = 0; i < 200; i++) {
                    SocketChannel ch = SocketChannel.open(UnixDomainSocketAddress.of(socket));
                    ch.write(ByteBuffer.wrap("stat".getBytes(StandardCharsets.US_ASCII))); // half a request line
                    idle.add(ch);
                }
                assertEquals("md0 : active raid5\n", AdminServer.request(socket, "status"), "answered meanwhile");
                assertTrue(Thread.activeCount() - before < 10, (Thread.activeCount() - before) + " more threads");
                assertTrue(threadsNamed("admin-client") == 0, "no thread per connection");
                // the half-sent lines are cut off at the deadline
                SocketChannel first = idle.get(0);
                first.configureBlocking(true);
                ByteBuffer buffer = ByteBuffer.allocate(64);
                long start = System.nanoTime();
                assertEquals(-1, first.read(buffer), "closed by the server");
                assertTrue(System.nanoTime() - start < TimeUnit.SECONDS.toNanos(5));
            } finally {
                for (SocketChannel ch : idle) {
                    ch.close();
                }
            }
        }
    }

    @Test
    @Timeout(60)
    void aSlowlorisClientDoesNotStopTheMetricsEndpoint() throws Exception {
        try (MetricsEndpoint metrics = new MetricsEndpoint(new InetSocketAddress("127.0.0.1", 0), registry(), 1000)) {
            try (Socket slow = new Socket("127.0.0.1", metrics.port())) {
                OutputStream out = slow.getOutputStream();
                out.write("GET /metrics HTTP/1.1\r\nHost: x\r\n".getBytes(StandardCharsets.US_ASCII)); // never ends
                out.flush();
                for (int i = 0; i < 3; i++) {
                    assertTrue(scrape(metrics.port()).contains("stripestack_up 1"), "answered while a request hangs");
                }
                slow.setSoTimeout(5000);
                InputStream in = slow.getInputStream();
                long start = System.nanoTime();
                assertEquals(-1, in.read(), "the half-sent request's connection is closed");
                assertTrue(System.nanoTime() - start < TimeUnit.SECONDS.toNanos(4));
            }
        }
    }

    private static String scrape(int port) throws IOException {
        try (Socket s = new Socket("127.0.0.1", port)) {
            s.setSoTimeout(3000);
            s.getOutputStream().write("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
            return new String(s.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        }
    }
}
