package io.stripestack.targetserver.iscsi;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.IoHandlerFactory;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.ServerChannel;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollServerSocketChannel;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.util.concurrent.Future;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.NetworkInterface;
import java.net.SocketAddress;
import java.net.SocketException;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The iSCSI target transport (RFC 7143, ErrorRecoveryLevel 0, one connection per session) on Netty:
 * listens on the configured addresses, logs initiators in to the configured targets and hands
 * their SCSI commands to each target's {@link io.stripestack.targetserver.scsi.ScsiCommandRouter} on the
 * given I/O executor.
 *
 * <p>Lifecycle: construct, {@link #start()}, {@link #close()} (graceful: stops accepting, waits up
 * to the drain timeout for executing commands to answer, then closes every connection). Uses epoll
 * when available, NIO otherwise.
 *
 * <p>Concurrency: start, close and the portals' changes are synchronized on the server; each connection lives on one
 * event loop thread; commands run on the caller's executor, which the caller owns and shuts down.
 */
public final class IscsiServer implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(IscsiServer.class);

    private final ServerContext context;
    private final List<Channel> serverChannels = new ArrayList<>();
    private ServerBootstrap bootstrap;
    private EventLoopGroup acceptGroup;
    private EventLoopGroup ioGroup;

    /**
     * @param settings   transport settings
     * @param targets    the targets to serve (distinct IQNs); their routers must stay usable until close
     * @param ioExecutor runs SCSI commands (blocking device I/O); never a Netty event loop
     */
    public IscsiServer(IscsiServerSettings settings, List<IscsiTargetDefinition> targets, Executor ioExecutor) {
        this.context = new ServerContext(Objects.requireNonNull(settings, "settings"),
                Objects.requireNonNull(targets, "targets"), Objects.requireNonNull(ioExecutor, "ioExecutor"));
    }

    /** Binds every configured address; on failure nothing stays bound and the error names the address. */
    public synchronized void start() throws IOException {
        if (acceptGroup != null) {
            throw new IllegalStateException("iSCSI server already started");
        }
        boolean epoll = Epoll.isAvailable();
        IoHandlerFactory factory = epoll ? EpollIoHandler.newFactory() : NioIoHandler.newFactory();
        Class<? extends ServerChannel> channelClass = epoll ? EpollServerSocketChannel.class : NioServerSocketChannel.class;
        acceptGroup = new MultiThreadIoEventLoopGroup(1, factory);
        ioGroup = new MultiThreadIoEventLoopGroup(0, factory);
        bootstrap = new ServerBootstrap()
                .group(acceptGroup, ioGroup)
                .channel(channelClass)
                .option(ChannelOption.SO_BACKLOG, 256)
                .option(ChannelOption.SO_REUSEADDR, true)
                .childOption(ChannelOption.TCP_NODELAY, true)
                .childOption(ChannelOption.SO_KEEPALIVE, true)
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        PduDecoder decoder = new PduDecoder();
                        PduEncoder encoder = new PduEncoder();
                        ch.pipeline().addLast("pduDecoder", decoder)
                                .addLast("pduEncoder", encoder)
                                .addLast("iscsi", new IscsiConnection(context, decoder, encoder));
                    }
                });
        for (InetSocketAddress address : context.settings.bindAddresses()) {
            try {
                serverChannels.add(bootstrap.bind(address).syncUninterruptibly().channel());
            } catch (Exception e) {
                for (Channel bound : serverChannels) {
                    bound.close().syncUninterruptibly();
                }
                serverChannels.clear();
                shutdownGroups();
                throw cannotListen(address, e);
            }
        }
        log.info("iSCSI target listening on {} ({}), targets {}", boundAddresses(), epoll ? "epoll" : "nio",
                context.targets().stream().map(IscsiTargetDefinition::iqn).toList());
    }

    /**
     * Why an address could not be bound, with the one thing to do: an address no interface of this host has
     * (nothing to free there), or a port in use.
     */
    public static IOException cannotListen(InetSocketAddress address, Exception e) {
        String portal = address.getHostString() + ":" + address.getPort();
        InetAddress ip = address.getAddress();
        boolean local;
        try {
            local = ip == null || ip.isAnyLocalAddress() || ip.isLoopbackAddress()
                    || NetworkInterface.getByInetAddress(ip) != null;
        } catch (SocketException notKnown) {
            local = true;   // cannot tell: the bind's own reason below says what happened
        }
        if (!local) {
            return new IOException("iSCSI: cannot listen on " + portal + ": " + ip.getHostAddress()
                    + " is not an address of this host; use one 'ip address' lists (or 0.0.0.0 for all)", e);
        }
        return new IOException("iSCSI: cannot listen on " + portal + " (" + e.getMessage()
                + "): free the port or choose another one", e);
    }

    /**
     * Listens on one more address at run time; returns it bound (port 0 resolved). Refused, naming the address,
     * when it cannot be bound (in use, not local).
     */
    public synchronized InetSocketAddress addPortal(InetSocketAddress address) throws IOException {
        if (acceptGroup == null) {
            throw new IllegalStateException("iSCSI server is not started");
        }
        Channel channel;
        try {
            channel = bootstrap.bind(address).syncUninterruptibly().channel();
        } catch (Exception e) {
            throw cannotListen(address, e);
        }
        serverChannels.add(channel);
        log.info("iSCSI target now also listening on {}", channel.localAddress());
        return (InetSocketAddress) channel.localAddress();
    }

    /**
     * Stops listening on a bound address (as {@link #boundAddresses} lists it): no new connection arrives there;
     * connections accepted through it earlier are not touched. Returns whether it was bound.
     */
    public synchronized boolean removePortal(InetSocketAddress bound) {
        for (Channel ch : serverChannels) {
            if (bound.equals(ch.localAddress())) {
                ch.close().syncUninterruptibly();
                serverChannels.remove(ch);
                log.info("iSCSI target no longer listening on {}", bound);
                return true;
            }
        }
        return false;
    }

    /** The addresses actually bound, in configuration order (port 0 resolved). */
    public synchronized List<InetSocketAddress> boundAddresses() {
        List<InetSocketAddress> addresses = new ArrayList<>();
        for (Channel ch : serverChannels) {
            SocketAddress local = ch.localAddress();
            if (local instanceof InetSocketAddress) {
                addresses.add((InetSocketAddress) local);
            }
        }
        return addresses;
    }

    /** The bound TCP ports, in configuration order. */
    public List<Integer> boundPorts() {
        return boundAddresses().stream().map(InetSocketAddress::getPort).toList();
    }

    /** The first bound port (the usual single-address case). */
    public int boundPort() {
        List<Integer> ports = boundPorts();
        if (ports.isEmpty()) {
            throw new IllegalStateException("iSCSI server is not started");
        }
        return ports.get(0);
    }

    /** Live connections (logged in or logging in); for monitoring. */
    public int connectionCount() {
        return context.connections.size();
    }

    /** The write buffer budget's current use and counters (see {@link IscsiServerSettings#writeBufferBudget()}). */
    public WriteBufferStats writeBufferStats() {
        return context.writeBuffers.stats();
    }

    /** Both buffer budgets at once, for status and metrics. */
    public BufferStats bufferStats() {
        return new BufferStats(writeBufferStats(), dataInStats());
    }

    /** The Data-In budget's current use and counters (see {@link IscsiServerSettings#dataInBudget()}). */
    public DataInStats dataInStats() {
        return context.dataIn.stats();
    }

    // ------------------------------------------------------------------ run-time administration

    /** Offers a new target to later logins and SendTargets. */
    public void addTarget(IscsiTargetDefinition target) {
        context.directory.add(target);
    }

    /**
     * Puts a changed definition (access list, CHAP) of an existing target in place for later logins; sessions
     * already logged in keep theirs. Returns the definition replaced, which the caller closes.
     */
    public IscsiTargetDefinition replaceTarget(IscsiTargetDefinition target) {
        return context.directory.replace(target);
    }

    /** Stops offering the target to new logins; returns its definition. End its sessions with {@link #endSessions}. */
    public IscsiTargetDefinition removeTarget(String iqn) {
        return context.directory.remove(iqn);
    }

    /** The I_T nexuses of the sessions logged in to target {@code iqn} now. */
    public List<String> sessions(String iqn) {
        List<String> out = new ArrayList<>();
        for (IscsiConnection c : context.sessions.connections()) {
            if (c.target().iqn().equals(iqn)) {
                out.add(c.nexus());
            }
        }
        return out;
    }

    /**
     * Ends the sessions of target {@code iqn} whose initiator name {@code initiators} accepts, cleanly:
     * each is asked to log out (Async Message) and closed once its executing commands answered, within the
     * drain timeout. Returns how many sessions were ended; blocks until they are.
     */
    public int endSessions(String iqn, Predicate<String> initiators) {
        List<Future<Void>> drains = new ArrayList<>();
        for (IscsiConnection c : context.sessions.connections()) {
            if (c.target().iqn().equals(iqn) && initiators.test(c.initiatorName())) {
                drains.add(c.drain());
            }
        }
        long deadline = System.nanoTime() + context.settings.drainTimeout().toNanos();
        for (Future<Void> drain : drains) {
            long left = deadline - System.nanoTime();
            if (!drain.awaitUninterruptibly(Math.max(0, left), TimeUnit.NANOSECONDS)) {
                log.warn("iSCSI: a session of {} still executing commands after the drain timeout {}", iqn,
                        context.settings.drainTimeout());
            }
        }
        return drains.size();
    }

    /**
     * Graceful stop: closes the listeners, lets executing commands answer (up to the drain timeout),
     * closes every connection and stops the event loops. Idempotent.
     */
    @Override
    public synchronized void close() {
        if (acceptGroup == null) {
            return;
        }
        for (Channel ch : serverChannels) {
            ch.close().syncUninterruptibly();
        }
        serverChannels.clear();
        long deadline = System.nanoTime() + context.settings.drainTimeout().toNanos();
        List<Future<Void>> drains = new ArrayList<>();
        for (IscsiConnection connection : context.connections) {
            drains.add(connection.drain());
        }
        for (Future<Void> drain : drains) {
            long left = deadline - System.nanoTime();
            if (!drain.awaitUninterruptibly(Math.max(0, left), TimeUnit.NANOSECONDS)) {
                log.warn("iSCSI: commands still executing after the drain timeout {}; closing anyway",
                        context.settings.drainTimeout());
            }
        }
        shutdownGroups();
        log.info("iSCSI target stopped");
    }

    private void shutdownGroups() {
        ioGroup.shutdownGracefully(0, 2, TimeUnit.SECONDS).syncUninterruptibly();
        acceptGroup.shutdownGracefully(0, 2, TimeUnit.SECONDS).syncUninterruptibly();
        acceptGroup = null;
        ioGroup = null;
    }
}
