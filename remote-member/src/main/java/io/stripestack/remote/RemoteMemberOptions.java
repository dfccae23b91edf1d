package io.stripestack.remote;

import io.stripestack.initiator.Digest;
import io.stripestack.initiator.InitiatorOptions;
import java.time.Duration;

/**
 * How a remote member talks to its target: how many sessions it keeps (each one TCP connection), how many
 * commands each may have outstanding, how long a lost connection is retried before the member's I/O fails,
 * the initiator's own timeouts and name, and the digests it requires of the target.
 *
 * @param connections    sessions to the target, used round-robin (each carries {@code queueDepth} commands)
 * @param queueDepth     commands in flight per session at most (the initiator's task slots)
 * @param retryTimeout   how long I/O waits while a lost connection is logged in again, before it fails
 * @param commandTimeout a command unanswered this long counts as a lost connection
 * @param connectTimeout one TCP connect attempt
 * @param headerDigest   CRC32C over every PDU header, or none; a digest error drops the connection, which is
 *                       then retried like any lost one
 * @param dataDigest     CRC32C over every data segment, or none
 */
public record RemoteMemberOptions(int connections, int queueDepth, Duration retryTimeout, Duration commandTimeout,
        Duration connectTimeout, String initiatorIqn, Digest headerDigest, Digest dataDigest) {
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
        if (headerDigest == null || dataDigest == null) {
            throw new IllegalArgumentException("the header and data digests must be given (Digest.NONE for none)");
        }
    }

    public static RemoteMemberOptions defaults() {
        return new RemoteMemberOptions(2, 32, Duration.ofSeconds(30), Duration.ofSeconds(15), Duration.ofSeconds(5),
                "iqn.2026-11.io.stripestack:gateway", Digest.NONE, Digest.NONE);
    }

    public RemoteMemberOptions withRetryTimeout(Duration timeout) {
        return new RemoteMemberOptions(connections, queueDepth, timeout, commandTimeout, connectTimeout, initiatorIqn, headerDigest,
                dataDigest);
    }

    public RemoteMemberOptions withCommandTimeout(Duration timeout) {
        return new RemoteMemberOptions(connections, queueDepth, retryTimeout, timeout, connectTimeout, initiatorIqn, headerDigest,
                dataDigest);
    }

    public RemoteMemberOptions withConnections(int count, int depth) {
        return new RemoteMemberOptions(count, depth, retryTimeout, commandTimeout, connectTimeout, initiatorIqn, headerDigest,
                dataDigest);
    }

    public RemoteMemberOptions withDigests(Digest header, Digest data) {
        return new RemoteMemberOptions(connections, queueDepth, retryTimeout, commandTimeout, connectTimeout,
                initiatorIqn, header, data);
    }

    /**
     * What each session offers at login: the initiator's usual offers, this queue depth, these timeouts and
     * digests.
     */
    InitiatorOptions initiatorOptions() {
        InitiatorOptions d = InitiatorOptions.defaults();
        return new InitiatorOptions(initiatorIqn, d.immediateData(), d.initialR2T(), d.maxRecvDataSegmentLength(),
                d.maxBurstLength(), d.firstBurstLength(), queueDepth, connectTimeout, commandTimeout, headerDigest,
                dataDigest);
    }
}
