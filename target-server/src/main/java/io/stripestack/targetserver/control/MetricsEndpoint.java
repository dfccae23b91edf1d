package io.stripestack.targetserver.control;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.HttpVersion;
import java.io.Closeable;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The Prometheus text endpoint ({@code GET /metrics}), off unless {@code server.metrics} is configured, and
 * bound to loopback only (the configuration refuses other addresses). Served by one Netty event loop:
 * any number of scrapers at once, each connection closed after its answer, and a connection whose
 * request has not arrived whole within {@link #REQUEST_DEADLINE_MILLIS} (a slowloris client) closed then,
 * so no client can keep the others from being answered. Requests are at most 8 KiB.
 */
public final class MetricsEndpoint implements Closeable {
    private static final Logger log = LoggerFactory.getLogger(MetricsEndpoint.class);
    static final long REQUEST_DEADLINE_MILLIS = 5000;
    private static final int MAX_REQUEST_BYTES = 8192;
    private final EventLoopGroup group;
    private final Channel channel;

    public MetricsEndpoint(InetSocketAddress address, ControlRegistry registry) throws IOException {
        this(address, registry, REQUEST_DEADLINE_MILLIS);
    }

    MetricsEndpoint(InetSocketAddress address, ControlRegistry registry, long requestDeadlineMillis) throws IOException {
        group = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
        ServerBootstrap bootstrap = new ServerBootstrap().group(group).channel(NioServerSocketChannel.class)
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        ConnectionDeadline deadline = new ConnectionDeadline(requestDeadlineMillis);
                        ch.pipeline().addLast(deadline)
                                .addLast(new HttpServerCodec(MAX_REQUEST_BYTES, MAX_REQUEST_BYTES, MAX_REQUEST_BYTES))
                                .addLast(new HttpObjectAggregator(MAX_REQUEST_BYTES))
                                .addLast(new Scrape(registry, deadline));
                    }
                });
        try {
            channel = bootstrap.bind(address).syncUninterruptibly().channel();
        } catch (RuntimeException e) {
            group.shutdownGracefully();
            throw new IOException("metrics: cannot listen on " + address + " (" + e.getMessage()
                    + "): free the port or change server.metrics", e);
        }
        log.info("metrics on http://{}:{}/metrics", address.getHostString(), port());
    }

    public int port() {
        return ((InetSocketAddress) channel.localAddress()).getPort();
    }

    @Override
    public void close() {
        channel.close().syncUninterruptibly();
        group.shutdownGracefully(0, 1, java.util.concurrent.TimeUnit.SECONDS).syncUninterruptibly();
    }

    private static final class Scrape extends SimpleChannelInboundHandler<FullHttpRequest> {
        private final ControlRegistry registry;
        private final ConnectionDeadline deadline;

        Scrape(ControlRegistry registry, ConnectionDeadline deadline) {
            this.registry = registry;
            this.deadline = deadline;
        }

        @Override
        protected void channelRead0(ChannelHandlerContext ctx, FullHttpRequest request) {
            deadline.requestComplete();
            FullHttpResponse response;
            if (!request.decoderResult().isSuccess()) {
                response = status(HttpResponseStatus.BAD_REQUEST);
            } else if (!request.method().equals(HttpMethod.GET)) {
                response = status(HttpResponseStatus.METHOD_NOT_ALLOWED);
            } else if (!request.uri().equals("/metrics") && !request.uri().startsWith("/metrics?")) {
                response = status(HttpResponseStatus.NOT_FOUND);
            } else {
                ByteBuf body = Unpooled.copiedBuffer(registry.metrics(), StandardCharsets.UTF_8);
                response = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.OK, body);
                response.headers().set(HttpHeaderNames.CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8");
            }
            response.headers().setInt(HttpHeaderNames.CONTENT_LENGTH, response.content().readableBytes());
            response.headers().set(HttpHeaderNames.CONNECTION, "close");
            ctx.writeAndFlush(response).addListener(ChannelFutureListener.CLOSE);
        }

        private static FullHttpResponse status(HttpResponseStatus status) {
            return new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, status, Unpooled.EMPTY_BUFFER);
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            log.debug("metrics client dropped: {}", cause.toString());
            ctx.close();
        }
    }
}
