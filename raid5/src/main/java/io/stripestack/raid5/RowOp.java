package io.stripestack.raid5;

/** What one row operation does: a caller's write, a discard, or a step of a sync pass (md's action names). */
enum RowOp {
    WRITE("write"), ZERO("discard"), RESYNC("resync"), RECOVER("recover"), CHECK("check"), REPAIR("repair");

    final String label;

    RowOp(String label) {
        this.label = label;
    }
}
