package io.stripestack.targetserver.iscsi;

/**
 * A snapshot of the server's Data-In budget (see {@link IscsiServer#dataInStats()}).
 *
 * @param budgetBytes     the configured budget of all sessions together
 * @param perSessionBytes the share one session may hold
 * @param bytesHeld       Data-In bytes held right now (reads dispatched whose data is not yet on the socket)
 * @param peakBytesHeld   the most ever held at once since the server started
 * @param readsWaited     reads that had to wait for room, since start
 */
public record DataInStats(long budgetBytes, long perSessionBytes, long bytesHeld, long peakBytesHeld, long readsWaited) {
}
