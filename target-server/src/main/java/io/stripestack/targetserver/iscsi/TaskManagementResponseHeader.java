package io.stripestack.targetserver.iscsi;

import io.stripestack.iscsi.proto.Bhs;

/** A Task Management Function Response (RFC 7143 section 11.6). */
final class TaskManagementResponseHeader extends ResponseHeader<TaskManagementResponseHeader> {
    TaskManagementResponseHeader() {
        super(Bhs.OP_TASK_MGMT_RESPONSE);
    }

    /** The response code; {@link TaskManagement} names them. */
    TaskManagementResponseHeader response(int response) {
        setByte(RESPONSE, response);
        return this;
    }
}
