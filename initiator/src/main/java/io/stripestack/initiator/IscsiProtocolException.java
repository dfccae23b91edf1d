package io.stripestack.initiator;

import java.io.IOException;

/**
 * The target broke RFC 7143 in a way a working target never does: Data-In that does not cover a command's
 * transfer exactly, a data segment longer than we declared we receive, a PDU for a task that is not running, an
 * R2T outside the write, a connection closed in the middle of a PDU, a READ answered with fewer bytes than asked
 * and no residual. The connection it came on is dropped (or, for the short read, the command fails), and a caller
 * such as a remote array member counts it against its retry window instead of trusting the target again at once.
 */
public final class IscsiProtocolException extends IOException {
    public IscsiProtocolException(String message) {
        super(message);
    }
}
