package io.stripestack.targetserver.iscsi;

import io.stripestack.blockdev.RateLimitedLog;
import java.util.Collection;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import org.slf4j.LoggerFactory;

/**
 * What every connection of one server shares: settings, targets, the session registry, the I/O
 * executor, the write buffer and Data-In budgets, the CHAP failure throttle, the connection slots and the set of live
 * connections (for draining on close).
 *
 * <p>Concurrency: immutable apart from the target directory (copy on write), the registry, the budgets, the
 * throttle, the slots, the copy gate, the noise log and the connection set, which are thread-safe.
 */
final class ServerContext {
    final IscsiServerSettings settings;
    final Executor ioExecutor;
    final SessionRegistry sessions = new SessionRegistry();
    final WriteBufferBudget writeBuffers;
    final DataInBudget dataIn;
    final AuthFailureThrottle authFailures;
    /** Connection-level events any client can cause at will (resets, refused connections). */
    final RateLimitedLog connectionNoise = new RateLimitedLog(LoggerFactory.getLogger(IscsiConnection.class), 10,
            TimeUnit.SECONDS);
    final Set<IscsiConnection> connections = ConcurrentHashMap.newKeySet();
    /** EXTENDED COPY commands running and waiting. */
    final CopyGate copies = new CopyGate();
    /** Who holds the connection slots: bounds per address, per initiator name and in total. */
    final ConnectionSlots slots;
    /** Read per login and per SendTargets; changed at run time by the server's administration. */
    final TargetDirectory directory;

    ServerContext(IscsiServerSettings settings, List<IscsiTargetDefinition> targetList, Executor ioExecutor) {
        this.settings = settings;
        this.ioExecutor = ioExecutor;
        this.writeBuffers = new WriteBufferBudget(settings.writeBufferBudget(), settings.writeBufferPerSession());
        this.dataIn = new DataInBudget(settings.dataInBudget(), settings.dataInPerSession());
        this.authFailures = new AuthFailureThrottle(settings.authFailureDelay());
        this.slots = new ConnectionSlots(settings.maxConnections(), settings.maxConnectionsPerAddress(),
                settings.maxSessionsPerInitiator());
        this.directory = new TargetDirectory(targetList);
    }

    IscsiTargetDefinition target(String iqn) {
        return directory.target(iqn);
    }

    Collection<IscsiTargetDefinition> targets() {
        return directory.targets();
    }
}
