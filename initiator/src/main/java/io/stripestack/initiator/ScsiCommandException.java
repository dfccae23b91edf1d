package io.stripestack.initiator;

import java.io.IOException;

/**
 * A SCSI command the target answered with a status other than GOOD. For CHECK CONDITION the sense key,
 * additional sense code and qualifier are decoded (fixed or descriptor format); they are -1 when the target
 * sent no sense data.
 */
public final class ScsiCommandException extends IOException {
    public static final int CHECK_CONDITION = 0x02;
    public static final int SENSE_UNIT_ATTENTION = 0x6;

    private final int status;
    private final int senseKey;
    private final int asc;
    private final int ascq;

    public ScsiCommandException(String command, int status, int senseKey, int asc, int ascq) {
        super(command + " failed: " + describe(status, senseKey, asc, ascq));
        this.status = status;
        this.senseKey = senseKey;
        this.asc = asc;
        this.ascq = ascq;
    }

    private static String describe(int status, int key, int asc, int ascq) {
        String s = String.format("SCSI status 0x%02x (%s)", status, statusName(status));
        if (key >= 0) {
            s += String.format(", sense key 0x%x (%s), ASC/ASCQ 0x%02x/0x%02x", key, senseKeyName(key), asc, ascq);
        }
        return s;
    }

    private static String statusName(int status) {
        return switch (status) {
            case 0x02 -> "CHECK CONDITION";
            case 0x08 -> "BUSY";
            case 0x18 -> "RESERVATION CONFLICT";
            case 0x28 -> "TASK SET FULL";
            case 0x40 -> "TASK ABORTED";
            default -> "unexpected";
        };
    }

    private static String senseKeyName(int key) {
        return switch (key) {
            case 0x0 -> "NO SENSE";
            case 0x1 -> "RECOVERED ERROR";
            case 0x2 -> "NOT READY";
            case 0x3 -> "MEDIUM ERROR";
            case 0x4 -> "HARDWARE ERROR";
            case 0x5 -> "ILLEGAL REQUEST";
            case 0x6 -> "UNIT ATTENTION";
            case 0x7 -> "DATA PROTECT";
            case 0xb -> "ABORTED COMMAND";
            case 0xe -> "MISCOMPARE";
            default -> "other";
        };
    }

    public int status() {
        return status;
    }

    /** The sense key, or -1 without sense data. */
    public int senseKey() {
        return senseKey;
    }

    public int asc() {
        return asc;
    }

    public int ascq() {
        return ascq;
    }
}
