package io.stripestack.targetserver.control;

import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * Closes a connection whose request has not fully arrived within a deadline from its accept, so a
 * client that sends half a request and waits (slowloris) holds nothing for long. The handler that
 * received the whole request calls {@link #requestComplete}.
 *
 * <p>Concurrency: lives on its channel's event loop.
 */
final class ConnectionDeadline extends ChannelInboundHandlerAdapter {
    private final long millis;
    private ScheduledFuture<?> timer;

    ConnectionDeadline(long millis) {
        this.millis = millis;
    }

    @Override
    public void channelActive(ChannelHandlerContext ctx) {
        timer = ctx.executor().schedule(() -> {
            ctx.close();
        }, millis, TimeUnit.MILLISECONDS);
        ctx.fireChannelActive();
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        requestComplete();
        ctx.fireChannelInactive();
    }

    void requestComplete() {
        if (timer != null) {
            timer.cancel(false);
            timer = null;
        }
    }
}
