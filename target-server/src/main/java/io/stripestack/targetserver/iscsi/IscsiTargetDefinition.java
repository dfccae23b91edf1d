package io.stripestack.targetserver.iscsi;

import io.stripestack.targetserver.scsi.ScsiCommandRouter;
import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.Set;

/**
 * One iSCSI target: its name, access list, CHAP credentials and the SCSI router behind it.
 *
 * <p>Secrets are copied in, never logged or put in messages ({@link #toString()} omits them), and
 * zeroed by {@link #close()}; the caller may zero its own arrays right after building.
 * Immutable after build apart from that zeroing; safe to share between event loops. Close it only
 * after the server using it stopped.
 */
public final class IscsiTargetDefinition implements AutoCloseable {
    private final String iqn;
    private final String alias;
    private final Set<String> allowedInitiators;
    private final String chapUser;
    private final byte[] chapSecret;
    private final String mutualChapUser;
    private final byte[] mutualChapSecret;
    private final ScsiCommandRouter router;

    private IscsiTargetDefinition(Builder b) {
        this.iqn = b.iqn;
        this.alias = b.alias;
        this.allowedInitiators = Set.copyOf(b.allowedInitiators);
        this.chapUser = b.chapUser;
        this.chapSecret = b.chapSecret;
        this.mutualChapUser = b.mutualChapUser;
        this.mutualChapSecret = b.mutualChapSecret;
        this.router = b.router;
    }

    /** Starts a definition for target {@code iqn} served by {@code router}. */
    public static Builder builder(String iqn, ScsiCommandRouter router) {
        return new Builder(iqn, router);
    }

    /**
     * A builder holding this definition's name, router, alias, access list and credentials (secrets copied), for
     * a changed definition that replaces this one at run time.
     */
    public Builder changed() {
        Builder b = new Builder(iqn, router).alias(alias).allowedInitiators(List.copyOf(allowedInitiators));
        if (chapSecret != null) {
            b.chap(chapUser, chapSecret);
        }
        if (mutualChapSecret != null) {
            b.mutualChap(mutualChapUser, mutualChapSecret);
        }
        return b;
    }

    /** The CHAP user name initiators authenticate as, or null without CHAP. */
    public String chapUserName() { return chapUser; }
    /** The user name the target answers mutual CHAP with, or null. */
    public String mutualChapUserName() { return mutualChapUser; }

    public String iqn() { return iqn; }
    /** TargetAlias declared at login, or null. */
    public String alias() { return alias; }
    /** Initiator names allowed to log in; empty = any initiator. */
    public Set<String> allowedInitiators() { return allowedInitiators; }
    public ScsiCommandRouter router() { return router; }
    /** Whether initiators must authenticate with CHAP. */
    public boolean chapRequired() { return chapSecret != null; }
    String chapUser() { return chapUser; }
    byte[] chapSecret() { return chapSecret; }
    /** Whether the target can answer an initiator's mutual CHAP challenge. */
    public boolean mutualChapConfigured() { return mutualChapSecret != null; }
    String mutualChapUser() { return mutualChapUser; }
    byte[] mutualChapSecret() { return mutualChapSecret; }

    boolean allows(String initiatorName) {
        return allowedInitiators.isEmpty() || allowedInitiators.contains(initiatorName);
    }

    /** Zeroes the CHAP secrets. */
    @Override
    public void close() {
        if (chapSecret != null) {
            Arrays.fill(chapSecret, (byte) 0);
        }
        if (mutualChapSecret != null) {
            Arrays.fill(mutualChapSecret, (byte) 0);
        }
    }

    @Override
    public String toString() {
        return "iSCSI target " + iqn + (chapRequired() ? " (CHAP)" : "");
    }

    /** Builder; not thread-safe. */
    public static final class Builder {
        private final String iqn;
        private final ScsiCommandRouter router;
        private String alias;
        private List<String> allowedInitiators = List.of();
        private String chapUser;
        private byte[] chapSecret;
        private String mutualChapUser;
        private byte[] mutualChapSecret;

        private Builder(String iqn, ScsiCommandRouter router) {
            this.iqn = Objects.requireNonNull(iqn, "target IQN");
            this.router = Objects.requireNonNull(router, "SCSI router");
        }

        public Builder alias(String targetAlias) { this.alias = targetAlias; return this; }

        /** Initiator IQNs allowed to log in; empty (the default) allows any. */
        public Builder allowedInitiators(List<String> initiatorNames) {
            this.allowedInitiators = List.copyOf(initiatorNames);
            return this;
        }

        /** Requires one-way CHAP: the initiator proves it knows {@code secret} (copied) as {@code user}. */
        public Builder chap(String user, byte[] secret) {
            zero(chapSecret);
            this.chapUser = Objects.requireNonNull(user, "CHAP user");
            this.chapSecret = secret.clone();
            return this;
        }

        /** {@link #chap(String, byte[])} with the secret's UTF-8 bytes. */
        public Builder chap(String user, char[] secret) {
            byte[] bytes = utf8(secret);
            try {
                return chap(user, bytes);
            } finally {
                Arrays.fill(bytes, (byte) 0);
            }
        }

        /** No CHAP: any initiator the access list allows logs in without authenticating (mutual CHAP goes too). */
        public Builder noChap() {
            zero(chapSecret);
            zero(mutualChapSecret);
            chapUser = null;
            chapSecret = null;
            mutualChapUser = null;
            mutualChapSecret = null;
            return this;
        }

        /** No mutual CHAP: the target no longer answers an initiator's challenge. */
        public Builder noMutualChap() {
            zero(mutualChapSecret);
            mutualChapUser = null;
            mutualChapSecret = null;
            return this;
        }

        private static void zero(byte[] secret) {
            if (secret != null) {
                Arrays.fill(secret, (byte) 0);
            }
        }

        /** Credentials the target answers an initiator's mutual CHAP challenge with (copied). */
        public Builder mutualChap(String user, byte[] secret) {
            zero(mutualChapSecret);
            this.mutualChapUser = Objects.requireNonNull(user, "mutual CHAP user");
            this.mutualChapSecret = secret.clone();
            return this;
        }

        /** {@link #mutualChap(String, byte[])} with the secret's UTF-8 bytes. */
        public Builder mutualChap(String user, char[] secret) {
            byte[] bytes = utf8(secret);
            try {
                return mutualChap(user, bytes);
            } finally {
                Arrays.fill(bytes, (byte) 0);
            }
        }

        private static byte[] utf8(char[] secret) {
            ByteBuffer encoded = StandardCharsets.UTF_8.encode(CharBuffer.wrap(secret));
            byte[] bytes = new byte[encoded.remaining()];
            encoded.get(bytes);
            if (encoded.hasArray()) {
                Arrays.fill(encoded.array(), (byte) 0);
            }
            return bytes;
        }

        public IscsiTargetDefinition build() {
            if (!iqn.startsWith("iqn.") && !iqn.startsWith("eui.") && !iqn.startsWith("naa.")) {
                throw new IllegalArgumentException("iSCSI target name '" + iqn
                        + "' is not an iqn./eui./naa. name: use e.g. iqn.2026-01.com.example:disk1");
            }
            if (chapSecret != null && (chapSecret.length < 12 || chapSecret.length > 255)) {
                throw new IllegalArgumentException("CHAP secret of target " + iqn
                        + " must be 12 to 255 bytes (RFC 7143 section 12.1.3 wants at least 96 bits)");
            }
            if (mutualChapSecret != null && chapSecret == null) {
                throw new IllegalArgumentException("target " + iqn
                        + ": mutual CHAP needs one-way CHAP as well; set chap user/secret too");
            }
            if (mutualChapSecret != null && chapSecret != null && Arrays.equals(mutualChapSecret, chapSecret)) {
                throw new IllegalArgumentException("target " + iqn
                        + ": the mutual CHAP secret must differ from the CHAP secret (RFC 7143 section 12.1.3)");
            }
            return new IscsiTargetDefinition(this);
        }
    }
}
