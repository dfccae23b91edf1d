package io.stripestack.targetserver.server;

import io.stripestack.raid5.Raid5Array;
import io.stripestack.secrets.ChapSecretFile;
import io.stripestack.targetserver.config.IscsiNames;
import io.stripestack.targetserver.config.StripestackConfig.ChapConfig;
import io.stripestack.targetserver.config.StripestackConfig.LunConfig;
import io.stripestack.targetserver.config.StripestackConfig.TargetConfig;
import io.stripestack.targetserver.control.ControlAttribute;
import io.stripestack.targetserver.control.ControlRegistry;
import io.stripestack.targetserver.iscsi.IscsiServer;
import io.stripestack.targetserver.iscsi.IscsiTargetDefinition;
import io.stripestack.targetserver.scsi.CopyTargets;
import io.stripestack.targetserver.scsi.LogicalUnit;
import io.stripestack.targetserver.scsi.ScsiTarget;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CopyOnWriteArrayList;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The running server's targets, their LUNs, access lists and CHAP credentials, built at start-up from the
 * configuration and changed at run time by the administration (targetcli's job). Every refusal is an
 * {@link IllegalArgumentException} or {@link IOException} naming what and why, thrown before anything changed.
 *
 * <p>Concurrency: this object is the one owner of the running state. Every method is synchronized on it, so
 * changes are serialized (the admin worker is their only caller once the server runs); a change publishes
 * new immutable snapshots to the two places the data path reads without locking: the iSCSI server's target
 * directory (definitions with access list and CHAP, read per login) and each {@link ScsiTarget}'s LUN table
 * (read per command). {@link #runningTargets} returns immutable configurations for saving and listing. This object
 * owns the server's list of LUN stacks, a copy-on-write list that the status report, the arrays (to find what
 * exports an array or uses a file) and the shutdown read through {@link #stacks}.
 */
final class LiveTargets implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(LiveTargets.class);
    /** How long a removed LUN's running commands may take before it is closed anyway (a shutdown's drain timeout). */
    private static final long COMMAND_DRAIN_MILLIS = 10_000;

    private final Map<String, LiveTarget> targets = new LinkedHashMap<>();
    private final LunFactory factory;
    private final LiveArrays arrays;
    private final List<LunStack> luns = new CopyOnWriteArrayList<>();
    private final ControlRegistry registry;
    private final DataFiles files;
    private IscsiServer iscsi;

    /** One target's running state; guarded by the LiveTargets monitor. */
    private static final class LiveTarget {
        TargetConfig config;
        final ScsiTarget scsi;
        final CopyTargets copyTargets;
        final Map<Integer, LunStack> stacks = new TreeMap<>();
        IscsiTargetDefinition definition;

        LiveTarget(TargetConfig config, ScsiTarget scsi, CopyTargets copyTargets) {
            this.config = config;
            this.scsi = scsi;
            this.copyTargets = copyTargets;
        }
    }

    LiveTargets(LunFactory factory, LiveArrays arrays, ControlRegistry registry, DataFiles files) {
        this.factory = factory;
        this.arrays = arrays;
        this.registry = registry;
        this.files = files;
    }

    /** Every LUN's stack, in creation order: a read-only view of a copy-on-write list, readable at any time. */
    List<LunStack> stacks() {
        return Collections.unmodifiableList(luns);
    }

    // ------------------------------------------------------------------ start-up

    /**
     * Builds a configured target and its LUNs; before {@link #attach}. A LUN file that is an array's member or
     * another LUN's file is refused as at run time (the loader checks each section on its own).
     */
    synchronized void addAtStart(TargetConfig tc) throws IOException {
        CopyTargets copyTargets = new CopyTargets(); // EXTENDED COPY reaches the LUNs of its own target only
        Map<Long, LogicalUnit> units = new LinkedHashMap<>();
        List<LunStack> built = new ArrayList<>();
        for (LunConfig lc : tc.luns()) {
            if (lc.backing().file() != null) {
                arrays.refuseFileInUse(lc.backing().file(), "back LUN " + lc.lun() + " of " + tc.iqn());
            }
            LunFactory.BuiltLun lun = factory.build(tc.iqn(), lc, copyTargets, true);
            built.add(lun.stack());
            luns.add(lun.stack());
            units.put((long) lc.lun(), lun.unit());
            registerLunControls(lun.stack());
            log.info("target {} LUN {}: {} bytes, {}", tc.iqn(), lc.lun(), lun.stack().top().size(),
                    lun.stack().describe());
        }
        LiveTarget target = new LiveTarget(withoutSecrets(tc), new ScsiTarget(units), copyTargets);
        built.forEach(s -> target.stacks.put(s.config().lun(), s));
        IscsiTargetDefinition.Builder def = IscsiTargetDefinition.builder(tc.iqn(), target.scsi)
                .alias(tc.alias()).allowedInitiators(tc.allowedInitiators());
        if (tc.chap() != null) {
            def.chap(tc.chap().user(), tc.chap().secret());
        }
        if (tc.mutualChap() != null) {
            def.mutualChap(tc.mutualChap().user(), tc.mutualChap().secret());
        }
        target.definition = def.build();
        targets.put(tc.iqn(), target);
    }

    /**
     * A reshape of {@code array} finished (called on its reshape thread): every LUN over it takes the array's size,
     * its crypto and readahead layers included, and when that grew its initiators get CAPACITY DATA HAS CHANGED.
     */
    synchronized void arrayGrew(Raid5Array array) {
        for (LiveTarget target : targets.values()) {
            for (LunStack stack : target.stacks.values()) {
                LogicalUnit unit = stack.array() == array ? target.scsi.logicalUnit(stack.config().lun()) : null;
                if (unit != null) {
                    long blocks = unit.capacityChanged();
                    log.info("{}: {} reshaped; the LUN has {} blocks of {} bytes", stack.controlPath(), array.name(),
                            blocks, stack.top().logicalBlockSize());
                }
            }
        }
    }

    synchronized List<IscsiTargetDefinition> definitions() {
        return targets.values().stream().map(t -> t.definition).toList();
    }

    /** From here on changes reach the sessions of {@code server}. */
    synchronized void attach(IscsiServer server) {
        this.iscsi = server;
    }

    // ------------------------------------------------------------------ targets

    synchronized String createTarget(String iqn, String alias) {
        IscsiNames.require(iqn, "target name");
        if (targets.containsKey(iqn)) {
            throw new IllegalArgumentException("target " + iqn + " exists already; nothing changed");
        }
        TargetConfig config = TargetConfig.empty(iqn, alias);
        LiveTarget target = new LiveTarget(config, new ScsiTarget(Map.of()), new CopyTargets());
        target.definition = IscsiTargetDefinition.builder(iqn, target.scsi).alias(config.alias()).build();
        iscsi.addTarget(target.definition);
        targets.put(iqn, target);
        return "created target " + iqn + " (no LUNs yet; any initiator may log in until an ACL is added)";
    }

    synchronized String deleteTarget(String iqn, boolean force) throws IOException {
        LiveTarget target = require(iqn);
        List<String> sessions = iscsi.sessions(iqn);
        if (!sessions.isEmpty() && !force) {
            throw new IllegalArgumentException(inUse("target " + iqn, sessions));
        }
        iscsi.removeTarget(iqn);
        int ended = iscsi.endSessions(iqn, name -> true);
        for (int lun : List.copyOf(target.stacks.keySet())) {
            detach(target, lun);
            closeLun(target, lun);
        }
        target.definition.close();
        targets.remove(iqn);
        return "deleted target " + iqn + (ended > 0 ? " (" + ended + " sessions logged out)" : "");
    }

    // ------------------------------------------------------------------ LUNs

    synchronized String createLun(String iqn, LunConfig lc) throws IOException {
        LiveTarget target = require(iqn);
        if (lc.lun() < 0 || lc.lun() > ScsiTarget.MAX_LUN) {
            throw new IllegalArgumentException("LUN " + lc.lun() + " is outside 0.." + ScsiTarget.MAX_LUN);
        }
        if (target.stacks.containsKey(lc.lun())) {
            throw new IllegalArgumentException("target " + iqn + " has LUN " + lc.lun() + " already; nothing changed");
        }
        refuseBackingInUse(iqn, lc);
        Path file = lc.backing().file();
        boolean fileIsNew = file != null && !Files.exists(file);
        Path key = lc.crypto() == null ? null : lc.crypto().keyFile();
        boolean keyIsNew = key != null && !Files.exists(key);
        LunFactory.BuiltLun built = factory.build(iqn, lc, target.copyTargets, false);
        target.scsi.addUnit(lc.lun(), built.unit());
        target.stacks.put(lc.lun(), built.stack());
        luns.add(built.stack());
        registerLunControls(built.stack());
        target.config = withLuns(target.config, target.stacks);
        int sessions = target.scsi.nexuses().size();
        log.info("target {} LUN {} created at run time: {} bytes, {}", iqn, lc.lun(), built.stack().top().size(),
                built.stack().describe());
        return (fileIsNew ? "created " + file + " (" + Files.size(file) + " bytes)\n" : "")
                + (keyIsNew && Files.exists(key) ? "created the key file " + key + " (mode 0600; back it up)\n" : "")
                + "created LUN " + lc.lun() + " of " + iqn + ": " + built.stack().top().size() + " bytes, "
                + built.stack().describe() + (sessions > 0 ? "; " + sessions
                + " logged-in sessions get REPORTED LUNS DATA HAS CHANGED" : "");
    }

    /**
     * Without {@code force}, refused while a session is logged in to the target (each can address the LUN). With
     * it, the sessions stay: the LUN leaves the table (its number answers LOGICAL UNIT NOT SUPPORTED, the other
     * LUNs report REPORTED LUNS DATA HAS CHANGED), the commands still running on it finish, then its chain is
     * flushed and closed.
     */
    synchronized String deleteLun(String iqn, int lun, boolean force) throws IOException {
        LiveTarget target = require(iqn);
        requireLun(target, lun);
        List<String> sessions = iscsi.sessions(iqn);
        if (!sessions.isEmpty() && !force) {
            throw new IllegalArgumentException(inUse("LUN " + lun + " of " + iqn, sessions));
        }
        detach(target, lun);
        closeLun(target, lun);
        target.config = withLuns(target.config, target.stacks);
        return "deleted LUN " + lun + " of " + iqn + (sessions.isEmpty() ? "" : "; its " + sessions.size()
                + " sessions were told REPORTED LUNS DATA HAS CHANGED");
    }

    /** Takes the unit out of its target's table and waits for the commands that found it before. */
    private void detach(LiveTarget target, int lun) {
        LogicalUnit unit = target.scsi.removeUnit(lun);
        try {
            if (!unit.detachAndAwaitIdle(COMMAND_DRAIN_MILLIS)) {
                log.warn("{}/lun{}: commands still running {} ms after the LUN was removed; closing it anyway",
                        target.config.iqn(), lun, COMMAND_DRAIN_MILLIS);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while LUN " + lun + " finished its commands", e);
        }
    }

    synchronized String setReadOnly(String iqn, int lun, boolean readOnly) {
        LiveTarget target = require(iqn);
        LunStack stack = requireLun(target, lun);
        if (!readOnly && stack.config().readOnly() && stack.config().backing().file() != null) {
            throw new IllegalArgumentException("LUN " + lun + " of " + iqn + ": its file " + stack.config().backing().file()
                    + " was opened read-only; delete the LUN and create it again without --read-only");
        }
        target.scsi.logicalUnit(lun).setReadOnly(readOnly);
        target.config = withLuns(target.config, target.stacks);
        return "LUN " + lun + " of " + iqn + " is " + (readOnly ? "read-only" : "writable");
    }

    private void closeLun(LiveTarget target, int lun) {
        LunStack stack = target.stacks.remove(lun);
        luns.remove(stack);
        registry.unregisterAll(stack.controlPath() + "/");
        try {
            stack.top().flush();
        } catch (IOException e) {
            log.error("flushing {} before deleting it failed: {}", stack.controlPath(), e.getMessage());
        }
        try {
            stack.top().close();
        } catch (IOException | RuntimeException e) {
            log.error("closing {} failed: {}", stack.controlPath(), e.getMessage());
        }
        log.info("{} deleted", stack.controlPath());
    }

    /** An array exported once, and a file that belongs to no array and no other LUN: else refused by name. */
    private void refuseBackingInUse(String iqn, LunConfig lc) {
        var b = lc.backing();
        if (b.array() != null) {
            if (!arrays.arrays().containsKey(b.array())) {
                throw new IllegalArgumentException("no array named '" + b.array() + "' (running: "
                        + String.join(", ", arrays.arrays().keySet()) + ")");
            }
            for (LunStack s : luns) {
                if (b.array().equals(s.config().backing().array())) {
                    throw new IllegalArgumentException("array " + b.array() + " is exported already by "
                            + s.controlPath() + "; an array backs one LUN");
                }
            }
        }
        if (b.file() != null) {
            arrays.refuseFileInUse(b.file(), "back LUN " + lc.lun() + " of " + iqn);
        }
    }

    // ------------------------------------------------------------------ access lists and CHAP

    synchronized String addAcl(String iqn, String initiator) {
        LiveTarget target = require(iqn);
        IscsiNames.require(initiator, "initiator name");
        List<String> allowed = new ArrayList<>(target.config.allowedInitiators());
        if (allowed.contains(initiator)) {
            throw new IllegalArgumentException("target " + iqn + " allows " + initiator + " already; nothing changed");
        }
        allowed.add(initiator);
        replaceDefinition(target, target.definition.changed().allowedInitiators(allowed));
        target.config = target.config.withAllowedInitiators(allowed);
        // The first entry turns "any initiator" into a list: the others' sessions end, as a removed entry's do.
        int ended = iscsi.endSessions(iqn, name -> !allowed.contains(name));
        return "target " + iqn + " allows " + initiator + (ended > 0 ? "; " + ended
                + " sessions of initiators not on the list were logged out" : "");
    }

    synchronized String removeAcl(String iqn, String initiator) {
        LiveTarget target = require(iqn);
        List<String> allowed = new ArrayList<>(target.config.allowedInitiators());
        if (!allowed.remove(initiator)) {
            throw new IllegalArgumentException("target " + iqn + " has no ACL for " + initiator + " (it has: "
                    + String.join(", ", target.config.allowedInitiators()) + "); nothing changed");
        }
        if (allowed.isEmpty()) {
            throw new IllegalArgumentException("removing the last ACL of " + iqn + " would let any initiator log in"
                    + " (an empty list allows all); add another initiator first or delete the target; nothing changed");
        }
        replaceDefinition(target, target.definition.changed().allowedInitiators(allowed));
        target.config = target.config.withAllowedInitiators(allowed);
        int ended = iscsi.endSessions(iqn, initiator::equals);
        return "target " + iqn + " no longer allows " + initiator + (ended > 0 ? "; its " + ended
                + " sessions were logged out" : "");
    }

    /**
     * Sets one-way ({@code mutual} false) or mutual CHAP credentials from a secret file readable by its owner
     * only. Later logins need them; sessions logged in already stay.
     */
    synchronized String setChap(String iqn, String user, Path secretFile, boolean mutual) throws IOException {
        LiveTarget target = require(iqn);
        if (user.isEmpty()) {
            throw new IllegalArgumentException("the CHAP user name is empty");
        }
        Path file = files.dataDir().resolve(secretFile).toAbsolutePath().normalize();
        files.refuseAsSecret(file, "be a CHAP secret");
        char[] secret = ChapSecretFile.read(file);
        try {
            for (char c : secret) {
                if (c < 0x20 || c == 0x7f || c == '\uFFFD') {
                    throw new IllegalArgumentException(file + " holds bytes that are not text (a raw key file?); a CHAP"
                            + " secret is a line of text of at least " + ChapSecretFile.MIN_LENGTH + " characters;"
                            + " nothing changed");
                }
            }
            IscsiTargetDefinition.Builder b = target.definition.changed();
            if (mutual) {
                b.mutualChap(user, secret);
            } else {
                b.chap(user, secret);
            }
            replaceDefinition(target, b);
        } finally {
            Arrays.fill(secret, '\0');
        }
        ChapConfig chap = new ChapConfig(user, new char[0], file);
        target.config = target.config.withChap(mutual ? target.config.chap() : chap,
                mutual ? chap : target.config.mutualChap());
        return "target " + iqn + ": " + (mutual ? "mutual " : "") + "CHAP user " + user + ", secret from " + file
                + " (sessions logged in already keep running)";
    }

    synchronized String clearChap(String iqn, boolean mutual) {
        LiveTarget target = require(iqn);
        if ((mutual ? target.config.mutualChap() : target.config.chap()) == null) {
            throw new IllegalArgumentException("target " + iqn + " has no " + (mutual ? "mutual " : "")
                    + "CHAP credentials; nothing changed");
        }
        IscsiTargetDefinition.Builder b = target.definition.changed();
        replaceDefinition(target, mutual ? b.noMutualChap() : b.noChap());
        target.config = target.config.withChap(mutual ? target.config.chap() : null, null);
        return "target " + iqn + ": " + (mutual ? "mutual CHAP removed" : "CHAP removed (mutual CHAP too)");
    }

    /**
     * Builds the changed definition, publishes it and zeroes the old one's secrets. The new definition owns the
     * builder's secret arrays; only a refused build leaves them to zero here.
     */
    private void replaceDefinition(LiveTarget target, IscsiTargetDefinition.Builder changed) {
        IscsiTargetDefinition next;
        try {
            next = changed.build();
        } catch (IllegalArgumentException e) {
            changed.noChap();
            throw new IllegalArgumentException(e.getMessage() + "; nothing changed", e);
        }
        iscsi.replaceTarget(next);
        // A login negotiating CHAP this instant against the old definition fails and is retried by the initiator.
        target.definition.close();
        target.definition = next;
    }

    // ------------------------------------------------------------------ state

    /** The running targets as configuration (CHAP as user and secret file, no secret), in creation order. */
    synchronized List<TargetConfig> runningTargets() {
        return targets.values().stream().map(t -> t.config).toList();
    }

    /** The LUNs' key and passphrase files, each with what it is, for {@link DataFiles}. */
    synchronized Map<Path, String> keyFiles() {
        Map<Path, String> out = new LinkedHashMap<>();
        for (LiveTarget t : targets.values()) {
            for (LunStack s : t.stacks.values()) {
                var c = s.config().crypto();
                if (c != null && c.keyFile() != null) {
                    out.put(c.keyFile(), "the key file of " + s.controlPath());
                }
                if (c != null && c.passphraseFile() != null) {
                    out.put(c.passphraseFile(), "the passphrase file of " + s.controlPath());
                }
            }
        }
        return out;
    }

    /** The targets' CHAP secret files, each with what it is, for {@link DataFiles}. */
    synchronized Map<Path, String> chapFiles() {
        Map<Path, String> out = new LinkedHashMap<>();
        for (LiveTarget t : targets.values()) {
            for (ChapConfig c : new ChapConfig[] {t.config.chap(), t.config.mutualChap()}) {
                if (c != null && c.secretFile() != null) {
                    out.put(c.secretFile(), "the CHAP secret file of " + t.config.iqn());
                }
            }
        }
        return out;
    }

    /** The I_T nexuses logged in to each target now. */
    synchronized Map<String, List<String>> sessions() {
        Map<String, List<String>> out = new LinkedHashMap<>();
        for (String iqn : targets.keySet()) {
            out.put(iqn, iscsi == null ? List.of() : iscsi.sessions(iqn));
        }
        return out;
    }

    /** Zeroes every target's CHAP secrets; after the iSCSI server stopped. */
    @Override
    public synchronized void close() {
        for (LiveTarget t : targets.values()) {
            if (t.definition != null) {
                t.definition.close();
            }
        }
    }

    private LiveTarget require(String iqn) {
        LiveTarget t = targets.get(iqn);
        if (t == null) {
            throw new IllegalArgumentException("no target " + iqn + " (targets: " + String.join(", ", targets.keySet()) + ")");
        }
        return t;
    }

    private static LunStack requireLun(LiveTarget target, int lun) {
        LunStack s = target.stacks.get(lun);
        if (s == null) {
            throw new IllegalArgumentException("target " + target.config.iqn() + " has no LUN " + lun + " (LUNs: "
                    + target.stacks.keySet() + ")");
        }
        return s;
    }

    private static String inUse(String what, List<String> sessions) {
        return what + " is in use by " + sessions.size() + " session(s) (" + String.join(", ", sessions)
                + "); log them out first, or add --force to log them out cleanly; nothing changed";
    }

    private void registerLunControls(LunStack stack) {
        if (stack.readahead() != null) {
            var ra = stack.readahead();
            registry.register(stack.controlPath() + "/read_ahead_kb", ControlAttribute.ofInt(
                    () -> (int) ra.readAheadKb(), ra::setReadAheadKb, 0, (int) (ra.budget().totalBytes() / 1024)));
        }
        registry.register(stack.controlPath() + "/size", ControlAttribute.readOnly(() -> Long.toString(stack.top().size())));
    }

    private static TargetConfig withoutSecrets(TargetConfig tc) {
        return tc.withChap(withoutSecret(tc.chap()), withoutSecret(tc.mutualChap()));
    }

    private static ChapConfig withoutSecret(ChapConfig c) {
        return c == null ? null : new ChapConfig(c.user(), new char[0], c.secretFile());
    }

    private TargetConfig withLuns(TargetConfig c, Map<Integer, LunStack> stacks) {
        List<LunConfig> configs = new ArrayList<>();
        for (LunStack s : stacks.values()) {
            LunConfig lc = s.config();
            boolean readOnly = currentReadOnly(c.iqn(), lc.lun());
            configs.add(lc.withReadOnly(readOnly));
        }
        configs.sort(Comparator.comparingInt(LunConfig::lun));
        return c.withLuns(configs);
    }

    private boolean currentReadOnly(String iqn, int lun) {
        LogicalUnit unit = targets.get(iqn).scsi.logicalUnit(lun);
        return unit != null && unit.readOnly();
    }

}
