package io.stripestack.targetserver.iscsi;

/**
 * The fields every initiator request numbered in the CmdSN window carries (RFC 7143 section
 * 11.3.5): all but Data-Out and SNACK.
 */
abstract class RequestHeader<V extends RequestHeader<V>> extends PduHeader<V> {
    private static final int CMD_SN = 24;
    private static final int EXP_STAT_SN = 28;

    final int cmdSn() {
        return getInt(CMD_SN);
    }

    final int expStatSn() {
        return getInt(EXP_STAT_SN);
    }
}
