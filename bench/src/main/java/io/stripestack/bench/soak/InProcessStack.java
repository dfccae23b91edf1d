package io.stripestack.bench.soak;

import io.stripestack.raid5.Raid5Array;
import io.stripestack.targetserver.config.StripestackConfig;
import io.stripestack.targetserver.config.StripestackConfig.Portal;
import io.stripestack.targetserver.config.StripestackConfig.ServerConfig;
import io.stripestack.targetserver.server.LunStack;
import io.stripestack.targetserver.server.StripestackServer;
import java.io.Closeable;
import java.io.IOException;
import java.util.List;

/**
 * A configuration's stacks built in this process for the soak: the server is started exactly as
 * {@code stripestack serve} would (arrays created or assembled, LUN chains, admin socket, so
 * {@code stripestack status} can watch the run) except that iSCSI listens on a free loopback port, so it never
 * clashes with another server. The soak drives the chosen LUN's top BlockDevice directly, without the network.
 * Closing stops the server cleanly (flush, arrays marked clean).
 *
 * <p>Threads: opened and closed by one thread; the device is used by the soak's workers.
 */
public final class InProcessStack implements Closeable {
    private final StripestackServer server;
    private final LunStack lun;

    private InProcessStack(StripestackServer server, LunStack lun) {
        this.server = server;
        this.lun = lun;
    }

    /**
     * @param targetIqn the target whose LUN to use, or null for the only target that has LUN {@code lunNumber}
     */
    public static InProcessStack start(StripestackConfig config, String targetIqn, int lunNumber) throws IOException {
        ServerConfig s = config.server();
        ServerConfig loopback = new ServerConfig(List.of(new Portal("127.0.0.1", 0)), List.of(), s.portalGroupTag(),
                s.queueDepth(), s.ioThreads(), s.maxRecvDataSegmentLength(), s.maxBurstLength(), s.firstBurstLength(),
                s.immediateData(), s.initialR2T(), s.nopInIntervalSeconds(), s.adminSocket(), null, s.readaheadBudget(),
                s.writeBufferBudget(), s.sessionLimits(), false);
        StripestackServer server = StripestackServer.start(new StripestackConfig(config.file(), config.dataDir(),
                loopback, config.arrays(), config.targets()));
        try {
            LunStack chosen = null;
            for (LunStack l : server.luns()) {
                if (l.config().lun() == lunNumber && (targetIqn == null || l.target().equals(targetIqn))) {
                    if (chosen != null) {
                        throw new IllegalArgumentException("LUN " + lunNumber + " exists in targets " + chosen.target()
                                + " and " + l.target() + "; choose one with --target IQN");
                    }
                    chosen = l;
                }
            }
            if (chosen == null) {
                throw new IllegalArgumentException(config.file() + ": no LUN " + lunNumber
                        + (targetIqn == null ? "" : " in target " + targetIqn) + "; the configuration has "
                        + server.luns().stream().map(LunStack::controlPath).toList());
            }
            return new InProcessStack(server, chosen);
        } catch (RuntimeException e) {
            server.close();
            throw e;
        }
    }

    public StripestackServer server() {
        return server;
    }

    public LunStack lun() {
        return lun;
    }

    /** The RAID-5 array at the bottom of the LUN's chain, or null when it stands on a file or RAM. */
    public Raid5Array array() {
        return lun.array();
    }

    /** The LUN's top device as a soak device; closing it closes this stack. */
    public SoakDevice device() {
        return SoakDevice.of(lun.top(), "in-process " + lun.controlPath(), this);
    }

    @Override
    public void close() {
        server.close();
    }
}
