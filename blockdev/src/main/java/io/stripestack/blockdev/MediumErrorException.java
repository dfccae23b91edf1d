package io.stripestack.blockdev;

import java.io.IOException;

/**
 * Data at {@link #offset()} cannot be read or written correctly: the SCSI layer answers MEDIUM ERROR
 * (unrecovered read error, or write error) with the failing LBA in the sense information field.
 */
public class MediumErrorException extends IOException {
    private static final long serialVersionUID = 1L;
    private final long offset;
    private final boolean write;

    public MediumErrorException(String message, long offset, boolean write, Throwable cause) {
        super(message, cause);
        this.offset = offset;
        this.write = write;
    }

    public MediumErrorException(String message, long offset, boolean write) {
        this(message, offset, write, null);
    }

    /** Byte offset, in the device that threw, of the first byte that could not be transferred. */
    public long offset() {
        return offset;
    }

    public boolean isWrite() {
        return write;
    }
}
