package io.stripestack.targetserver.scsi;

/** Operation codes (SPC-4, SBC-3) and service actions this layer knows. */
final class Opcodes {
    private Opcodes() {
    }

    static final int TEST_UNIT_READY = 0x00;
    static final int REQUEST_SENSE = 0x03;
    static final int READ_6 = 0x08;
    static final int WRITE_6 = 0x0A;
    static final int INQUIRY = 0x12;
    static final int MODE_SELECT_6 = 0x15;
    static final int RESERVE_6 = 0x16;
    static final int RELEASE_6 = 0x17;
    static final int MODE_SENSE_6 = 0x1A;
    static final int START_STOP_UNIT = 0x1B;
    static final int PREVENT_ALLOW_MEDIUM_REMOVAL = 0x1E;
    static final int READ_CAPACITY_10 = 0x25;
    static final int READ_10 = 0x28;
    static final int WRITE_10 = 0x2A;
    static final int WRITE_AND_VERIFY_10 = 0x2E;
    static final int VERIFY_10 = 0x2F;
    static final int PRE_FETCH_10 = 0x34;
    static final int SYNCHRONIZE_CACHE_10 = 0x35;
    static final int READ_DEFECT_DATA_10 = 0x37;
    static final int WRITE_SAME_10 = 0x41;
    static final int UNMAP = 0x42;
    static final int MODE_SELECT_10 = 0x55;
    static final int RESERVE_10 = 0x56;
    static final int RELEASE_10 = 0x57;
    static final int MODE_SENSE_10 = 0x5A;
    static final int PERSISTENT_RESERVE_IN = 0x5E;
    static final int PERSISTENT_RESERVE_OUT = 0x5F;
    static final int EXTENDED_COPY = 0x83;
    static final int RECEIVE_COPY_RESULTS = 0x84;
    static final int READ_16 = 0x88;
    static final int COMPARE_AND_WRITE = 0x89;
    static final int WRITE_16 = 0x8A;
    static final int ORWRITE_16 = 0x8B;
    static final int WRITE_AND_VERIFY_16 = 0x8E;
    static final int VERIFY_16 = 0x8F;
    static final int PRE_FETCH_16 = 0x90;
    static final int SYNCHRONIZE_CACHE_16 = 0x91;
    static final int WRITE_SAME_16 = 0x93;
    static final int SERVICE_ACTION_IN_16 = 0x9E;
    static final int REPORT_LUNS = 0xA0;
    static final int MAINTENANCE_IN = 0xA3;
    static final int READ_12 = 0xA8;
    static final int WRITE_12 = 0xAA;
    static final int WRITE_AND_VERIFY_12 = 0xAE;
    static final int VERIFY_12 = 0xAF;
    static final int READ_DEFECT_DATA_12 = 0xB7;

    /** SERVICE ACTION IN(16) service action. */
    static final int SA_READ_CAPACITY_16 = 0x10;
    /** SERVICE ACTION IN(16) service action. */
    static final int SA_GET_LBA_STATUS = 0x12;
    /** MAINTENANCE IN service action. */
    static final int SA_REPORT_SUPPORTED_OPERATION_CODES = 0x0C;
    /** EXTENDED COPY service action: the LID1 parameter list (one-byte list identifiers). */
    static final int SA_EXTENDED_COPY_LID1 = 0x00;
    /** RECEIVE COPY RESULTS service action. */
    static final int SA_COPY_STATUS = 0x00;
    /** RECEIVE COPY RESULTS service action. */
    static final int SA_RECEIVE_COPY_OPERATING_PARAMETERS = 0x03;
}
