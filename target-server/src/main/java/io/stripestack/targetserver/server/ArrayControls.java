package io.stripestack.targetserver.server;

import io.stripestack.raid5.ConsistencyPolicy;
import io.stripestack.raid5.Raid5Array;
import io.stripestack.raid5.Raid5Status;
import io.stripestack.raid5.SyncProgress;
import io.stripestack.targetserver.control.ControlAttribute;
import io.stripestack.targetserver.control.ControlRegistry;
import java.io.IOException;

/**
 * An array's attributes under {@code NAME/} on the admin socket, like md's sysfs directory ({@code stripestack ctl
 * get md0/array_state}); registered when the array starts serving, at start-up or at run time, and removed with
 * it ({@code ControlRegistry.unregisterAll("NAME/")}). Stateless; each attribute calls the array, which is
 * thread-safe.
 */
final class ArrayControls {
    private ArrayControls() {
    }

    /** What the attributes that change the array's description do (LiveArrays: check, apply, record). */
    interface Changes {
        /** {@code NAME/add}: a file or remote LUN added, or a removed member re-added; returns what happened. */
        String add(String what) throws IOException;

        void stripeCacheSize(int rows);

        void checkParityOnReads(boolean on);

        /** {@code NAME/sync_speed_min} and {@code NAME/sync_speed_max}, KiB/s: kept across a reshape. */
        void syncSpeeds(int minKibPerSecond, int maxKibPerSecond);
    }

    static void register(ControlRegistry registry, String name, Raid5Array array, Changes changes) {
        registry.register(name + "/level", ControlAttribute.readOnly(() -> "raid5"));
        registry.register(name + "/array_state", ControlAttribute.readOnly(() -> array.status().health().name().toLowerCase()));
        registry.register(name + "/degraded", ControlAttribute.readOnly(() -> Long.toString(array.status().members()
                .stream().filter(m -> m.state() != Raid5Status.MemberState.ACTIVE).count())));
        // writing it grows the array onto its spares (md's reshape); the configuration file follows when it ends
        registry.register(name + "/raid_disks", reshape(name, array, array::raidDevices, 3, 64, "raid_disks",
                array::setRaidDevices));
        // writing it (bytes, like md's) reshapes the array to that chunk size
        registry.register(name + "/chunk_size", reshape(name, array, array::chunkBytes, 4096, 1 << 30, "chunk_size",
                array::setChunkSize));
        registry.register(name + "/layout", ControlAttribute.readOnly(() -> array.layout().toString()));
        registry.register(name + "/uuid", ControlAttribute.readOnly(array::uuid));
        registry.register(name + "/stripe_cache_size", ControlAttribute.ofInt(array::stripeCacheSize,
                changes::stripeCacheSize, 1, 32768));
        registry.register(name + "/check_parity_on_reads", ControlAttribute.ofBoolean(array::checkParityOnReads,
                changes::checkParityOnReads));
        registry.register(name + "/sync_action", action(array::syncAction, array::setSyncAction));
        registry.register(name + "/consistency_policy", action(() -> array.consistencyPolicy().mdName(), value -> {
            try {
                array.setConsistencyPolicy(ConsistencyPolicy.fromMdName(value));
            } catch (IOException e) {
                throw new IllegalArgumentException(name + ": " + e.getMessage(), e);
            }
        }));
        registry.register(name + "/sync_completed", ControlAttribute.readOnly(() -> {
            SyncProgress p = array.syncProgress();
            return p.running() ? p.doneSectors() + " / " + p.totalSectors() : "none";
        }));
        registry.register(name + "/sync_speed", ControlAttribute.readOnly(() -> Long.toString(array.syncProgress().speedKiBps())));
        registry.register(name + "/sync_speed_min", ControlAttribute.ofInt(array::syncSpeedMin,
                kib -> changes.syncSpeeds(kib, array.syncSpeedMax()), 1, Integer.MAX_VALUE));
        registry.register(name + "/sync_speed_max", ControlAttribute.ofInt(array::syncSpeedMax,
                kib -> changes.syncSpeeds(array.syncSpeedMin(), kib), 1, Integer.MAX_VALUE));
        registry.register(name + "/mismatch_cnt", ControlAttribute.readOnly(() -> Long.toString(array.mismatchCount())));
        registry.register(name + "/fail", memberAction(array, "failing", array::failMember));
        registry.register(name + "/remove", memberAction(array, "removing", array::removeMember));
        // writing 1 brings a failed array back as mdadm --assemble --force would (Raid5Array.forceAssemble)
        java.util.concurrent.atomic.AtomicReference<String> lastForce = new java.util.concurrent.atomic.AtomicReference<>("");
        registry.register(name + "/force", action(lastForce::get, value -> {
            if (!value.equals("1")) {
                throw new IllegalArgumentException(name + "/force: write 1 to bring the failed array back (mdadm "
                        + "--assemble --force); '" + value + "' is not 1");
            }
            lastForce.set(String.join("; ", array.forceAssemble()));
        }));
        registry.register(name + "/add", new ControlAttribute() {
            @Override
            public String get() {
                return "";
            }

            @Override
            public void set(String value) {
                apply(value);
            }

            @Override
            public String apply(String value) {
                try {
                    return changes.add(value);
                } catch (IOException e) {
                    throw new IllegalStateException("adding " + value.trim() + " to " + name + ": " + e.getMessage(), e);
                }
            }
        });
    }

    private interface Reshape {
        void to(int value) throws IOException;
    }

    /**
     * {@code raid_disks} and {@code chunk_size}: {@code N}, or {@code N force} to reshape an array that keeps a
     * partial parity log. md keeps no log while it reshapes (the policy is resync until the reshape ends, so a
     * crash meanwhile means a whole resync with the write hole open); that is said before, not found in a log after.
     */
    private static ControlAttribute reshape(String name, Raid5Array array, java.util.function.IntSupplier getter,
            int min, int max, String attribute, Reshape reshape) {
        return new ControlAttribute() {
            @Override
            public String get() {
                return Integer.toString(getter.getAsInt());
            }

            @Override
            public void set(String value) {
                String[] words = value.trim().split("\\s+");
                boolean force = words.length == 2 && words[1].equals("force");
                if (words.length > 2 || words.length == 2 && !force) {
                    throw new IllegalArgumentException("'" + value.trim() + "': give N, or 'N force' (valid N: " + min
                            + ".." + max + ")");
                }
                int target = ControlAttribute.parseInt(words[0], min, max);
                if (target != getter.getAsInt() && !force && array.consistencyPolicy() == ConsistencyPolicy.PPL) {
                    throw new IllegalArgumentException(name + " keeps a partial parity log (consistency_policy ppl),"
                            + " which md does not keep while it reshapes: from now until the reshape ends the policy"
                            + " would be resync (a crash meanwhile resyncs the whole array, with the write hole open);"
                            + " nothing changed. To reshape anyway: ctl set " + name + "/" + attribute + " '" + target
                            + " force'");
                }
                try {
                    reshape.to(target);
                } catch (IOException e) {
                    throw new IllegalStateException(name + ": " + e.getMessage(), e);
                }
            }
        };
    }

    /** An attribute whose value is a word and whose setter does something (sysfs "action" files). */
    private static ControlAttribute action(java.util.function.Supplier<String> getter,
            java.util.function.Consumer<String> setter) {
        return new ControlAttribute() {
            @Override
            public String get() {
                return getter.get();
            }

            @Override
            public void set(String value) {
                setter.accept(value.trim());
            }
        };
    }

    private interface MemberOperation {
        void apply(int role) throws IOException;
    }

    /** md0/fail, md0/remove: take a member role (0..n-1). */
    private static ControlAttribute memberAction(Raid5Array array, String verb, MemberOperation operation) {
        return action(() -> "", value -> {
            int role = ControlAttribute.parseInt(value, 0, array.memberCount() - 1);
            try {
                operation.apply(role);
            } catch (IOException e) {
                throw new IllegalStateException(verb + " member " + role + " of " + array.name() + ": " + e.getMessage(), e);
            }
        });
    }

}
