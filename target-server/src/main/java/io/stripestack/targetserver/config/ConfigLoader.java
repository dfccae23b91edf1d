package io.stripestack.targetserver.config;

import io.stripestack.blockdev.Sizes;
import io.stripestack.secrets.ChapSecretFile;
import io.stripestack.targetserver.config.StripestackConfig.ArrayConfig;
import io.stripestack.targetserver.config.StripestackConfig.BackingConfig;
import io.stripestack.targetserver.config.StripestackConfig.ChapConfig;
import io.stripestack.targetserver.config.StripestackConfig.CryptoConfig;
import io.stripestack.targetserver.config.StripestackConfig.LunConfig;
import io.stripestack.targetserver.config.StripestackConfig.Portal;
import io.stripestack.targetserver.config.StripestackConfig.ReadaheadConfig;
import io.stripestack.targetserver.config.StripestackConfig.ServerConfig;
import io.stripestack.targetserver.config.StripestackConfig.TargetConfig;
import io.stripestack.raid5.ConsistencyPolicy;
import io.stripestack.raid5.Raid5Config;
import java.io.IOException;
import java.io.Reader;
import java.io.StringReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.Yaml;
import org.yaml.snakeyaml.error.MarkedYAMLException;
import org.yaml.snakeyaml.nodes.Node;

/**
 * Reads and validates a stripestack YAML configuration. Every error names the file, the line, the key
 * and what would be valid. Relative paths resolve against {@code data_dir} (member and key files) or the
 * current directory ({@code data_dir} itself); see docs/configuration.md.
 */
public final class ConfigLoader {
    public static final List<String> LAYOUTS = List.of("left-asymmetric", "right-asymmetric", "left-symmetric", "right-symmetric");

    private ConfigLoader() {
    }

    public static StripestackConfig load(Path file) throws ConfigException {
        String text;
        try {
            text = Files.readString(file, StandardCharsets.UTF_8);
        } catch (NoSuchFileException e) {
            throw new ConfigException(file + ": no such configuration file; conf/ has examples, and without --config"
                    + " the embedded default (conf/default.yaml) runs", e);
        } catch (IOException e) {
            throw new ConfigException(file + ": cannot read the configuration file (" + e.getMessage() + ")", e);
        }
        return parse(file.toString(), text, Path.of(""));
    }

    /**
     * Parses configuration text. {@code workDir} is where a relative {@code data_dir} resolves (the
     * current directory for a file given on the command line).
     */
    public static StripestackConfig parse(String fileName, String text, Path workDir) throws ConfigException {
        Node rootNode;
        try (Reader reader = new StringReader(text)) {
            rootNode = new Yaml(new LoaderOptions()).compose(reader);
        } catch (MarkedYAMLException e) {
            int line = e.getProblemMark() == null ? 0 : e.getProblemMark().getLine() + 1;
            throw new ConfigException(fileName + ":" + line + ": not valid YAML: " + e.getProblem());
        } catch (IOException | RuntimeException e) {
            throw new ConfigException(fileName + ": not valid YAML: " + e.getMessage());
        }
        if (rootNode == null) {
            throw new ConfigException(fileName + ": the file is empty; see conf/default.yaml for a working example");
        }
        YamlNode root = new YamlNode(fileName, "", rootNode);
        YamlNode dataDirNode = root.child("data_dir");
        Path dataDir = workDir.resolve(dataDirNode == null ? "data" : dataDirNode.string()).normalize();

        ServerConfig server = server(root.child("server"), dataDir);
        Map<String, ArrayConfig> arrays = new LinkedHashMap<>();
        YamlNode arraysNode = root.child("arrays");
        if (arraysNode != null) {
            for (Map.Entry<String, YamlNode> e : arraysNode.mapping().entrySet()) {
                arrays.put(e.getKey(), array(e.getKey(), e.getValue(), dataDir));
            }
        }
        List<TargetConfig> targets = new ArrayList<>();
        Set<String> iqns = new HashSet<>();
        Set<String> arraysUsed = new HashSet<>();
        for (YamlNode t : root.required("targets").list()) {
            TargetConfig target = target(t, dataDir, arrays, arraysUsed);
            if (!iqns.add(target.iqn())) {
                throw t.error("target " + target.iqn() + " is defined twice");
            }
            targets.add(target);
        }
        if (targets.isEmpty()) {
            throw root.required("targets").error("at least one target is needed");
        }
        root.rejectUnknownKeys();
        return new StripestackConfig(Path.of(fileName), dataDir, server, arrays, targets);
    }

    private static ServerConfig server(YamlNode n, Path dataDir) throws ConfigException {
        List<Portal> portals = new ArrayList<>();
        List<Portal> advertise = new ArrayList<>();
        int tpgt = ServerDefaults.PORTAL_GROUP_TAG;
        int queueDepth = ServerDefaults.QUEUE_DEPTH;
        int ioThreads = 16;
        int mrdsl = ServerDefaults.MAX_RECV_DATA_SEGMENT_LENGTH;
        int maxBurst = ServerDefaults.MAX_BURST_LENGTH;
        int firstBurst = ServerDefaults.FIRST_BURST_LENGTH;
        boolean immediateData = ServerDefaults.IMMEDIATE_DATA;
        boolean initialR2T = ServerDefaults.INITIAL_R2T;
        int nopIn = ServerDefaults.NOP_IN_INTERVAL_SECONDS;
        Path admin = dataDir.resolve("stripestack.sock");
        Portal metrics = null;
        long readaheadBudget = 64L << 20;
        long writeBufferBudget = ServerDefaults.WRITE_BUFFER_BUDGET;
        long dataInBudget = ServerDefaults.DATA_IN_BUDGET;
        long dataInPerSession = ServerDefaults.DATA_IN_PER_SESSION;
        int maxConnections = ServerDefaults.MAX_CONNECTIONS;
        int authFailureDelayMillis = ServerDefaults.AUTH_FAILURE_DELAY_MILLIS;
        int perAddress = ServerDefaults.MAX_CONNECTIONS_PER_ADDRESS;
        int perInitiator = ServerDefaults.MAX_SESSIONS_PER_INITIATOR;
        int loginIdle = ServerDefaults.LOGIN_IDLE_TIMEOUT_SECONDS;
        long writeBufferPerSession = ServerDefaults.WRITE_BUFFER_PER_SESSION;
        boolean autosave = false;
        if (n != null) {
            autosave = boolOr(n.child("autosave"), false);
            YamlNode p = n.child("portals");
            if (p != null) {
                for (YamlNode item : p.list()) {
                    portals.add(portal(item));
                }
            }
            YamlNode a = n.child("advertise");
            if (a != null) {
                for (YamlNode item : a.list()) {
                    advertise.add(portal(item));
                }
            }
            tpgt = intOr(n.child("portal_group_tag"), 1, 65535, tpgt);
            queueDepth = intOr(n.child("queue_depth"), 1, 4096, queueDepth);
            ioThreads = intOr(n.child("io_threads"), 1, 1024, ioThreads);
            mrdsl = sizeOr(n.child("max_recv_data_segment_length"), 512, 16777215, mrdsl);
            maxBurst = sizeOr(n.child("max_burst_length"), 512, 16777215, maxBurst);
            firstBurst = sizeOr(n.child("first_burst_length"), 512, 16777215, firstBurst);
            immediateData = boolOr(n.child("immediate_data"), immediateData);
            initialR2T = boolOr(n.child("initial_r2t"), initialR2T);
            nopIn = intOr(n.child("nop_in_interval_seconds"), 0, 3600, nopIn);
            YamlNode adminNode = n.child("admin_socket");
            if (adminNode != null) {
                admin = dataDir.resolve(adminNode.string());
            }
            YamlNode budget = n.child("readahead_budget");
            if (budget != null) {
                readaheadBudget = budget.size(1L << 20, 1L << 36);
            }
            YamlNode writeBudget = n.child("write_buffer_budget");
            if (writeBudget != null) {
                writeBufferBudget = writeBudget.size(ServerDefaults.MIN_BUDGET, ServerDefaults.MAX_BUDGET);
            }
            YamlNode dataIn = n.child("data_in_budget");
            if (dataIn != null) {
                dataInBudget = dataIn.size(ServerDefaults.MIN_BUDGET, ServerDefaults.MAX_BUDGET);
            }
            YamlNode perSession = n.child("data_in_per_session");
            if (perSession != null) {
                dataInPerSession = perSession.size(ServerDefaults.MIN_BUDGET, dataInBudget);
            } else {
                dataInPerSession = Math.min(dataInPerSession, dataInBudget);
            }
            maxConnections = intOr(n.child("max_connections"), 1, 65536, maxConnections);
            authFailureDelayMillis = intOr(n.child("auth_failure_delay_ms"), 0, 60000, authFailureDelayMillis);
            perAddress = intOr(n.child("max_connections_per_address"), 1, 65536, perAddress);
            perInitiator = intOr(n.child("max_sessions_per_initiator"), 1, 65536, perInitiator);
            loginIdle = intOr(n.child("login_idle_timeout_seconds"), 1, 3600, loginIdle);
            YamlNode writePerSession = n.child("write_buffer_per_session");
            writeBufferPerSession = writePerSession != null
                    ? writePerSession.size(ServerDefaults.MIN_BUDGET, writeBufferBudget)
                    : Math.min(writeBufferPerSession, writeBufferBudget);
            YamlNode m = n.child("metrics");
            if (m != null) {
                metrics = portal(m);
                if (!isLoopback(metrics.host())) {
                    throw m.error("the metrics endpoint listens on loopback only (127.0.0.1 or [::1])");
                }
            }
            if (firstBurst > maxBurst) {
                throw n.error("first_burst_length " + firstBurst + " exceeds max_burst_length " + maxBurst
                        + " (RFC 7143 requires FirstBurstLength <= MaxBurstLength)");
            }
            n.rejectUnknownKeys();
        }
        if (portals.isEmpty()) {
            portals.add(new Portal("127.0.0.1", ServerDefaults.PORT));
        }
        return new ServerConfig(List.copyOf(portals), List.copyOf(advertise), tpgt, queueDepth, ioThreads, mrdsl,
                maxBurst, firstBurst, immediateData, initialR2T, nopIn, admin, metrics, readaheadBudget, writeBufferBudget,
                new StripestackConfig.SessionLimits(dataInBudget, dataInPerSession, maxConnections,
                        authFailureDelayMillis, perAddress, perInitiator, loginIdle, writeBufferPerSession),
                autosave);
    }

    private static boolean isLoopback(String host) {
        return host.equals("localhost") || host.startsWith("127.") || host.equals("::1");
    }

    private static Portal portal(YamlNode n) throws ConfigException {
        try {
            return Portal.parse(n.string());
        } catch (IllegalArgumentException e) {
            throw n.error(e.getMessage());
        }
    }

    private static ArrayConfig array(String name, YamlNode n, Path dataDir) throws ConfigException {
        MemberEntries.Parsed memberEntries = MemberEntries.parse(n.required("members"), dataDir);
        List<Path> members = memberEntries.files();
        if (memberEntries.count() < 3) {
            throw n.required("members").error("RAID-5 needs at least 3 members, " + memberEntries.count() + " given");
        }
        if (new HashSet<>(members).size() != members.size()) {
            throw n.required("members").error("a member file is listed twice");
        }
        MemberEntries.Parsed spareEntries = MemberEntries.parse(n.child("spares"), dataDir);
        List<Path> spares = spareEntries.files();
        StripestackConfig.RemoteMembersConfig remote = MemberEntries.remote(n, memberEntries, spareEntries);
        long chunk = sizeOr(n.child("chunk"), 4096, 1L << 30, 512 * 1024);
        if (Long.bitCount(chunk) != 1) {
            throw n.child("chunk").error(Sizes.format(chunk) + " is not a power of two (mdadm's default is 512KiB)");
        }
        YamlNode layoutNode = n.child("layout");
        String layout = layoutNode == null ? "left-symmetric" : layoutNode.oneOf(LAYOUTS.toArray(new String[0]));
        YamlNode create = n.child("create_member_size");
        long createSize = create == null ? 0 : create.size(1L << 20, 1L << 50);
        boolean createSparse = boolOr(n.child("create_sparse"), false);
        int stripeCache = intOr(n.child("stripe_cache_size"), 1, 32768, 0);
        boolean checkParity = boolOr(n.child("check_parity_on_reads"), false);
        boolean direct = boolOr(n.child("direct_io"), false);
        boolean startDirtyDegraded = boolOr(n.child("start_dirty_degraded"), false);
        YamlNode policyNode = n.child("consistency_policy");
        ConsistencyPolicy policy = null;
        if (policyNode != null) {
            policy = ConsistencyPolicy.fromMdName(policyNode.oneOf("ppl", "bitmap", "resync"));
            if (policy == ConsistencyPolicy.PPL && chunk > Raid5Config.PPL_MAX_CHUNK_AT_DEFAULT_OFFSET) {
                throw policyNode.error("ppl needs a chunk of at most " + Sizes.format(Raid5Config.PPL_MAX_CHUNK_AT_DEFAULT_OFFSET) + " (the log holds "
                        + "one chunk of partial parity in the 1 MiB before the data), and chunk is " + Sizes.format(chunk)
                        + "; use consistency_policy bitmap (the log and the write-intent bitmap share that space, "
                        + "as in md: an array has one or the other) or a smaller chunk");
            }
        }
        YamlNode bitmapChunkNode = n.child("bitmap_chunk");
        long bitmapChunk = bitmapChunkNode == null ? 0 : bitmapChunkNode.size(4096, 1L << 30);
        if (Long.bitCount(bitmapChunk) > 1) {
            throw bitmapChunkNode.error(Sizes.format(bitmapChunk) + " is not a power of two (mdadm's default is 64MiB)");
        }
        n.rejectUnknownKeys();
        return new ArrayConfig(name, List.copyOf(members), List.copyOf(spares), (int) chunk, layout, createSize,
                createSparse, stripeCache, checkParity, direct, startDirtyDegraded, policy, bitmapChunk, remote);
    }

    private static TargetConfig target(YamlNode n, Path dataDir, Map<String, ArrayConfig> arrays,
            Set<String> arraysUsed) throws ConfigException {
        String iqn = n.required("iqn").string().trim();
        if (!IscsiNames.valid(iqn)) {
            throw n.required("iqn").error("'" + iqn + "' is not an iSCSI name (iqn.YYYY-MM.reversed.domain[:name])");
        }
        YamlNode aliasNode = n.child("alias");
        String alias = aliasNode == null ? "" : aliasNode.string();
        List<String> allowed = new ArrayList<>();
        YamlNode acl = n.child("allowed_initiators");
        if (acl != null) {
            allowed.addAll(acl.stringList());
        }
        ChapConfig chap = chap(n.child("chap"), dataDir);
        ChapConfig mutual = chap(n.child("mutual_chap"), dataDir);
        if (mutual != null && chap == null) {
            throw n.child("mutual_chap").error("mutual CHAP needs 'chap' too (the initiator authenticates first)");
        }
        List<LunConfig> luns = new ArrayList<>();
        Set<Integer> ids = new HashSet<>();
        for (YamlNode l : n.required("luns").list()) {
            LunConfig lun = lun(l, dataDir, arrays, arraysUsed);
            if (!ids.add(lun.lun())) {
                throw l.error("LUN " + lun.lun() + " is defined twice in target " + iqn);
            }
            luns.add(lun);
        }
        n.rejectUnknownKeys();
        return new TargetConfig(iqn, alias, List.copyOf(allowed), chap, mutual, List.copyOf(luns));
    }

    private static ChapConfig chap(YamlNode n, Path dataDir) throws ConfigException {
        if (n == null) {
            return null;
        }
        String user = n.required("user").string();
        YamlNode inline = n.child("secret");
        YamlNode file = n.child("secret_file");
        if ((inline == null) == (file == null)) {
            throw n.error("give exactly one of 'secret' or 'secret_file'");
        }
        char[] secret;
        Path secretFile = null;
        if (inline != null) {
            secret = inline.string().toCharArray();
            if (secret.length < ChapSecretFile.MIN_LENGTH) {
                java.util.Arrays.fill(secret, '\0');
                throw inline.error("CHAP secrets must be at least 12 characters (RFC 7143 section 12.1.3)");
            }
        } else {
            secretFile = dataDir.resolve(file.string());
            try {
                secret = ChapSecretFile.read(secretFile);
            } catch (IOException e) {
                throw file.error(e.getMessage());
            }
        }
        n.rejectUnknownKeys();
        return new ChapConfig(user, secret, secretFile);
    }

    private static LunConfig lun(YamlNode n, Path dataDir, Map<String, ArrayConfig> arrays, Set<String> arraysUsed)
            throws ConfigException {
        int id = (int) n.required("lun").integer(0, 16383);
        YamlNode arrayNode = n.child("array");
        YamlNode fileNode = n.child("file");
        YamlNode ramNode = n.child("ram_size");
        int given = (arrayNode == null ? 0 : 1) + (fileNode == null ? 0 : 1) + (ramNode == null ? 0 : 1);
        if (given != 1) {
            throw n.error("give exactly one of 'array' (a name under arrays:), 'file' (a path) or 'ram_size'");
        }
        BackingConfig backing;
        if (arrayNode != null) {
            String name = arrayNode.string();
            if (!arrays.containsKey(name)) {
                throw arrayNode.error("no array named '" + name + "' (defined: " + String.join(", ", arrays.keySet()) + ")");
            }
            if (!arraysUsed.add(name)) {
                throw arrayNode.error("array '" + name + "' is already exported by another LUN");
            }
            backing = new BackingConfig(name, null, 0, false);
        } else if (fileNode != null) {
            YamlNode create = n.child("create_size");
            backing = new BackingConfig(null, dataDir.resolve(fileNode.string()).normalize(),
                    create == null ? 0 : create.size(1L << 20, 1L << 50), false);
        } else {
            backing = new BackingConfig(null, null, ramNode.size(1L << 20, 1L << 31 - 4096), true);
        }
        CryptoConfig crypto = crypto(n.child("crypto"), dataDir);
        ReadaheadConfig readahead = readahead(n.child("readahead"), crypto != null);
        boolean readOnly = boolOr(n.child("read_only"), false);
        YamlNode serialNode = n.child("serial");
        String serial = serialNode == null ? null : serialNode.string();
        n.rejectUnknownKeys();
        return new LunConfig(id, backing, crypto, readahead, readOnly, serial);
    }

    private static CryptoConfig crypto(YamlNode n, Path dataDir) throws ConfigException {
        if (n == null) {
            return null;
        }
        boolean luks = boolOr(n.child("luks"), false);
        YamlNode keyFileNode = n.child("key_file");
        YamlNode passFileNode = n.child("passphrase_file");
        if ((keyFileNode == null) == (passFileNode == null)) {
            throw n.error("give exactly one of 'key_file' (raw key bytes, cryptsetup --key-file) or 'passphrase_file'"
                    + " (never a key or passphrase in this file)");
        }
        Path keyFile = keyFileNode == null ? null : dataDir.resolve(keyFileNode.string());
        Path passFile = passFileNode == null ? null : dataDir.resolve(passFileNode.string());
        boolean createKey = boolOr(n.child("create_key"), false);
        boolean allowDiscards = boolOr(n.child("allow_discards"), false);
        if (createKey && keyFile == null) {
            throw n.child("create_key").error("create_key needs key_file (a passphrase is yours to choose)");
        }
        if (luks) {
            if (createKey) {
                throw n.child("create_key").error("a LUKS volume key lives in its header: format it with 'stripestack luks format'");
            }
            for (String plainOnly : List.of("cipher", "key_size", "hash", "offset", "skip", "sector_size", "iv_large_sectors")) {
                if (n.child(plainOnly) != null) {
                    throw n.child(plainOnly).error("comes from the LUKS header when luks: true; remove it");
                }
            }
            n.rejectUnknownKeys();
            return new CryptoConfig(true, null, 0, keyFile, passFile, null, 0, 0, 512, false, false, allowDiscards);
        }
        YamlNode cipherNode = n.child("cipher");
        String cipher = cipherNode == null ? "aes-cbc-essiv:sha256" : cipherNode.string().trim();
        int defaultBits = cipher.contains("-xts-") ? 512 : 256;
        int keyBits = intOr(n.child("key_size"), 128, 512, defaultBits);
        if (keyBits % 64 != 0) {
            throw n.child("key_size").error(keyBits + " bits is not a key size (128, 256 or, for XTS, 256 and 512)");
        }
        YamlNode hashNode = n.child("hash");
        String hash = hashNode == null ? "ripemd160" : hashNode.string();
        long offset = n.child("offset") == null ? 0 : n.child("offset").integer(0, Long.MAX_VALUE / 512);
        long skip = n.child("skip") == null ? 0 : n.child("skip").integer(0, Long.MAX_VALUE / 512);
        int sectorSize = intOr(n.child("sector_size"), 512, 4096, 512);
        if (Integer.bitCount(sectorSize) != 1) {
            throw n.child("sector_size").error(sectorSize + " is not a power of two between 512 and 4096");
        }
        boolean ivLarge = boolOr(n.child("iv_large_sectors"), false);
        n.rejectUnknownKeys();
        return new CryptoConfig(false, cipher, keyBits, keyFile, passFile, hash, offset, skip, sectorSize, ivLarge,
                createKey, allowDiscards);
    }

    private static ReadaheadConfig readahead(YamlNode n, boolean hasCrypto) throws ConfigException {
        if (n == null) {
            return new ReadaheadConfig(-1, false);
        }
        if (n.isScalar()) {
            String text = n.string().trim();
            if (text.equalsIgnoreCase("auto")) {
                return new ReadaheadConfig(-1, false);
            }
            return new ReadaheadConfig((int) n.integer(0, 1 << 20), false);
        }
        YamlNode kb = n.child("read_ahead_kb");
        int readAheadKb = kb == null || kb.string().trim().equalsIgnoreCase("auto") ? -1 : (int) kb.integer(0, 1 << 20);
        YamlNode placementNode = n.child("placement");
        String placement = placementNode == null ? "top" : placementNode.oneOf("top", "below-crypto");
        if (placement.equals("below-crypto") && !hasCrypto) {
            throw placementNode.error("'below-crypto' needs a crypto layer on this LUN");
        }
        n.rejectUnknownKeys();
        return new ReadaheadConfig(readAheadKb, placement.equals("below-crypto"));
    }

    private static int intOr(YamlNode n, long min, long max, int fallback) throws ConfigException {
        return n == null ? fallback : (int) n.integer(min, max);
    }

    private static int sizeOr(YamlNode n, long min, long max, int fallback) throws ConfigException {
        return n == null ? fallback : (int) n.size(min, max);
    }

    private static boolean boolOr(YamlNode n, boolean fallback) throws ConfigException {
        return n == null ? fallback : n.bool();
    }
}
