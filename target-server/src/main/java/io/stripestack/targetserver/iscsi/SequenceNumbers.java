package io.stripestack.targetserver.iscsi;

import io.stripestack.iscsi.proto.Bhs;

/**
 * A session's sequence numbers (RFC 7143 section 4.2.2): the StatSN of its responses and its CmdSN
 * window [ExpCmdSN, MaxCmdSN], which every response carries.
 *
 * <p>Concurrency: owned by the connection's event loop.
 */
final class SequenceNumbers {
    private int statSn;
    private int expCmdSn;
    private int maxCmdSn;

    /** The first login request sets them: StatSN from its ExpStatSN, a window of {@code queueDepth} from its CmdSN. */
    void start(int expStatSn, int cmdSn, int queueDepth) {
        statSn = expStatSn;
        expCmdSn = cmdSn;
        maxCmdSn = cmdSn + queueDepth - 1;
    }

    /**
     * Checks a non-immediate PDU's CmdSN against the window and consumes its slot; false for one
     * outside it, which is dropped silently (RFC 7143 section 4.2.2.1). Immediate PDUs pass unchecked.
     */
    boolean accept(RequestHeader<?> request) {
        if (request.immediate()) {
            return true;
        }
        int cmdSn = request.cmdSn();
        if (!inWindow(cmdSn)) {
            return false;
        }
        // a gap can only come from an initiator skipping numbers: those slots count as used and returned
        maxCmdSn += cmdSn - expCmdSn;
        expCmdSn = cmdSn + 1;
        return true;
    }

    boolean inWindow(int cmdSn) {
        return !Bhs.snLessThan(cmdSn, expCmdSn) && !Bhs.snLessThan(maxCmdSn, cmdSn);
    }

    /** A non-immediate command finished: its CmdSN slot returns to the window. */
    void retire(boolean immediate) {
        if (!immediate) {
            maxCmdSn++;
        }
    }

    /** Stamps a response that takes the next StatSN, and the window. */
    void stamp(ResponseHeader<?> response) {
        response.statSn(statSn++);
        stampWindow(response);
    }

    /** Stamps the current StatSN without taking it (R2T, unsolicited NOP-In), and the window. */
    void stampCurrent(ResponseHeader<?> response) {
        response.statSn(statSn);
        stampWindow(response);
    }

    /** Stamps ExpCmdSN and MaxCmdSN only (a Data-In without status). */
    void stampWindow(ResponseHeader<?> response) {
        response.expCmdSn(expCmdSn).maxCmdSn(maxCmdSn);
    }

    String window() {
        return "[" + expCmdSn + ", " + maxCmdSn + "]";
    }
}
