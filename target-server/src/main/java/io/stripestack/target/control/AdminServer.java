package io.stripestack.target.control;

import java.io.BufferedReader;
import java.io.Closeable;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.Channels;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The local admin endpoint: a Unix domain socket, mode 0600 (only the server's user may connect), that
 * {@code stripestack ctl} and {@code stripestack status} speak to. One request line per connection:
 * {@code list [PREFIX]}, {@code get PATH}, {@code set PATH VALUE}, {@code status}, {@code metrics}. The answer is
 * the result lines followed by {@code OK}, or one line {@code ERR message}.
 *
 * <p>Threads: one acceptor thread; each connection is served on a short-lived daemon thread (admin
 * traffic is rare and tiny). All state lives in the {@link ControlRegistry}.
 */
public final class AdminServer implements Closeable {
    private static final Logger log = LoggerFactory.getLogger(AdminServer.class);
    private final Path socketPath;
    private final ServerSocketChannel server;
    private final ControlRegistry registry;
    private final AtomicBoolean closed = new AtomicBoolean();
    private final Thread acceptor;

    public AdminServer(Path socketPath, ControlRegistry registry) throws IOException {
        this.socketPath = socketPath.toAbsolutePath();
        this.registry = registry;
        Files.createDirectories(this.socketPath.getParent());
        refuseIfAnotherServerListens(this.socketPath);
        Files.deleteIfExists(this.socketPath);
        server = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
        server.bind(UnixDomainSocketAddress.of(this.socketPath));
        Files.setPosixFilePermissions(this.socketPath, PosixFilePermissions.fromString("rw-------"));
        acceptor = new Thread(this::acceptLoop, "admin-acceptor");
        acceptor.setDaemon(true);
        acceptor.start();
        log.info("admin socket {} (stripestack ctl / status)", this.socketPath);
    }

    /** A stale socket file (a server that died) is replaced; a live one belongs to another server. */
    private static void refuseIfAnotherServerListens(Path socketPath) throws IOException {
        if (!Files.exists(socketPath)) {
            return;
        }
        try (SocketChannel probe = SocketChannel.open(UnixDomainSocketAddress.of(socketPath))) {
            throw new IOException("another stripestack server is running with admin socket " + socketPath
                    + "; stop it first or give this one another server.admin_socket");
        } catch (java.net.SocketException stale) {
            // Nobody listens: a leftover of a server that was killed.
        }
    }

    public Path socketPath() {
        return socketPath;
    }

    private void acceptLoop() {
        while (!closed.get()) {
            try {
                SocketChannel client = server.accept();
                Thread t = new Thread(() -> serve(client), "admin-client");
                t.setDaemon(true);
                t.start();
            } catch (IOException e) {
                if (!closed.get()) {
                    log.warn("admin socket accept failed: {}", e.toString());
                }
                return;
            }
        }
    }

    private void serve(SocketChannel client) {
        try (client;
             BufferedReader in = new BufferedReader(new InputStreamReader(Channels.newInputStream(client), StandardCharsets.UTF_8));
             PrintWriter out = new PrintWriter(new OutputStreamWriter(Channels.newOutputStream(client), StandardCharsets.UTF_8))) {
            String line = in.readLine();
            if (line == null) {
                return;
            }
            out.print(answer(line.trim()));
            out.flush();
        } catch (IOException e) {
            log.debug("admin client dropped: {}", e.toString());
        }
    }

    /** Executes one request line and returns the whole answer text. Public for tests. */
    public String answer(String request) {
        String[] parts = request.split("\\s+", 3);
        StringBuilder out = new StringBuilder();
        try {
            switch (parts[0]) {
                case "list":
                    for (String l : registry.list(parts.length > 1 ? parts[1] : "")) {
                        out.append(l).append('\n');
                    }
                    break;
                case "get":
                    requireArgs(parts, 2, "get PATH");
                    out.append(registry.get(parts[1])).append('\n');
                    break;
                case "set":
                    requireArgs(parts, 3, "set PATH VALUE");
                    registry.set(parts[1], parts[2]);
                    log.info("ctl: {} set to {}", parts[1], parts[2]);
                    break;
                case "status":
                    out.append(registry.status());
                    break;
                case "metrics":
                    out.append(registry.metrics());
                    break;
                default:
                    throw new IllegalArgumentException("unknown request '" + parts[0] + "' (list, get, set, status, metrics)");
            }
            out.append("OK\n");
            return out.toString();
        } catch (RuntimeException e) {
            return "ERR " + (e.getMessage() == null ? e.toString() : e.getMessage().replace('\n', ' ')) + "\n";
        }
    }

    private static void requireArgs(String[] parts, int n, String usage) {
        if (parts.length < n) {
            throw new IllegalArgumentException("usage: " + usage);
        }
    }

    @Override
    public void close() throws IOException {
        if (closed.compareAndSet(false, true)) {
            server.close();
            Files.deleteIfExists(socketPath);
        }
    }

    /** Client side: sends one request and returns the answer lines without the final OK; throws on ERR. */
    public static String request(Path socketPath, String request) throws IOException {
        if (!Files.exists(socketPath)) {
            throw new IOException("no admin socket at " + socketPath + ": is `stripestack serve` running with this"
                    + " configuration? (--socket PATH or --config FILE selects the socket)");
        }
        try (SocketChannel ch = SocketChannel.open(UnixDomainSocketAddress.of(socketPath));
             BufferedReader in = new BufferedReader(new InputStreamReader(Channels.newInputStream(ch), StandardCharsets.UTF_8));
             PrintWriter out = new PrintWriter(new OutputStreamWriter(Channels.newOutputStream(ch), StandardCharsets.UTF_8))) {
            out.print(request + "\n");
            out.flush();
            StringBuilder answer = new StringBuilder();
            String line;
            while ((line = in.readLine()) != null) {
                if (line.equals("OK")) {
                    return answer.toString();
                }
                if (line.startsWith("ERR ")) {
                    throw new IOException(line.substring(4));
                }
                answer.append(line).append('\n');
            }
            throw new IOException("the server closed the admin connection without an answer");
        }
    }
}
