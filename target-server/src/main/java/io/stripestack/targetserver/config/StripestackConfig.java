package io.stripestack.targetserver.config;

import io.stripestack.initiator.IscsiUrl;
import io.stripestack.raid5.ConsistencyPolicy;
import io.stripestack.remote.RemoteMemberOptions;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;

/**
 * A whole configuration file, validated: every path resolved, every number in range. Immutable.
 * The keys and their meaning are documented in docs/configuration.md.
 */
public record StripestackConfig(Path file, Path dataDir, ServerConfig server, Map<String, ArrayConfig> arrays,
        List<TargetConfig> targets) {

    /**
     * Bind addresses, what SendTargets advertises (empty: the address each discovery connection arrived
     * on, so port 0 and wildcard binds advertise something reachable), and iSCSI limits offered at login.
     * {@code autosave}: every administration change is saved to the configuration file at once (saveconfig).
     */
    public record ServerConfig(List<Portal> portals, List<Portal> advertise, int portalGroupTag, int queueDepth,
            int ioThreads, int maxRecvDataSegmentLength, int maxBurstLength, int firstBurstLength,
            boolean immediateData, boolean initialR2T, int nopInIntervalSeconds, Path adminSocket,
            Portal metrics, long readaheadBudget, long writeBufferBudget, SessionLimits sessionLimits,
            boolean autosave) {
    }

    /**
     * What one initiator may hold of the server: Data-In of reads not yet taken (per session and in
     * total), connections (in total, per address, sessions per initiator name, silence while logging in),
     * a session's share of the write buffer budget, and the first delay after a failed CHAP login (doubling
     * per failure).
     */
    public record SessionLimits(long dataInBudget, long dataInPerSession, int maxConnections,
            long authFailureDelayMillis, int maxConnectionsPerAddress, int maxSessionsPerInitiator,
            int loginIdleTimeoutSeconds,
            long writeBufferPerSession) {
    }

    public record Portal(String host, int port) {
        /** {@code HOST[:PORT]} or {@code [IPV6][:PORT]}, port 3260 when not given; refused with the reason. */
        public static Portal parse(String text) {
            String t = text.trim();
            String host;
            String port;
            if (t.startsWith("[")) {
                int close = t.indexOf(']');
                if (close < 0) {
                    throw new IllegalArgumentException("'" + t + "' is not HOST:PORT ([::1]:3260 for IPv6)");
                }
                host = t.substring(1, close);
                port = t.length() > close + 1 && t.charAt(close + 1) == ':' ? t.substring(close + 2)
                        : Integer.toString(ServerDefaults.PORT);
            } else {
                int colon = t.lastIndexOf(':');
                host = colon < 0 ? t : t.substring(0, colon);
                port = colon < 0 ? Integer.toString(ServerDefaults.PORT) : t.substring(colon + 1);
            }
            try {
                int p = Integer.parseInt(port);
                if (p < 0 || p > 65535) {
                    throw new NumberFormatException();
                }
                return new Portal(host, p);
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("'" + t + "' is not HOST:PORT (port 0..65535; 0 picks a free port)", e);
            }
        }

        @Override
        public String toString() {
            return (host.contains(":") ? "[" + host + "]" : host) + ":" + port;
        }
    }

    /**
     * One md-compatible RAID-5 array. {@code createMemberSize} > 0 means: create the members with that
     * size when none of them exists yet (the embedded default does this). {@code bitmapChunkBytes}: member
     * bytes per write-intent bitmap bit when a bitmap is created (0: mdadm's 64 MiB).
     */
    public record ArrayConfig(String name, List<Path> members, List<Path> spares, int chunkBytes, String layout,
            long createMemberSize, boolean createSparse, int stripeCacheSize, boolean checkParityOnReads,
            boolean direct, boolean startDirtyDegraded, ConsistencyPolicy consistencyPolicy, long bitmapChunkBytes,
            RemoteMembersConfig remote) {
        public ArrayConfig {
            members = List.copyOf(members);
            spares = List.copyOf(spares);
        }

        /**
         * An array given at run time ({@code array create}): the rest as the loader's defaults (stripe cache and
         * consistency policy automatic, no parity check on reads, no O_DIRECT, mdadm's bitmap chunk).
         */
        public static ArrayConfig atRunTime(String name, List<Path> members, List<Path> spares,
                RemoteMembersConfig remote, int chunkBytes, String layout, long createMemberSize, boolean createSparse) {
            return new ArrayConfig(name, members, spares, chunkBytes, layout, createMemberSize, createSparse, 0, false,
                    false, false, null, 0, remote);
        }

        /** This array with these member and spare files and remote LUNs (after an add, a reshape, a replacement). */
        public ArrayConfig withMembers(List<Path> memberFiles, List<Path> spareFiles, RemoteMembersConfig remoteLuns) {
            return new ArrayConfig(name, memberFiles, spareFiles, chunkBytes, layout, createMemberSize, createSparse,
                    stripeCacheSize, checkParityOnReads, direct, startDirtyDegraded, consistencyPolicy, bitmapChunkBytes,
                    remoteLuns);
        }

        public ArrayConfig withChunkBytes(int chunk) {
            return new ArrayConfig(name, members, spares, chunk, layout, createMemberSize, createSparse,
                    stripeCacheSize, checkParityOnReads, direct, startDirtyDegraded, consistencyPolicy, bitmapChunkBytes,
                    remote);
        }

        /** With the stripe cache size an operator set (rows; 0: automatic). */
        public ArrayConfig withStripeCacheSize(int rows) {
            return new ArrayConfig(name, members, spares, chunkBytes, layout, createMemberSize, createSparse, rows,
                    checkParityOnReads, direct, startDirtyDegraded, consistencyPolicy, bitmapChunkBytes, remote);
        }

        public ArrayConfig withCheckParityOnReads(boolean on) {
            return new ArrayConfig(name, members, spares, chunkBytes, layout, createMemberSize, createSparse,
                    stripeCacheSize, on, direct, startDirtyDegraded, consistencyPolicy, bitmapChunkBytes, remote);
        }

        /** Every member and spare file, members first. */
        public List<Path> files() {
            List<Path> all = new java.util.ArrayList<>(members);
            all.addAll(spares);
            return List.copyOf(all);
        }
    }

    /** A member or spare on a remote target: the URL (no secret in it) and, for CHAP, the secret's file. */
    public record RemoteMemberConfig(IscsiUrl url, Path chapSecretFile) {
        /** How a remote member with CHAP is written, in the configuration file and at run time. */
        public static final String CHAP_FORM = "{url: iscsi://USER@HOST:PORT/IQN/LUN, chap_secret_file: FILE}";

        /**
         * Whether a member given at run time is meant as a URL (any {@code scheme://}, or {@code iscsi:} however
         * written): such a word is a remote LUN or refused, never taken for a file name.
         */
        public static boolean looksLikeUrl(String word) {
            return word.contains("://") || word.regionMatches(true, 0, "iscsi:", 0, 6);
        }

        /**
         * A remote member from its URL ({@code iscsi://[USER@]HOST[:PORT]/IQN/LUN}) and, with a CHAP user, the
         * file of its secret; refused, saying why, when the URL does not parse, carries a secret (it would be
         * written into the configuration file and logs) or names a user without a secret file or the reverse.
         */
        public static RemoteMemberConfig of(String text, Path secretFile) {
            IscsiUrl url = IscsiUrl.parse(text.trim());
            if (url.chapSecret() != null) {
                url.clearSecret();
                throw new IllegalArgumentException("a CHAP secret in the URL would sit in the configuration file; write"
                        + " it to a file only you can read (chmod 600) and give " + CHAP_FORM);
            }
            if (url.chapUser() != null && secretFile == null) {
                throw new IllegalArgumentException("the URL names CHAP user '" + url.chapUser() + "' but no secret"
                        + " file; give " + CHAP_FORM);
            }
            if (url.chapUser() == null && secretFile != null) {
                throw new IllegalArgumentException("chap_secret_file needs the CHAP user in the URL: " + CHAP_FORM);
            }
            return new RemoteMemberConfig(url, secretFile);
        }
    }

    /**
     * An array's members and spares on remote targets ({@code members} and {@code spares} of ArrayConfig are
     * its files) and how they are reached.
     */
    public record RemoteMembersConfig(List<RemoteMemberConfig> members, List<RemoteMemberConfig> spares,
            RemoteMemberOptions options) {
        public RemoteMembersConfig {
            members = List.copyOf(members);
            spares = List.copyOf(spares);
        }

        /** No remote members, the default options (an array of files). */
        public static RemoteMembersConfig none() {
            return new RemoteMembersConfig(List.of(), List.of(), RemoteMemberOptions.defaults());
        }

        public boolean isEmpty() {
            return members.isEmpty() && spares.isEmpty();
        }

        /** The same options with these members and spares. */
        public RemoteMembersConfig with(List<RemoteMemberConfig> remoteMembers, List<RemoteMemberConfig> remoteSpares) {
            return new RemoteMembersConfig(remoteMembers, remoteSpares, options);
        }

        /** The entry whose URL reads {@code name} (a remote device's name), or null. */
        public RemoteMemberConfig find(String name) {
            for (List<RemoteMemberConfig> list : List.of(members, spares)) {
                for (RemoteMemberConfig r : list) {
                    if (r.url().toString().equals(name)) {
                        return r;
                    }
                }
            }
            return null;
        }
    }

    /** {@code secretFile}: where the secret was read from, or null when it is inline in the configuration. */
    public record ChapConfig(String user, char[] secret, Path secretFile) {
        @Override
        public String toString() {
            return "ChapConfig[user=" + user + ", secret=<hidden>, secretFile=" + secretFile + "]";
        }
    }

    public record TargetConfig(String iqn, String alias, List<String> allowedInitiators, ChapConfig chap,
            ChapConfig mutualChap, List<LunConfig> luns) {
        public TargetConfig {
            allowedInitiators = List.copyOf(allowedInitiators);
            luns = List.copyOf(luns);
        }

        /** A target created at run time: no access list, no CHAP, no LUNs yet. */
        public static TargetConfig empty(String iqn, String alias) {
            return new TargetConfig(iqn, alias == null ? "" : alias, List.of(), null, null, List.of());
        }

        public TargetConfig withLuns(List<LunConfig> units) {
            return new TargetConfig(iqn, alias, allowedInitiators, chap, mutualChap, units);
        }

        public TargetConfig withAllowedInitiators(List<String> allowed) {
            return new TargetConfig(iqn, alias, allowed, chap, mutualChap, luns);
        }

        /** With these one-way and mutual CHAP credentials (null: none). */
        public TargetConfig withChap(ChapConfig oneWay, ChapConfig mutual) {
            return new TargetConfig(iqn, alias, allowedInitiators, oneWay, mutual, luns);
        }
    }

    /** What a LUN's stack stands on: an array by name, or a file (created with {@code createSize} if missing). */
    public record BackingConfig(String array, Path file, long createSize, boolean ram) {
    }

    /**
     * The optional crypto layer. Either plain dm-crypt parameters (cipher, key from key file or
     * passphrase file + hash, offset, skip, sector size) or {@code luks = true}: cipher, key size, offset
     * and sector size come from the LUKS header on the device below, unlocked with the key/passphrase file.
     * {@code createKey}: write a new random key file when it is missing and the device below was created
     * in this same start (never for existing data: a new key would make it unreadable).
     * {@code allowDiscards}: pass discards (UNMAP) down to the device below, like dm-crypt's
     * {@code allow_discards}; it reveals which sectors are unused. With LUKS2 the header's persistent
     * {@code allow-discards} flag allows them too.
     */
    public record CryptoConfig(boolean luks, String cipher, int keyBits, Path keyFile, Path passphraseFile,
            String hash, long offsetSectors, long skipSectors, int sectorSize, boolean ivLargeSectors,
            boolean createKey, boolean allowDiscards) {
    }

    /** {@code readAheadKb < 0} means the default: two full stripes of the device below. */
    public record ReadaheadConfig(int readAheadKb, boolean belowCrypto) {
    }

    public record LunConfig(int lun, BackingConfig backing, CryptoConfig crypto, ReadaheadConfig readahead,
            boolean readOnly, String serial) {
        public LunConfig withReadOnly(boolean on) {
            return new LunConfig(lun, backing, crypto, readahead, on, serial);
        }
    }
}
