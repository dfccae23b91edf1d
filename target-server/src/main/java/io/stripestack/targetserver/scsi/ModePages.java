package io.stripestack.targetserver.scsi;

import java.io.ByteArrayOutputStream;

/**
 * The mode pages of one logical unit: Caching (0x08), Control (0x0A) and Informational Exceptions
 * Control (0x1C), for MODE SENSE and MODE SELECT (SPC-4 7.5, SBC-3 6.4).
 *
 * <p>Two fields are changeable. WCE (caching page byte 2 bit 2): WCE=1 (the default) advertises the stack's
 * write-back behaviour: a write is acknowledged once the stack holds it, SYNCHRONIZE CACHE and FUA make it
 * durable. WCE=0 makes the logical unit write-through (every write is flushed before GOOD). SWP (control page
 * byte 4 bit 3, software write protect, SPC-4 7.5.8): while it is set the unit refuses every command that
 * modifies the medium with DATA PROTECT / WRITE PROTECTED and MODE SENSE reports WP; it is clear by default.
 * Pages are not saved across restarts, so saved values are not offered (PC=11b answers SAVING PARAMETERS NOT
 * SUPPORTED).
 *
 * <p>Concurrency: {@link #writeCacheEnabled()} and {@link #softwareWriteProtect()} are volatile reads on
 * every write command; a command that read SWP clear just before a MODE SELECT set it may still write, as a
 * command already in the task set. MODE SELECT
 * ({@link #select}) is serialized by this object's monitor so that validating a parameter list against the
 * current values and applying it is atomic with respect to other MODE SELECTs.
 */
final class ModePages {
    static final int CACHING = 0x08;
    static final int CONTROL = 0x0A;
    static final int INFORMATIONAL_EXCEPTIONS = 0x1C;
    static final int ALL_PAGES = 0x3F;

    static final int PC_CURRENT = 0;
    static final int PC_CHANGEABLE = 1;
    static final int PC_DEFAULT = 2;
    static final int PC_SAVED = 3;

    private static final int WCE = 0x04;
    private static final int SWP = 0x08;
    private static final int[] PAGE_ORDER = {CACHING, CONTROL, INFORMATIONAL_EXCEPTIONS};

    private volatile boolean writeCacheEnabled = true;
    private volatile boolean softwareWriteProtect;

    boolean writeCacheEnabled() {
        return writeCacheEnabled;
    }

    /** Whether the control page's SWP is set: the medium is write-protected until a MODE SELECT clears it. */
    boolean softwareWriteProtect() {
        return softwareWriteProtect;
    }

    /**
     * The mode pages MODE SENSE returns for {@code pageCode} (0x3F: all of them, ascending) and
     * {@code subpage} (0, or 0xFF with page 0x3F), in the page control {@code pc}.
     *
     * @param cdbPageByte index of the PAGE CODE byte in the CDB, for the sense field pointer
     */
    byte[] sense(int pageCode, int subpage, int pc, int cdbPageByte) {
        if (pc == PC_SAVED) {
            throw SenseException.savingParametersNotSupported();
        }
        if (pageCode == ALL_PAGES) {
            if (subpage != 0 && subpage != 0xFF) {
                throw SenseException.invalidFieldInCdb(cdbPageByte + 1, -1);
            }
            ByteArrayOutputStream all = new ByteArrayOutputStream(64);
            for (int code : PAGE_ORDER) {
                all.writeBytes(page(code, pc));
            }
            return all.toByteArray();
        }
        if (!isSupported(pageCode)) {
            throw SenseException.invalidFieldInCdb(cdbPageByte, 5);
        }
        if (subpage != 0) {
            throw SenseException.invalidFieldInCdb(cdbPageByte + 1, -1);
        }
        return page(pageCode, pc);
    }

    private static boolean isSupported(int pageCode) {
        return pageCode == CACHING || pageCode == CONTROL || pageCode == INFORMATIONAL_EXCEPTIONS;
    }

    private byte[] page(int code, int pc) {
        switch (code) {
            case CACHING: {
                byte[] p = new byte[20];
                p[0] = CACHING;
                p[1] = 0x12;
                if (pc == PC_CHANGEABLE) {
                    p[2] = WCE;
                } else if (pc == PC_DEFAULT || writeCacheEnabled) {
                    p[2] = WCE;
                }
                return p;
            }
            case CONTROL: {
                byte[] p = new byte[12];
                p[0] = CONTROL;
                p[1] = 0x0A;
                if (pc == PC_CHANGEABLE) {
                    p[4] = SWP;
                } else {
                    p[2] = 0x02;          // GLTSD: no log parameters are saved
                    p[3] = 0x10;          // QUEUE ALGORITHM MODIFIER 1: unrestricted reordering allowed
                    if (pc == PC_CURRENT && softwareWriteProtect) {
                        p[4] = SWP;
                    }
                    Cdb.put16(p, 8, 0xFFFF); // BUSY TIMEOUT PERIOD: unlimited
                }
                return p;
            }
            case INFORMATIONAL_EXCEPTIONS: {
                byte[] p = new byte[12];
                p[0] = INFORMATIONAL_EXCEPTIONS;
                p[1] = 0x0A;
                if (pc != PC_CHANGEABLE) {
                    p[2] = 0x08;          // DEXCPT: informational exception reporting disabled
                }
                return p;
            }
            default:
                throw new IllegalArgumentException("mode page 0x" + Integer.toHexString(code));
        }
    }

    /**
     * Validates and applies the mode pages of a MODE SELECT parameter list: {@code params[from, to)} holds
     * whole pages; {@code fieldBase} is added to indexes reported in sense field pointers. Every page must
     * be supported and of the right length, and differ from the current values only in changeable bits;
     * otherwise nothing is applied and INVALID FIELD IN PARAMETER LIST (or PARAMETER LIST LENGTH ERROR for a
     * truncated page) is thrown.
     *
     * @return whether any current value changed (the caller then raises MODE PARAMETERS CHANGED)
     */
    synchronized boolean select(byte[] params, int from, int to) {
        boolean newWce = writeCacheEnabled;
        boolean newSwp = softwareWriteProtect;
        int pos = from;
        while (pos < to) {
            if (to - pos < 2) {
                throw SenseException.parameterListLengthError();
            }
            int code = params[pos] & 0x3f;
            if ((params[pos] & 0x40) != 0 || !isSupported(code)) {
                throw SenseException.invalidFieldInParameterList(pos, -1);
            }
            byte[] current = page(code, PC_CURRENT);
            byte[] changeable = page(code, PC_CHANGEABLE);
            int length = (params[pos + 1] & 0xff) + 2;
            if (length != current.length) {
                throw SenseException.invalidFieldInParameterList(pos + 1, -1);
            }
            if (to - pos < length) {
                throw SenseException.parameterListLengthError();
            }
            for (int i = 2; i < length; i++) {
                if (((params[pos + i] ^ current[i]) & ~changeable[i]) != 0) {
                    throw SenseException.invalidFieldInParameterList(pos + i, -1);
                }
            }
            if (code == CACHING) {
                newWce = (params[pos + 2] & WCE) != 0;
            } else if (code == CONTROL) {
                newSwp = (params[pos + 4] & SWP) != 0;
            }
            pos += length;
        }
        boolean changed = newWce != writeCacheEnabled || newSwp != softwareWriteProtect;
        writeCacheEnabled = newWce;
        softwareWriteProtect = newSwp;
        return changed;
    }
}
