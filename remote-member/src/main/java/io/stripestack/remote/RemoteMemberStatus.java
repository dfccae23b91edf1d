package io.stripestack.remote;

/**
 * A snapshot of one remote member, for {@code stripestack status} and /metrics.
 *
 * @param connectionsUp      sessions connected now, of {@code connections}
 * @param queueDepth         commands each session may have outstanding
 * @param inFlight           commands outstanding now, all sessions together
 * @param peakInFlight       the most one session's connection had outstanding at once
 * @param commands           commands completed since open
 * @param meanLatencyMicros  their mean time from issue to status
 * @param retries            commands issued again after a lost connection
 * @param reconnects         logins after a lost connection
 * @param protocolErrors     answers of the target that broke the protocol (docs/security.md, "Remote member targets")
 */
public record RemoteMemberStatus(String name, State state, int connectionsUp, int connections, int queueDepth,
        int inFlight, int peakInFlight, long commands, long meanLatencyMicros, long retries, long reconnects,
        long protocolErrors) {

    /** CONNECTED: every session up; RECONNECTING: within the retry window; FAILED: the window passed. */
    public enum State { CONNECTED, RECONNECTING, FAILED }
}
