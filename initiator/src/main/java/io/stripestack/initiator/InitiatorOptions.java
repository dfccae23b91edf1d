package io.stripestack.initiator;

import java.time.Duration;

/**
 * What the initiator offers at login and how long it waits. The values the target answers win where RFC 7143
 * says so (ImmediateData AND, InitialR2T OR, burst lengths minimum); see {@link IscsiInitiator#negotiated()}.
 *
 * @param maxTasks     commands in flight at most (ITT slots); callers beyond it wait for a free slot
 * @param headerDigest asked for at login and required of the target when CRC32C
 * @param dataDigest   asked for at login and required of the target when CRC32C
 */
public record InitiatorOptions(String initiatorIqn, boolean immediateData, boolean initialR2T,
        int maxRecvDataSegmentLength, int maxBurstLength, int firstBurstLength, int maxTasks,
        Duration connectTimeout, Duration commandTimeout, Digest headerDigest, Digest dataDigest) {

    public InitiatorOptions {
        if (maxTasks < 1 || maxTasks > 1024) {
            throw new IllegalArgumentException("maxTasks " + maxTasks + " is out of range 1..1024");
        }
        if (firstBurstLength > maxBurstLength) {
            throw new IllegalArgumentException("FirstBurstLength " + firstBurstLength + " exceeds MaxBurstLength "
                    + maxBurstLength);
        }
        if (headerDigest == null || dataDigest == null) {
            throw new IllegalArgumentException("the header and data digests must be given (Digest.NONE for none)");
        }
    }

    public static InitiatorOptions defaults() {
        return new InitiatorOptions("iqn.2026-11.io.stripestack:soak", true, false, 256 << 10, 1 << 20, 256 << 10,
                128, Duration.ofSeconds(10), Duration.ofSeconds(60), Digest.NONE, Digest.NONE);
    }

    public InitiatorOptions withBursts(boolean immediate, boolean initialR2t, int firstBurst, int maxBurst) {
        return new InitiatorOptions(initiatorIqn, immediate, initialR2t, maxRecvDataSegmentLength, maxBurst,
                firstBurst, maxTasks, connectTimeout, commandTimeout, headerDigest, dataDigest);
    }

    public InitiatorOptions withInitiatorIqn(String iqn) {
        return new InitiatorOptions(iqn, immediateData, initialR2T, maxRecvDataSegmentLength, maxBurstLength,
                firstBurstLength, maxTasks, connectTimeout, commandTimeout, headerDigest, dataDigest);
    }

    public InitiatorOptions withDigests(Digest header, Digest data) {
        return new InitiatorOptions(initiatorIqn, immediateData, initialR2T, maxRecvDataSegmentLength, maxBurstLength,
                firstBurstLength, maxTasks, connectTimeout, commandTimeout, header, data);
    }
}
