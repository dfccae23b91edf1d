/**
 * The iSCSI transport (RFC 7143) on Netty: {@link io.stripestack.targetserver.iscsi.IscsiServer} with its
 * {@link io.stripestack.targetserver.iscsi.IscsiServerSettings} and
 * {@link io.stripestack.targetserver.iscsi.IscsiTargetDefinition}s is the whole public surface.
 *
 * <h2>Pipeline and threads</h2>
 * Each TCP connection has {@code PduDecoder -> PduEncoder -> IscsiConnection} on one event loop,
 * which owns all connection and session state (MaxConnections is 1, so a session is its connection).
 * {@code IscsiConnection} hands each PDU's typed header view to the part that handles it; the parts reach it
 * only through narrow interfaces ({@code Wire}, {@code TaskPipeline}, {@code SessionTasks}), so none of them
 * names the connection.
 * SCSI commands run on the server's I/O executor ({@code IscsiTask} hops there and back); the event
 * loop never blocks, so a bare connect, an idle or a garbage-sending connection costs others nothing.
 *
 * <h2>Data path</h2>
 * Data-Out (immediate, unsolicited, R2T-solicited) is copied once from the receive buffer into one
 * pooled direct buffer of the Expected Data Transfer Length, the SCSI layer writes from it. Those
 * buffers come from the server-wide {@code WriteBufferBudget}: a write that does not fit waits
 * without R2Ts (its unsolicited data, at most FirstBurstLength, kept in a small buffer and copied
 * over once granted) or, when even that has no room, is answered TASK SET FULL. Data-In is
 * the SCSI layer's pooled buffer, sent as slices cut at the initiator's MaxRecvDataSegmentLength
 * (F bit at every MaxBurstLength), status collapsed into the last Data-In when GOOD without sense.
 * Per PDU everything is pooled: header buffers, slice views (pooled for pooled buffers) and the
 * recycled PDU holder; the typed header views ({@code PduHeader}) are kept per connection and
 * re-pointed at each PDU. Per command there is the task, its CDB and the ScsiCommand.
 *
 * <h2>Protocol choices</h2>
 * <ul>
 *   <li>ErrorRecoveryLevel 0: a header digest error closes the connection, a data digest error is
 *       rejected and closes it, a Data-Out DataSN error fails only its command (ABORTED COMMAND,
 *       DATA PHASE ERROR) without executing it; SNACK is rejected.</li>
 *   <li>CmdSN outside [ExpCmdSN, MaxCmdSN] is dropped silently; the window is the queue depth and
 *       widens as commands finish, which bounds the commands in flight per session.</li>
 *   <li>RFC 3720 keys: IFMarker/OFMarker are answered "No" (RFC 7143 section 13.25 allows it instead of
 *       Reject, and RFC 3720 initiators such as open-iscsi expect it), IFMarkInt/OFMarkInt "Reject".
 *       Session keys in a discovery session are "Irrelevant", unknown keys "NotUnderstood".</li>
 *   <li>Task management waits for executing tasks it aborts before answering (their responses are
 *       suppressed); LUN and target warm reset then call the router off the event loop.</li>
 *   <li>Limits below the RFC defaults (e.g. MaxBurstLength under 262144) only take effect when the
 *       initiator offers the key; the target does not offer keys on its own.</li>
 * </ul>
 */
package io.stripestack.targetserver.iscsi;
