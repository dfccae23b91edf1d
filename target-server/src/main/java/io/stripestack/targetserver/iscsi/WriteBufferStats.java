package io.stripestack.targetserver.iscsi;

/**
 * A snapshot of the server's write buffer budget (see {@link IscsiServer#writeBufferStats()}).
 *
 * @param budgetBytes               the configured budget for whole write buffers
 * @param unsolicitedAllowanceBytes extra room for unsolicited data of commands waiting for budget
 * @param bytesInUse                write buffer bytes held right now (budget and allowance)
 * @param peakBytesInUse            the most ever held at once since the server started
 * @param commandsWaiting           write commands waiting for budget right now (no R2T sent yet)
 * @param commandsWaited            write commands that had to wait for budget, since start
 * @param commandsRefused           write commands answered TASK SET FULL (allowance exhausted), since start
 */
public record WriteBufferStats(long budgetBytes, long unsolicitedAllowanceBytes, long bytesInUse,
        long peakBytesInUse, int commandsWaiting, long commandsWaited, long commandsRefused) {
}
