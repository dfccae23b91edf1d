package io.stripestack.target.scsi;

/** REPORT SUPPORTED OPERATION CODES (SPC-4 6.35). */
final class SupportedOperations {
    private SupportedOperations() {
    }

    static void report(ScsiCommand cmd, byte[] cdb, LogicalUnit lu) {
        throw SenseException.invalidFieldInCdb(1, 4);
    }
}
