package io.stripestack.targetserver.server;

import io.stripestack.blockdev.BlockDevice;
import io.stripestack.raid5.Md1Superblock;
import io.stripestack.raid5.Raid5Array;
import io.stripestack.remote.RemoteBlockDevice;
import io.stripestack.remote.RemoteEndpoint;
import io.stripestack.targetserver.config.StripestackConfig.ArrayConfig;
import io.stripestack.targetserver.config.StripestackConfig.RemoteMemberConfig;
import io.stripestack.targetserver.config.StripestackConfig.RemoteMembersConfig;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The members and spares of one array that live on remote targets, logged in at start: which ones carry an
 * md superblock (they take part in assembly, like member files), which are new spares, and which could not be
 * reached (reported as missing, so the array starts degraded as md does without a disk). Until
 * {@link #handOver} the devices are this object's, and {@link #closeUnowned} closes them.
 *
 * <p>Used by the thread that starts the server, once per array.
 */
final class RemoteArrayMembers {
    private static final Logger log = LoggerFactory.getLogger(RemoteArrayMembers.class);

    private final String array;
    private final List<RemoteBlockDevice> members = new ArrayList<>();
    private final List<RemoteBlockDevice> spares = new ArrayList<>();
    private final List<RemoteBlockDevice> withSuperblock = new ArrayList<>();
    private final List<String> unreachable = new ArrayList<>();
    private boolean handedOver;

    private RemoteArrayMembers(String array) {
        this.array = array;
    }

    /** Logs in to every remote member and spare of {@code c} that answers and reads its superblock. */
    static RemoteArrayMembers open(ArrayConfig c) throws IOException {
        RemoteArrayMembers r = new RemoteArrayMembers(c.name());
        RemoteMembersConfig config = c.remote();
        try {
            r.openAll(config.members(), r.members, config);
            r.openAll(config.spares(), r.spares, config);
        } catch (IOException | RuntimeException e) {
            r.closeUnowned();
            throw e;
        }
        return r;
    }

    private void openAll(List<RemoteMemberConfig> entries, List<RemoteBlockDevice> into, RemoteMembersConfig config)
            throws IOException {
        for (RemoteMemberConfig m : entries) {
            RemoteEndpoint endpoint = new RemoteEndpoint(m.url(), m.chapSecretFile());
            RemoteBlockDevice device;
            try {
                device = RemoteBlockDevice.open(endpoint, config.options());
            } catch (IOException e) {
                log.warn("array {}: remote member {} cannot be reached: {}", array, endpoint, e.getMessage());
                unreachable.add(endpoint + " (" + e.getMessage() + ")");
                continue;
            }
            into.add(device);
            if (carriesSuperblock(device)) {
                withSuperblock.add(device);
            }
        }
    }

    private static boolean carriesSuperblock(BlockDevice device) throws IOException {
        if (device.size() < Md1Superblock.OFFSET_BYTES + Md1Superblock.BLOCK_BYTES) {
            return false;
        }
        ByteBuffer block = ByteBuffer.allocate(Md1Superblock.BLOCK_BYTES);
        device.read(Md1Superblock.OFFSET_BYTES, block);
        try {
            Md1Superblock.decode(block.flip(), device.name());
            return true;
        } catch (IllegalArgumentException noSuperblock) {
            return false;
        }
    }

    boolean anyCarriesSuperblock() {
        return !withSuperblock.isEmpty();
    }

    /** Remote members and spares with an md superblock: assembly places them by their roles. */
    List<RemoteBlockDevice> forAssembly() {
        return withSuperblock;
    }

    /** The reachable members, for a new array. */
    List<RemoteBlockDevice> members() {
        return members;
    }

    List<String> unreachable() {
        return unreachable;
    }

    /** Creating an array over a member that is not there would leave it degraded from its first write. */
    void requireAllReachable() throws IOException {
        if (!unreachable.isEmpty()) {
            throw new IOException("array " + array + ": cannot create it while remote members cannot be reached: "
                    + String.join("; ", unreachable) + ". Start their targets or correct the URLs");
        }
    }

    /**
     * The array took the members (created, or assembled with those of {@link #forAssembly}); the spares without
     * a superblock (spares of a new array: all of them) are added as hot spares now.
     *
     * @param created whether the array was created on {@link #members()} rather than assembled
     */
    void handOver(Raid5Array raid, boolean created) throws IOException {
        handedOver = true;
        List<RemoteBlockDevice> newSpares = new ArrayList<>();
        for (RemoteBlockDevice s : spares) {
            if (created || !withSuperblock.contains(s)) {
                newSpares.add(s);
            }
        }
        if (!created) {
            for (RemoteBlockDevice m : List.copyOf(members)) {
                if (!withSuperblock.contains(m)) {
                    log.warn("array {}: remote member {} carries no md superblock; not used (list it as a spare to"
                            + " rebuild onto it)", array, m.name());
                    m.close();
                    members.remove(m);
                }
            }
        }
        for (int i = 0; i < newSpares.size(); i++) {
            try {
                raid.addSpare(newSpares.get(i));
            } catch (IOException | RuntimeException e) {
                for (RemoteBlockDevice left : newSpares.subList(i, newSpares.size())) {
                    left.close();
                }
                throw e;
            }
        }
    }

    /** The devices the array has now, for status and metrics. */
    List<RemoteBlockDevice> all() {
        List<RemoteBlockDevice> all = new ArrayList<>(members);
        all.addAll(spares);
        return all;
    }

    /** Closes every device unless the array took them. */
    void closeUnowned() {
        if (handedOver) {
            return;
        }
        for (RemoteBlockDevice d : all()) {
            d.close();
        }
    }
}
