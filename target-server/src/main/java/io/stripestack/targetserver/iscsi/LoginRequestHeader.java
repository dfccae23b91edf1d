package io.stripestack.targetserver.iscsi;

import io.stripestack.iscsi.proto.Bhs;

/** A Login Request (RFC 7143 section 11.12); the response keeps ISID and TSIH at the same place. */
final class LoginRequestHeader extends RequestHeader<LoginRequestHeader> {
    static final int TRANSIT_BIT = Bhs.FINAL_BIT;
    static final int CURRENT_STAGE_SHIFT = Bhs.CURRENT_STAGE_SHIFT;
    private static final int STAGE_MASK = Bhs.STAGE_MASK;
    /** The 6-byte ISID, and the 2-byte TSIH right after it. */
    static final int ISID = Bhs.ISID_OFFSET;
    static final int TSIH = Bhs.TSIH_OFFSET;
    private static final int VERSION_MIN = Bhs.VERSION_MIN_OFFSET;

    boolean transit() {
        return (flags() & TRANSIT_BIT) != 0;
    }

    boolean continues() {
        return (flags() & CONTINUE_BIT) != 0;
    }

    int currentStage() {
        return (flags() >> CURRENT_STAGE_SHIFT) & STAGE_MASK;
    }

    int nextStage() {
        return flags() & STAGE_MASK;
    }

    int versionMin() {
        return getByte(VERSION_MIN) & 0xff;
    }

    long isid() {
        return getLong(ISID) >>> 16;
    }

    int tsih() {
        return getUnsignedShort(TSIH);
    }
}
