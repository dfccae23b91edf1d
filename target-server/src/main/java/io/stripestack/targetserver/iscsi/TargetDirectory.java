package io.stripestack.targetserver.iscsi;

import java.util.Collection;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The targets a server offers, by IQN, as an immutable snapshot that is replaced whole on every change
 * (copy on write).
 *
 * <p>Concurrency: logins and SendTargets read {@link #target} / {@link #targets} from any event loop without a
 * lock: they see one whole snapshot, published through a volatile field. Changes ({@link #add},
 * {@link #replace}, {@link #remove}) are serialized on this object's monitor; each builds a new map from the
 * current one and publishes it. A login that read the old snapshot just before a change completes against the
 * definition it read; the change applies to every later login.
 */
final class TargetDirectory {
    private volatile Map<String, IscsiTargetDefinition> snapshot;

    TargetDirectory(List<IscsiTargetDefinition> initial) {
        Map<String, IscsiTargetDefinition> map = new LinkedHashMap<>();
        for (IscsiTargetDefinition t : initial) {
            if (map.putIfAbsent(t.iqn(), t) != null) {
                throw new IllegalArgumentException("iSCSI target " + t.iqn() + " is defined twice: give each target its own IQN");
            }
        }
        snapshot = Collections.unmodifiableMap(map);
    }

    IscsiTargetDefinition target(String iqn) {
        return snapshot.get(iqn);
    }

    Collection<IscsiTargetDefinition> targets() {
        return snapshot.values();
    }

    synchronized void add(IscsiTargetDefinition target) {
        if (snapshot.containsKey(target.iqn())) {
            throw new IllegalArgumentException("target " + target.iqn() + " exists already");
        }
        Map<String, IscsiTargetDefinition> next = new LinkedHashMap<>(snapshot);
        next.put(target.iqn(), target);
        snapshot = Collections.unmodifiableMap(next);
    }

    /** Puts {@code target} in the place of the definition with its IQN; returns the one it replaced. */
    synchronized IscsiTargetDefinition replace(IscsiTargetDefinition target) {
        IscsiTargetDefinition old = require(target.iqn());
        Map<String, IscsiTargetDefinition> next = new LinkedHashMap<>(snapshot);
        next.put(target.iqn(), target);
        snapshot = Collections.unmodifiableMap(next);
        return old;
    }

    synchronized IscsiTargetDefinition remove(String iqn) {
        IscsiTargetDefinition old = require(iqn);
        Map<String, IscsiTargetDefinition> next = new LinkedHashMap<>(snapshot);
        next.remove(iqn);
        snapshot = Collections.unmodifiableMap(next);
        return old;
    }

    private IscsiTargetDefinition require(String iqn) {
        IscsiTargetDefinition t = snapshot.get(iqn);
        if (t == null) {
            throw new IllegalArgumentException("no target " + iqn);
        }
        return t;
    }
}
