package io.stripestack.remote;

import io.stripestack.initiator.InitiatorOptions;
import java.time.Duration;

/**
 * How a remote member talks to its target: how many sessions it keeps (each one TCP connection), how many
 * commands each may have outstanding, how long a lost connection is retried before the member's I/O fails,
 * and the initiator's own timeouts and name.
 *
 * @param connections    sessions to the target, used round-robin (each carries {@code queueDepth} commands)
 * @param queueDepth     commands in flight per session at most (the initiator's task slots)
 * @param retryTimeout   how long I/O waits while a lost connection is logged in again, before it fails
 * @param commandTimeout a command unanswered this long counts as a lost connection
 * @param connectTimeout one TCP connect attempt
 */
public record RemoteMemberOptions(int connections, int queueDepth, Duration retryTimeout, Duration commandTimeout,
        Duration connectTimeout, String initiatorIqn) {
    public static final int MAX_CONNECTIONS = 16;

    public RemoteMemberOptions {
        if (connections < 1 || connections > MAX_CONNECTIONS) {
            throw new IllegalArgumentException("connections " + connections + " is out of range 1.." + MAX_CONNECTIONS);
        }
        if (queueDepth < 1 || queueDepth > 1024) {
            throw new IllegalArgumentException("queue depth " + queueDepth + " is out of range 1..1024");
        }
        if (retryTimeout.isNegative() || commandTimeout.isNegative() || commandTimeout.isZero()
                || connectTimeout.isNegative() || connectTimeout.isZero()) {
            throw new IllegalArgumentException("timeouts must be positive (the retry timeout may be 0: no retry)");
        }
    }

    public static RemoteMemberOptions defaults() {
        return new RemoteMemberOptions(2, 32, Duration.ofSeconds(30), Duration.ofSeconds(15), Duration.ofSeconds(5),
                "iqn.2026-11.io.stripestack:gateway");
    }

    public RemoteMemberOptions withRetryTimeout(Duration timeout) {
        return new RemoteMemberOptions(connections, queueDepth, timeout, commandTimeout, connectTimeout, initiatorIqn);
    }

    public RemoteMemberOptions withCommandTimeout(Duration timeout) {
        return new RemoteMemberOptions(connections, queueDepth, retryTimeout, timeout, connectTimeout, initiatorIqn);
    }

    public RemoteMemberOptions withConnections(int count, int depth) {
        return new RemoteMemberOptions(count, depth, retryTimeout, commandTimeout, connectTimeout, initiatorIqn);
    }

    /** What each session offers at login: the initiator's usual offers, this queue depth and these timeouts. */
    InitiatorOptions initiatorOptions() {
        InitiatorOptions d = InitiatorOptions.defaults();
        return new InitiatorOptions(initiatorIqn, d.immediateData(), d.initialR2T(), d.maxRecvDataSegmentLength(),
                d.maxBurstLength(), d.firstBurstLength(), queueDepth, connectTimeout, commandTimeout);
    }
}
