package io.stripestack.targetserver.iscsi;

/**
 * The iSCSI server's two buffer budgets at one moment (see {@link IscsiServer#bufferStats()}): the
 * Data-Out buffers of writes and the Data-In held for reads.
 */
public record BufferStats(WriteBufferStats writes, DataInStats reads) {
}
