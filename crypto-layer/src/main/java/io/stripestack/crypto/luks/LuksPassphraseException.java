package io.stripestack.crypto.luks;

import java.io.IOException;

/**
 * No active keyslot accepts the passphrase (or the given keyslot does not). The message names where the
 * passphrase came from, never the passphrase.
 */
public class LuksPassphraseException extends IOException {
    private static final long serialVersionUID = 1L;

    public LuksPassphraseException(String message) {
        super(message);
    }
}
