package io.stripestack.targetserver.scsi;

/**
 * How many third-party copies (EXTENDED COPY) are processed at once: the limits the Third-party Copy VPD page and
 * RECEIVE COPY OPERATING PARAMETERS report (TOTAL CONCURRENT COPIES, MAXIMUM CONCURRENT COPIES) and the transport
 * enforces. One copy asks for up to {@link CopyParameterList#MAX_SEGMENT_DESCRIPTORS} segments of 65,535 blocks
 * from a parameter list of a few hundred bytes, so copies are the cheapest way to make the server work: the
 * transport runs at most {@link #CONCURRENT_COPIES} of them at once in the whole server and one per session, and
 * keeps the others waiting, outside the I/O workers, their sessions served in turn; other commands never wait
 * behind them.
 */
public final class CopyLimits {
    /** Copies processed at once by the copy managers of all units together. */
    public static final int CONCURRENT_COPIES = 2;
    /** Copies one session (I_T nexus) has processed at once; its next one waits for it. */
    public static final int CONCURRENT_COPIES_PER_SESSION = 1;

    private CopyLimits() {
    }

    /** Whether the command asks the copy manager to copy (EXTENDED COPY, any service action). */
    public static boolean isCopy(ScsiCommand command) {
        return command.opcode() == Opcodes.EXTENDED_COPY;
    }
}
