package io.stripestack.crypto.luks;

import java.io.IOException;

/**
 * A LUKS header that cannot be used: missing, corrupt (bad magic, checksum mismatch, malformed JSON,
 * inconsistent offsets) or using features this implementation does not support. The message names the
 * device, what is wrong and what to do; it never contains key material.
 */
public class LuksHeaderException extends IOException {
    private static final long serialVersionUID = 1L;

    public LuksHeaderException(String message) {
        super(message);
    }

    public LuksHeaderException(String message, Throwable cause) {
        super(message, cause);
    }
}
