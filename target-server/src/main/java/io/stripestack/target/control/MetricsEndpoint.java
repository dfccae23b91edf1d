package io.stripestack.target.control;

import com.sun.net.httpserver.HttpServer;
import java.io.Closeable;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The Prometheus text endpoint ({@code GET /metrics}), off unless {@code server.metrics} is configured, and
 * bound to loopback only (the configuration refuses other addresses). One daemon thread serves it.
 */
public final class MetricsEndpoint implements Closeable {
    private static final Logger log = LoggerFactory.getLogger(MetricsEndpoint.class);
    private final HttpServer http;

    public MetricsEndpoint(InetSocketAddress address, ControlRegistry registry) throws IOException {
        http = HttpServer.create(address, 8);
        http.createContext("/metrics", exchange -> {
            try (exchange) {
                if (!exchange.getRequestMethod().equals("GET")) {
                    exchange.sendResponseHeaders(405, -1);
                    return;
                }
                byte[] body = registry.metrics().getBytes(StandardCharsets.UTF_8);
                exchange.getResponseHeaders().set("Content-Type", "text/plain; version=0.0.4; charset=utf-8");
                exchange.sendResponseHeaders(200, body.length);
                try (OutputStream out = exchange.getResponseBody()) {
                    out.write(body);
                }
            }
        });
        http.start();
        log.info("metrics on http://{}:{}/metrics", address.getHostString(), port());
    }

    public int port() {
        return http.getAddress().getPort();
    }

    @Override
    public void close() {
        http.stop(0);
    }
}
