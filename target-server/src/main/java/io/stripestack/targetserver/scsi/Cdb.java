package io.stripestack.targetserver.scsi;

/** Big-endian field access for CDBs, parameter lists and response data (SCSI is big-endian throughout). */
final class Cdb {
    private Cdb() {
    }

    static int u8(byte[] b, int i) {
        return b[i] & 0xff;
    }

    static int u16(byte[] b, int i) {
        return (b[i] & 0xff) << 8 | (b[i + 1] & 0xff);
    }

    static int u24(byte[] b, int i) {
        return (b[i] & 0xff) << 16 | (b[i + 1] & 0xff) << 8 | (b[i + 2] & 0xff);
    }

    /** Unsigned 32-bit value in a long. */
    static long u32(byte[] b, int i) {
        return ((long) (b[i] & 0xff) << 24) | (b[i + 1] & 0xff) << 16 | (b[i + 2] & 0xff) << 8 | (b[i + 3] & 0xff);
    }

    static long u64(byte[] b, int i) {
        return u32(b, i) << 32 | u32(b, i + 4);
    }

    static void put16(byte[] b, int i, int v) {
        b[i] = (byte) (v >>> 8);
        b[i + 1] = (byte) v;
    }

    static void put32(byte[] b, int i, long v) {
        b[i] = (byte) (v >>> 24);
        b[i + 1] = (byte) (v >>> 16);
        b[i + 2] = (byte) (v >>> 8);
        b[i + 3] = (byte) v;
    }

    static void put64(byte[] b, int i, long v) {
        put32(b, i, v >>> 32);
        put32(b, i + 4, v);
    }

    /** Copies {@code text} into {@code width} bytes at {@code i}, padded with ASCII spaces (SPC's left-aligned ASCII). */
    static void putAscii(byte[] b, int i, String text, int width) {
        for (int k = 0; k < width; k++) {
            b[i + k] = k < text.length() ? (byte) text.charAt(k) : (byte) ' ';
        }
    }
}
