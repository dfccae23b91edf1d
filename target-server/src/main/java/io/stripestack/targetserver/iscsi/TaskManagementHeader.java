package io.stripestack.targetserver.iscsi;

/** A Task Management Function Request (RFC 7143 section 11.5). */
final class TaskManagementHeader extends RequestHeader<TaskManagementHeader> {
    private static final int FUNCTION = 0x7f;
    private static final int REFERENCED_TASK_TAG = 20;
    private static final int REF_CMD_SN = 32;

    /** The function code; {@link TaskManagement} names them. */
    int function() {
        return flags() & FUNCTION;
    }

    long lun() {
        return decodeLun(getLong(LUN));
    }

    /** ABORT TASK: the ITT of the task to abort. */
    int referencedTaskTag() {
        return getInt(REFERENCED_TASK_TAG);
    }

    /** ABORT TASK: the CmdSN of the task to abort. */
    int refCmdSn() {
        return getInt(REF_CMD_SN);
    }
}
