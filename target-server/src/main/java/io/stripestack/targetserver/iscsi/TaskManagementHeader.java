package io.stripestack.targetserver.iscsi;

import io.stripestack.iscsi.proto.Bhs;

/** A Task Management Function Request (RFC 7143 section 11.5). */
final class TaskManagementHeader extends RequestHeader<TaskManagementHeader> {
    private static final int FUNCTION = 0x7f;
    private static final int REFERENCED_TASK_TAG = Bhs.REFERENCED_TASK_TAG_OFFSET;
    private static final int REF_CMD_SN = Bhs.REF_CMD_SN_OFFSET;

    /** The function code; {@link TaskManagement} names them. */
    int function() {
        return flags() & FUNCTION;
    }

    long lun() {
        return Bhs.decodeLun(getLong(LUN));
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
