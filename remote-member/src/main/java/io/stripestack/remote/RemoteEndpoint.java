package io.stripestack.remote;

import io.stripestack.initiator.InitiatorOptions;
import io.stripestack.initiator.IscsiInitiator;
import io.stripestack.initiator.IscsiUrl;
import io.stripestack.secrets.ChapSecretFile;
import java.io.IOException;
import java.nio.file.Path;

/**
 * Where a remote member lives: its target's URL (never with a secret in it) and, for CHAP, the file the
 * secret is read from. The secret is read afresh for every login and zeroed right after it, so it is in
 * memory only while a login runs, and a rotated secret file takes effect at the next reconnect. Immutable.
 */
public record RemoteEndpoint(IscsiUrl url, Path chapSecretFile) {
    public RemoteEndpoint {
        if (url.chapSecret() != null) {
            throw new IllegalArgumentException(url + ": the URL carries a CHAP secret; give it in a file");
        }
        if ((url.chapUser() == null) != (chapSecretFile == null)) {
            throw new IllegalArgumentException(url + ": CHAP needs both a user in the URL and a secret file");
        }
    }

    /** Logs in one session (with CHAP when configured). */
    IscsiInitiator login(InitiatorOptions options) throws IOException {
        if (chapSecretFile == null) {
            return IscsiInitiator.login(url, options);
        }
        IscsiUrl withSecret = new IscsiUrl(url.host(), url.port(), url.targetIqn(), url.lun(), url.chapUser(),
                ChapSecretFile.read(chapSecretFile));
        try {
            return IscsiInitiator.login(withSecret, options);
        } finally {
            withSecret.clearSecret();
        }
    }

    @Override
    public String toString() {
        return url.toString();
    }
}
