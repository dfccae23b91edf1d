package io.stripestack.targetserver.server;

import io.stripestack.readahead.ReadaheadBudget;
import io.stripestack.raid5.Raid5Array;
import io.stripestack.raid5.Raid5Options;
import io.stripestack.raid5.Raid5Status;
import io.stripestack.targetserver.config.ConfigSaver;
import io.stripestack.targetserver.config.StripestackConfig;
import io.stripestack.targetserver.config.StripestackConfig.ArrayConfig;
import io.stripestack.targetserver.config.StripestackConfig.Portal;
import io.stripestack.targetserver.config.StripestackConfig.TargetConfig;
import io.stripestack.targetserver.control.AdminServer;
import io.stripestack.targetserver.control.ControlRegistry;
import io.stripestack.targetserver.control.MetricsEndpoint;
import io.stripestack.targetserver.iscsi.IscsiServer;
import io.stripestack.targetserver.iscsi.IscsiServerSettings;
import java.io.Closeable;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A running stripestack: arrays assembled, LUN stacks built, the iSCSI server listening, the admin socket
 * open; afterwards arrays change at run time through {@link LiveArrays}, and targets, LUNs, ACLs and CHAP through
 * {@link LiveTargets} (the admin socket's verbs, {@link AdminVerbs}). {@link #close()} is the orderly shutdown (SIGTERM): stop accepting,
 * drain in-flight commands, flush every stack, mark the arrays clean.
 *
 * <p>Threads: started and closed by one thread (the CLI's main thread or a test); the iSCSI event
 * loops, the {@code scsi-io} worker pool, the admin worker (the one thread that changes arrays and targets at run time)
 * and each layer's own threads run in between.
 */
public final class StripestackServer implements Closeable {
    private static final Logger log = LoggerFactory.getLogger(StripestackServer.class);

    private final StripestackConfig config;
    private final ControlRegistry registry = new ControlRegistry();
    private final DataFiles dataFiles;
    private final LiveArrays liveArrays;
    /** The running arrays (LiveArrays' concurrent map). */
    private final Map<String, Raid5Array> arrays;
    private final RemoteMemberReturns remoteReturns;
    /** Set once at start; read by a reshape thread that finishes (a reshape resumed at start may end before). */
    private volatile LiveTargets liveTargets;
    private final ExecutorService ioWorkers;
    private ReadaheadBudget readaheadBudget;
    private IscsiServer iscsi;
    private AdminServer admin;
    private MetricsEndpoint metrics;
    private boolean closed;

    private StripestackServer(StripestackConfig config) {
        this.config = config;
        this.dataFiles = new DataFiles(config.dataDir(), config.file(), config.server().adminSocket(),
                () -> liveTargets == null ? Map.of() : liveTargets.keyFiles(), this::chapFiles);
        this.liveArrays = new LiveArrays(this::luns, registry, dataFiles, this::arrayReshaped);
        this.arrays = liveArrays.arrays();
        this.remoteReturns = new RemoteMemberReturns(arrays, liveArrays.remoteDevices());
        AtomicInteger n = new AtomicInteger();
        this.ioWorkers = Executors.newFixedThreadPool(config.server().ioThreads(), r -> {
            Thread t = new Thread(r, "scsi-io-" + n.incrementAndGet());
            t.setDaemon(true);
            return t;
        });
    }

    /** Builds everything the configuration describes and starts serving; on failure nothing stays open. */
    public static StripestackServer start(StripestackConfig config) throws IOException {
        return start(config, false);
    }

    /**
     * As {@link #start(StripestackConfig)}; with {@code force} an array that lost more than one member is assembled
     * as {@code mdadm --assemble --force} does (the members that left only as it failed are taken back; see
     * Raid5Options.force): {@code serve --force}.
     */
    public static StripestackServer start(StripestackConfig config, boolean force) throws IOException {
        StartPreflight.check(config);
        List<Path> absentBefore = StartPreflight.absentFilesAStartMayCreate(config);
        StripestackServer server = new StripestackServer(config);
        try {
            server.startAll(force);
            return server;
        } catch (IOException | RuntimeException e) {
            server.close();
            removeCreatedFiles(absentBefore, e);
            throw e;
        }
    }

    /** A failed start leaves the disk as it found it: the files it created (members, backing and key files) go. */
    private static void removeCreatedFiles(List<Path> absentBefore, Exception cause) {
        for (Path f : absentBefore) {
            try {
                if (Files.deleteIfExists(f)) {
                    log.warn("{}: removed; this failed start had created it", f);
                }
            } catch (IOException e) {
                cause.addSuppressed(e);
                log.error("{}: created by this failed start but could not be removed: {} -- remove it by hand",
                        f, e.getMessage());
            }
        }
    }

    /**
     * {@code stripestack create}: creates every array of the configuration whose members do not exist yet
     * (like mdadm --create), leaves existing ones alone, and closes them clean. Returns one line per array.
     */
    public static List<String> createArrays(StripestackConfig config) throws IOException {
        List<String> report = new ArrayList<>();
        for (ArrayConfig ac : config.arrays().values()) {
            long existing = ac.members().stream().filter(java.nio.file.Files::exists).count();
            if (existing == ac.members().size() && ac.remote().members().isEmpty()) {
                report.add(ac.name() + ": exists (all " + existing + " members present); not touched");
                continue;
            }
            if (existing > 0) {
                throw new IOException("array " + ac.name() + ": " + existing + " of " + ac.members().size()
                        + " member files exist; refusing to create over them. Remove them to start afresh, or run"
                        + " 'serve' to assemble the array degraded and add the missing member");
            }
            StackBuilder.OpenedArray opened = StackBuilder.openArray(ac,
                    Raid5Options.defaults().withBitmapChunkBytes(ac.bitmapChunkBytes()));
            try (Raid5Array array = opened.array()) {
                // remote members may carry this array's superblocks already: then it was assembled, not created
                report.add(ac.name() + (opened.created() ? ": created " : ": exists on its remote members; not changed ")
                        + array.status().mdstat().replace("\n", "\n  "));
            }
        }
        return report;
    }

    private void startAll(boolean force) throws IOException {
        for (ArrayConfig ac : config.arrays().values()) {
            liveArrays.openAtStart(ac, force);
        }
        remoteReturns.start();
        readaheadBudget = new ReadaheadBudget(config.server().readaheadBudget());
        liveTargets = new LiveTargets(new LunFactory(arrays, liveArrays.createdAtStart(), readaheadBudget), liveArrays,
                registry, dataFiles);
        for (TargetConfig tc : config.targets()) {
            liveTargets.addAtStart(tc);
        }
        iscsi = new IscsiServer(settings(config.server()), liveTargets.definitions(), ioWorkers);
        iscsi.start();
        liveTargets.attach(iscsi);
        AdminVerbs.register(registry, liveArrays, liveTargets, config, new LivePortals(iscsi, config.server().portals()),
                dataFiles);
        for (InetSocketAddress a : iscsi.boundAddresses()) {
            log.info("listening on {}:{}", a.getAddress().getHostAddress(), a.getPort());
        }
        for (TargetConfig tc : config.targets()) {
            log.info("target {}: e.g. iscsi-ls -s iscsi://{}/  or  iscsiadm -m discovery -t st -p {}", tc.iqn(),
                    portalText(iscsi.boundAddresses().get(0)), portalText(iscsi.boundAddresses().get(0)));
        }
        StatusReport status = new StatusReport(arrays, liveTargets.stacks(), iscsi::bufferStats, liveTargets::sessions);
        MetricsReport metricsReport = new MetricsReport(arrays, liveTargets.stacks(), iscsi::bufferStats,
                liveTargets::sessions);
        RemoteMemberReport remoteReport = new RemoteMemberReport(liveArrays.remoteDevices());
        registry.setStatusReport(() -> status.render() + remoteReport.render());
        registry.setMetricsReport(() -> metricsReport.render() + remoteReport.prometheus());
        admin = new AdminServer(config.server().adminSocket(), registry);
        Portal metricsPortal = config.server().metrics();
        if (metricsPortal != null) {
            metrics = new MetricsEndpoint(new InetSocketAddress(metricsPortal.host(), metricsPortal.port()), registry);
        }
    }

    /**
     * A reshape has finished (on the array's reshape thread): the LUNs over the array take its new size and tell
     * their initiators, and the configuration file's entry of the array lists its members and spares as they are
     * now (the rest of the file untouched), so the file stays true without a saveconfig.
     */
    private void arrayReshaped(Raid5Array array, ArrayConfig now) {
        LiveTargets targets = liveTargets;
        if (targets != null) {
            targets.arrayGrew(array);
        }
        Path file = config.file();
        if (file == null || !Files.isRegularFile(file)) {
            log.info("{}: reshaped; the server runs without a configuration file, so none lists its members {}",
                    array.name(), now.members());
            return;
        }
        try {
            if (ConfigSaver.saveArrayShape(file, now, config.dataDir(), Path.of(""))) {
                log.info("{}: reshaped; {} now lists its members {} and spares {}", array.name(), file,
                        now.members(), now.spares());
            } else {
                log.warn("{}: reshaped; {} has no entry for it (created at run time): saveconfig writes one",
                        array.name(), file);
            }
        } catch (IOException | RuntimeException e) {
            log.error("{}: reshaped, but {} was not updated: {}; list the members {} and spares {} there by hand",
                    array.name(), file, e.getMessage(), now.members(), now.spares());
        }
    }

    /** The Prometheus endpoint's port, or -1 when it is off. */
    public int metricsPort() {
        return metrics == null ? -1 : metrics.port();
    }

    private static String portalText(InetSocketAddress a) {
        String host = a.getAddress().getHostAddress();
        return (host.contains(":") ? "[" + host + "]" : host) + ":" + a.getPort();
    }

    private static IscsiServerSettings settings(StripestackConfig.ServerConfig s) {
        IscsiServerSettings.Builder b = IscsiServerSettings.builder()
                .targetPortalGroupTag(s.portalGroupTag())
                .maxRecvDataSegmentLength(s.maxRecvDataSegmentLength())
                .maxBurstLength(s.maxBurstLength())
                .firstBurstLength(s.firstBurstLength())
                .immediateData(s.immediateData())
                .initialR2T(s.initialR2T())
                .queueDepth(s.queueDepth())
                .nopInInterval(Duration.ofSeconds(s.nopInIntervalSeconds()))
                .writeBufferBudget(s.writeBufferBudget())
                .dataInBudget(s.sessionLimits().dataInBudget())
                .dataInPerSession(s.sessionLimits().dataInPerSession())
                .maxConnections(s.sessionLimits().maxConnections())
                .authFailureDelay(Duration.ofMillis(s.sessionLimits().authFailureDelayMillis()))
                .maxConnectionsPerAddress(s.sessionLimits().maxConnectionsPerAddress())
                .maxSessionsPerInitiator(s.sessionLimits().maxSessionsPerInitiator())
                .loginIdleTimeout(Duration.ofSeconds(s.sessionLimits().loginIdleTimeoutSeconds()))
                .writeBufferPerSession(s.sessionLimits().writeBufferPerSession());
        for (Portal p : s.portals()) {
            b.bind(new InetSocketAddress(p.host(), p.port()));
        }
        for (Portal p : s.advertise()) {
            b.portal(p.toString());
        }
        return b.build();
    }

    /** The admin socket's path (stripestack ctl, ls, saveconfig...). */
    public Path adminSocket() {
        return admin.socketPath();
    }

    public ControlRegistry registry() {
        return registry;
    }

    public Map<String, Raid5Array> arrays() {
        return arrays;
    }

    /** The LUN stacks, as {@link LiveTargets} (their one owner) has them now. */
    public List<LunStack> luns() {
        LiveTargets targets = liveTargets;
        return targets == null ? List.of() : targets.stacks();
    }

    /** The CHAP secret files of the targets and of the arrays' remote members, for {@link DataFiles}. */
    private Map<Path, String> chapFiles() {
        Map<Path, String> files = new LinkedHashMap<>(liveArrays.secretFiles());
        LiveTargets targets = liveTargets;
        if (targets != null) {
            files.putAll(targets.chapFiles());
        }
        return files;
    }

    /** The addresses the iSCSI server listens on (port resolved when configured as 0). */
    public List<InetSocketAddress> boundAddresses() {
        return iscsi.boundAddresses();
    }

    /**
     * Stops serving, drains in-flight commands, flushes every stack and marks the arrays clean; an array that has
     * failed is left as its superblocks say (active), and the last line of the log says which were marked clean
     * and which not.
     */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        Map<String, Raid5Array> stopping = new LinkedHashMap<>(arrays);
        int flushFailures = 0;
        remoteReturns.close();
        if (metrics != null) {
            metrics.close();
        }
        if (admin != null) {
            closeQuietly(admin, "admin socket");
        }
        if (iscsi != null) {
            iscsi.close();
        }
        ioWorkers.shutdown();
        try {
            if (!ioWorkers.awaitTermination(30, TimeUnit.SECONDS)) {
                log.warn("I/O workers still busy after 30 s; closing the stacks anyway");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        if (liveTargets != null) {
            liveTargets.close();
        }
        // Each layer owns the one below and closes it; closing a LUN's top closes its whole chain, the
        // array included (Raid5Array.close is idempotent: arrays no LUN exports are closed after).
        for (LunStack lun : luns()) {
            try {
                lun.top().flush();
            } catch (IOException e) {
                flushFailures++;
                log.error("flushing {} at shutdown failed: {}", lun.controlPath(), e.getMessage());
            }
            closeQuietly(lun.top(), lun.controlPath());
        }
        liveArrays.close();
        logStopped(stopping, flushFailures);
    }

    /** The last line of a stop: what was flushed and which arrays the superblocks now call clean. */
    private static void logStopped(Map<String, Raid5Array> stopped, int flushFailures) {
        List<String> clean = new ArrayList<>();
        List<String> failed = new ArrayList<>();
        for (Map.Entry<String, Raid5Array> e : stopped.entrySet()) {
            // a failed array's close writes no superblock: they keep saying active
            (e.getValue().status().health() == Raid5Status.Health.FAILED ? failed : clean).add(e.getKey());
        }
        String flushed = flushFailures == 0 ? "every stack flushed" : flushFailures + " stack"
                + (flushFailures == 1 ? "" : "s") + " failed to flush (see above)";
        if (failed.isEmpty()) {
            log.info("stopped: {}{}", flushed, clean.isEmpty() ? "" : ", arrays marked clean: " + String.join(", ", clean));
        } else {
            log.warn("stopped: {}; FAILED arrays NOT marked clean (their superblocks still say active): {}{} -- once their "
                    + "members answer, start with serve --force (docs/operations.md)", flushed, String.join(", ", failed),
                    clean.isEmpty() ? "" : "; arrays marked clean: " + String.join(", ", clean));
        }
    }

    private static void closeQuietly(Closeable c, String what) {
        try {
            c.close();
        } catch (IOException | RuntimeException e) {
            log.error("closing {} failed: {}", what, e.getMessage());
        }
    }
}
