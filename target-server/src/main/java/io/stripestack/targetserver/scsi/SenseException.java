package io.stripestack.targetserver.scsi;

/**
 * A command ends in CHECK CONDITION: carries the sense key, additional sense code and qualifier, the
 * INFORMATION field and the sense-key-specific bytes, and renders them as fixed-format (0x70) sense data.
 * This is the one place of the SCSI layer that builds sense bytes: every condition it answers with has a
 * named factory here (REQUEST SENSE too renders one of them), so no caller writes an ASC/ASCQ pair itself.
 *
 * <p>Thrown only on error paths, never on a healthy I/O; it records no stack trace because it is a
 * protocol answer, not a bug.
 */
final class SenseException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    static final int NO_SENSE = 0x0;
    static final int MEDIUM_ERROR = 0x3;
    static final int HARDWARE_ERROR = 0x4;
    static final int ILLEGAL_REQUEST = 0x5;
    static final int UNIT_ATTENTION = 0x6;
    static final int DATA_PROTECT = 0x7;
    static final int COPY_ABORTED = 0xA;
    static final int ABORTED_COMMAND = 0xB;
    static final int MISCOMPARE = 0xE;

    /** Fixed-format sense data length: 8 header bytes plus an ADDITIONAL SENSE LENGTH of 10. */
    static final int FIXED_SENSE_LENGTH = 18;

    private final int senseKey;
    private final int asc;
    private final int ascq;
    private final long information;
    private final boolean informationValid;
    private final int senseKeySpecific;

    private SenseException(int senseKey, int asc, int ascq, long information, boolean informationValid,
            int senseKeySpecific, String message) {
        super(message, null, false, false);
        this.senseKey = senseKey;
        this.asc = asc;
        this.ascq = ascq;
        this.information = information;
        this.informationValid = informationValid;
        this.senseKeySpecific = senseKeySpecific;
    }

    private static SenseException of(int senseKey, int asc, int ascq, String message) {
        return new SenseException(senseKey, asc, ascq, 0, false, 0, message);
    }

    /** NO SENSE (0x00/0x00): what REQUEST SENSE reports when no condition is pending. */
    static SenseException noSense() {
        return of(NO_SENSE, 0x00, 0x00, "no sense");
    }

    /** UNIT ATTENTION with {@code code} (ASC << 8 | ASCQ, as {@link UnitAttentions} queues them). */
    static SenseException unitAttention(int code) {
        return of(UNIT_ATTENTION, code >>> 8, code & 0xff, "unit attention");
    }

    /** INVALID COMMAND OPERATION CODE (0x20/0x00), field pointer at the opcode byte. */
    static SenseException invalidOpcode(int opcode) {
        return new SenseException(ILLEGAL_REQUEST, 0x20, 0x00, 0, false, fieldPointer(true, 0, -1),
                "opcode 0x" + Integer.toHexString(opcode) + " not supported");
    }

    /** INVALID FIELD IN CDB (0x24/0x00) with a field pointer to the offending byte (and bit, or -1). */
    static SenseException invalidFieldInCdb(int byteIndex, int bit) {
        return new SenseException(ILLEGAL_REQUEST, 0x24, 0x00, 0, false, fieldPointer(true, byteIndex, bit),
                "invalid field in CDB byte " + byteIndex);
    }

    /** INVALID FIELD IN PARAMETER LIST (0x26/0x00) with a field pointer into the Data-Out buffer. */
    static SenseException invalidFieldInParameterList(int byteIndex, int bit) {
        return new SenseException(ILLEGAL_REQUEST, 0x26, 0x00, 0, false, fieldPointer(false, byteIndex, bit),
                "invalid field in parameter list byte " + byteIndex);
    }

    /** PARAMETER LIST LENGTH ERROR (0x1A/0x00). */
    static SenseException parameterListLengthError() {
        return of(ILLEGAL_REQUEST, 0x1A, 0x00, "parameter list length error");
    }

    /**
     * INVALID FIELD IN INFORMATION UNIT (0x0E/0x03): the Data-Out does not hold what the CDB describes
     * ({@code detail} says how; it is only logged).
     */
    static SenseException invalidFieldInInformationUnit(String detail) {
        return of(ILLEGAL_REQUEST, 0x0E, 0x03, detail);
    }

    /** SAVING PARAMETERS NOT SUPPORTED (0x39/0x00). */
    static SenseException savingParametersNotSupported() {
        return of(ILLEGAL_REQUEST, 0x39, 0x00, "saved mode pages not supported");
    }

    /** TOO MANY TARGET DESCRIPTORS (0x26/0x06): an EXTENDED COPY names more copy targets than the limit. */
    static SenseException tooManyTargetDescriptors() {
        return of(ILLEGAL_REQUEST, 0x26, 0x06, "too many target descriptors");
    }

    /** UNSUPPORTED TARGET DESCRIPTOR TYPE CODE (0x26/0x07), field pointer at the descriptor's type code. */
    static SenseException unsupportedTargetDescriptorType(int byteIndex) {
        return new SenseException(ILLEGAL_REQUEST, 0x26, 0x07, 0, false, fieldPointer(false, byteIndex, -1),
                "unsupported target descriptor type at parameter byte " + byteIndex);
    }

    /** TOO MANY SEGMENT DESCRIPTORS (0x26/0x08). */
    static SenseException tooManySegmentDescriptors() {
        return of(ILLEGAL_REQUEST, 0x26, 0x08, "too many segment descriptors");
    }

    /** UNSUPPORTED SEGMENT DESCRIPTOR TYPE CODE (0x26/0x09), field pointer at the descriptor's type code. */
    static SenseException unsupportedSegmentDescriptorType(int byteIndex) {
        return new SenseException(ILLEGAL_REQUEST, 0x26, 0x09, 0, false, fieldPointer(false, byteIndex, -1),
                "unsupported segment descriptor type at parameter byte " + byteIndex);
    }

    /** OPERATION IN PROGRESS (0x00/0x16): an EXTENDED COPY of the same nexus runs with the same list identifier. */
    static SenseException operationInProgress() {
        return of(ILLEGAL_REQUEST, 0x00, 0x16, "operation in progress");
    }

    /** COPY ABORTED / UNREACHABLE COPY TARGET (0x08/0x04): a segment names a target descriptor the list lacks. */
    static SenseException unreachableCopyTarget() {
        return of(COPY_ABORTED, 0x08, 0x04, "unreachable copy target");
    }

    /**
     * COPY ABORTED / COPY TARGET DEVICE NOT REACHABLE (0x0D/0x02): a copy target is not among the logical units
     * the copy manager reaches, or it refused or failed the copy's I/O (a range outside its medium, a read or
     * write error); the answer Linux LIO gives for the same conditions.
     */
    static SenseException copyTargetDeviceNotReachable(String detail) {
        return of(COPY_ABORTED, 0x0D, 0x02, detail);
    }

    /** INVALID RELEASE OF PERSISTENT RESERVATION (0x26/0x04). */
    static SenseException invalidReleaseOfPersistentReservation() {
        return of(ILLEGAL_REQUEST, 0x26, 0x04, "invalid release of persistent reservation");
    }

    /** LOGICAL BLOCK ADDRESS OUT OF RANGE (0x21/0x00). */
    static SenseException lbaOutOfRange() {
        return of(ILLEGAL_REQUEST, 0x21, 0x00, "LBA out of range");
    }

    /** LOGICAL UNIT NOT SUPPORTED (0x25/0x00). */
    static SenseException logicalUnitNotSupported() {
        return of(ILLEGAL_REQUEST, 0x25, 0x00, "logical unit not supported");
    }

    /** WRITE PROTECTED (DATA PROTECT 0x27/0x00). */
    static SenseException writeProtected() {
        return of(DATA_PROTECT, 0x27, 0x00, "write protected");
    }

    /** MISCOMPARE DURING VERIFY OPERATION (0x1D/0x00); INFORMATION = offset of the first differing byte. */
    static SenseException miscompare(long byteOffset) {
        return new SenseException(MISCOMPARE, 0x1D, 0x00, byteOffset, true, 0, "miscompare at byte " + byteOffset);
    }

    /** UNRECOVERED READ ERROR (0x11/0x00) or WRITE ERROR (0x0C/0x00) at {@code lba}. */
    static SenseException mediumError(boolean write, long lba) {
        return new SenseException(MEDIUM_ERROR, write ? 0x0C : 0x11, 0x00, lba, true, 0,
                (write ? "write" : "read") + " error at LBA " + lba);
    }

    /** WRITE ERROR (MEDIUM ERROR 0x0C/0x00) without an LBA: cached writes could not be made durable. */
    static SenseException flushFailed() {
        return of(MEDIUM_ERROR, 0x0C, 0x00, "flush failed");
    }

    /** DATA PHASE ERROR (ABORTED COMMAND 0x4B/0x00): the command's data did not arrive as the transport requires. */
    static SenseException dataPhaseError() {
        return of(ABORTED_COMMAND, 0x4B, 0x00, "data phase error");
    }

    /** INTERNAL TARGET FAILURE (HARDWARE ERROR 0x44/0x00): the device failed in a way that is not a medium error. */
    static SenseException internalTargetFailure() {
        return of(HARDWARE_ERROR, 0x44, 0x00, "internal target failure");
    }

    private static int fieldPointer(boolean inCdb, int byteIndex, int bit) {
        int sks = 0x800000 | (inCdb ? 0x400000 : 0) | (byteIndex & 0xffff);
        if (bit >= 0) {
            sks |= 0x080000 | (bit & 0x7) << 16;
        }
        return sks;
    }

    /**
     * Fixed-format sense data (SPC-4 4.5.3). The 4-byte INFORMATION field is marked VALID only when the
     * value fits in it (an LBA beyond 2^32 - 1 cannot be reported in fixed format).
     */
    byte[] toFixedFormat() {
        byte[] sense = new byte[FIXED_SENSE_LENGTH];
        boolean valid = informationValid && information >= 0 && information <= 0xFFFFFFFFL;
        sense[0] = (byte) (valid ? 0xF0 : 0x70);
        sense[2] = (byte) senseKey;
        if (valid) {
            Cdb.put32(sense, 3, information);
        }
        sense[7] = (byte) (FIXED_SENSE_LENGTH - 8);
        sense[12] = (byte) asc;
        sense[13] = (byte) ascq;
        sense[15] = (byte) (senseKeySpecific >>> 16);
        sense[16] = (byte) (senseKeySpecific >>> 8);
        sense[17] = (byte) senseKeySpecific;
        return sense;
    }
}
