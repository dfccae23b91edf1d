package io.stripestack.target.iscsi;

import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;

/**
 * What every connection of one server shares: settings, targets, the session registry, the I/O
 * executor, the write buffer budget and the set of live connections (for draining on close).
 *
 * <p>Concurrency: immutable apart from the registry, the budget and the connection set, which are
 * thread-safe.
 */
final class ServerContext {
    final IscsiServerSettings settings;
    final Executor ioExecutor;
    final SessionRegistry sessions = new SessionRegistry();
    final WriteBufferBudget writeBuffers;
    final Set<IscsiConnection> connections = ConcurrentHashMap.newKeySet();
    private final Map<String, IscsiTargetDefinition> targets = new LinkedHashMap<>();

    ServerContext(IscsiServerSettings settings, List<IscsiTargetDefinition> targetList, Executor ioExecutor) {
        this.settings = settings;
        this.ioExecutor = ioExecutor;
        this.writeBuffers = new WriteBufferBudget(settings.writeBufferBudget());
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
