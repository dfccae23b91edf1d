package io.stripestack.targetserver.iscsi;

import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import org.slf4j.LoggerFactory;

/**
 * What every connection of one server shares: settings, targets, the session registry, the I/O
 * executor, the write buffer and Data-In budgets, the CHAP failure throttle and the set of live
 * connections (for draining on close).
 *
 * <p>Concurrency: immutable apart from the registry, the budgets, the throttle, the noise log and
 * the connection set, which are thread-safe.
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
    private final Map<String, IscsiTargetDefinition> targets = new LinkedHashMap<>();

    ServerContext(IscsiServerSettings settings, List<IscsiTargetDefinition> targetList, Executor ioExecutor) {
        this.settings = settings;
        this.ioExecutor = ioExecutor;
        this.writeBuffers = new WriteBufferBudget(settings.writeBufferBudget());
        this.dataIn = new DataInBudget(settings.dataInBudget(), settings.dataInPerSession());
        this.authFailures = new AuthFailureThrottle(settings.authFailureDelay());
        for (IscsiTargetDefinition t : targetList) {
            if (targets.putIfAbsent(t.iqn(), t) != null) {
                throw new IllegalArgumentException("iSCSI target " + t.iqn() + " is defined twice: give each target its own IQN");
            }
        }
    }

    IscsiTargetDefinition target(String iqn) {
        return targets.get(iqn);
    }

    Collection<IscsiTargetDefinition> targets() {
        return targets.values();
    }
}
