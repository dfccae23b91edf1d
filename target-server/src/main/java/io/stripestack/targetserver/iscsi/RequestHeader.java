package io.stripestack.targetserver.iscsi;

import io.stripestack.iscsi.proto.Bhs;

/**
 * The fields every initiator request numbered in the CmdSN window carries (RFC 7143 section
 * 11.3.5): all but Data-Out and SNACK.
 */
abstract class RequestHeader<V extends RequestHeader<V>> extends PduHeader<V> {
    private static final int CMD_SN = Bhs.CMD_SN_OFFSET;
    private static final int EXP_STAT_SN = Bhs.EXP_STAT_SN_OFFSET;

    final int cmdSn() {
        return getInt(CMD_SN);
    }

    final int expStatSn() {
        return getInt(EXP_STAT_SN);
    }
}
