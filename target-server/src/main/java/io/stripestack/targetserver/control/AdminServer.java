package io.stripestack.targetserver.control;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioServerDomainSocketChannel;
import io.netty.handler.codec.LineBasedFrameDecoder;
import io.netty.handler.codec.TooLongFrameException;
import io.netty.handler.codec.string.StringDecoder;
import io.stripestack.secrets.FilePermissions;
import java.io.BufferedReader;
import java.io.Closeable;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.Channels;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The local admin endpoint: a Unix domain socket, mode 0600 (only the server's user may connect), that
 * {@code stripestack ctl} and {@code stripestack status} speak to. One request line per connection:
 * {@code list [PREFIX]}, {@code get PATH}, {@code set PATH VALUE}, {@code status}, {@code metrics}, and the
 * administration commands registered in the {@link ControlRegistry} ({@link AdminCommand}). The answer is
 * the result lines followed by {@code OK}, or one line {@code ERR message}.
 *
 * <p>Threads: one Netty event loop holds every connection, however many; a request line must arrive
 * whole within {@link #REQUEST_DEADLINE_MILLIS} and within {@link #MAX_REQUEST_BYTES}, or the
 * connection is closed. Requests are answered one at a time on one worker thread (they may wait for
 * an array), with at most {@link #QUEUED_REQUESTS} waiting; beyond that the answer is {@code ERR busy}.
 * All state lives in the {@link ControlRegistry}.
 */
public final class AdminServer implements Closeable {
    private static final Logger log = LoggerFactory.getLogger(AdminServer.class);
    static final long REQUEST_DEADLINE_MILLIS = 5000;
    static final int MAX_REQUEST_BYTES = 8192;
    static final int QUEUED_REQUESTS = 32;
    private final Path socketPath;
    private final ControlRegistry registry;
    private final AtomicBoolean closed = new AtomicBoolean();
    private final EventLoopGroup group;
    private final Channel channel;
    private final ThreadPoolExecutor worker;

    public AdminServer(Path socketPath, ControlRegistry registry) throws IOException {
        this(socketPath, registry, REQUEST_DEADLINE_MILLIS);
    }

    AdminServer(Path socketPath, ControlRegistry registry, long requestDeadlineMillis) throws IOException {
        this.socketPath = socketPath.toAbsolutePath();
        this.registry = registry;
        Files.createDirectories(this.socketPath.getParent());
        refuseIfAnotherServerListens(this.socketPath);
        Files.deleteIfExists(this.socketPath);
        worker = new ThreadPoolExecutor(1, 1, 0, TimeUnit.MILLISECONDS, new ArrayBlockingQueue<>(QUEUED_REQUESTS), r -> {
            Thread t = new Thread(r, "admin-worker");
            t.setDaemon(true);
            return t;
        });
        group = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
        ServerBootstrap bootstrap = new ServerBootstrap().group(group).channel(NioServerDomainSocketChannel.class)
                .childHandler(new ChannelInitializer<Channel>() {
                    @Override
                    protected void initChannel(Channel ch) {
                        ConnectionDeadline deadline = new ConnectionDeadline(requestDeadlineMillis);
                        ch.pipeline().addLast(deadline)
                                .addLast(new LineBasedFrameDecoder(MAX_REQUEST_BYTES, true, true))
                                .addLast(new StringDecoder(StandardCharsets.UTF_8))
                                .addLast(new RequestHandler(deadline));
                    }
                });
        try {
            channel = bootstrap.bind(UnixDomainSocketAddress.of(this.socketPath)).syncUninterruptibly().channel();
        } catch (RuntimeException e) {
            group.shutdownGracefully();
            worker.shutdownNow();
            throw new IOException("cannot create the admin socket " + this.socketPath + ": " + e.getMessage(), e);
        }
        Files.setPosixFilePermissions(this.socketPath, FilePermissions.OWNER_READ_WRITE);
        log.info("admin socket {} (stripestack ctl / status)", this.socketPath);
    }

    /** A stale socket file (a server that died) is replaced; a live one belongs to another server. */
    public static void refuseIfAnotherServerListens(Path socketPath) throws IOException {
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

    /** One connection's request: answered on the worker, then the connection closes. */
    private final class RequestHandler extends SimpleChannelInboundHandler<String> {
        private final ConnectionDeadline deadline;

        RequestHandler(ConnectionDeadline deadline) {
            this.deadline = deadline;
        }

        @Override
        protected void channelRead0(ChannelHandlerContext ctx, String line) {
            deadline.requestComplete();
            ctx.channel().config().setAutoRead(false); // one request per connection
            try {
                worker.execute(() -> reply(ctx, answer(line.trim())));
            } catch (RejectedExecutionException e) {
                reply(ctx, "ERR busy: " + QUEUED_REQUESTS + " admin requests are waiting already; try again\n");
            }
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            if (cause instanceof TooLongFrameException) {
                reply(ctx, "ERR request line longer than " + MAX_REQUEST_BYTES + " bytes\n");
            } else {
                log.debug("admin client dropped: {}", cause.toString());
                ctx.close();
            }
        }

        private void reply(ChannelHandlerContext ctx, String text) {
            ctx.writeAndFlush(Unpooled.copiedBuffer(text, StandardCharsets.UTF_8)).addListener(ChannelFutureListener.CLOSE);
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
                    String said = registry.apply(parts[1], parts[2]);
                    log.info("ctl: {} set to {}", parts[1], parts[2]);
                    out.append(said);
                    if (!said.isEmpty() && !said.endsWith("\n")) {
                        out.append('\n');
                    }
                    break;
                case "status":
                    out.append(registry.status());
                    break;
                case "metrics":
                    out.append(registry.metrics());
                    break;
                default:
                    AdminCommand command = registry.command(parts[0]);
                    if (command == null) {
                        throw new IllegalArgumentException("unknown request '" + parts[0] + "' (list, get, set, status, metrics, "
                                + String.join(", ", registry.commandVerbs()) + ")");
                    }
                    List<String> words = List.of(request.split("\\s+"));
                    log.info("admin: {}", request);
                    String answer = command.run(words.subList(1, words.size()));
                    out.append(answer);
                    if (!answer.isEmpty() && !answer.endsWith("\n")) {
                        out.append('\n');
                    }
                    break;
            }
            out.append("OK\n");
            return out.toString();
        } catch (IOException | RuntimeException e) {
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
            channel.close().syncUninterruptibly();
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
            worker.shutdownNow();
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
