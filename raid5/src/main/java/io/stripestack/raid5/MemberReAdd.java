package io.stripestack.raid5;

import io.stripestack.blockdev.BlockDevice;
import java.util.Arrays;
import java.util.Locale;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Puts a faulty member's own device back into its role, like {@code mdadm --re-add}: a disk (or a remote
 * target) that came back after a failure still holds every row written before it failed, so with the
 * write-intent bitmap the rebuild visits only the regions whose bits are set and takes every other row as
 * it is. Without a bitmap (the partial parity log and md's resync policy keep none) the re-added member is
 * rebuilt whole, as a spare would be.
 *
 * <p>Why the bits are enough: a row's bit is set, durably, by the row's slot owner before any write to the
 * row, and the bitmap daemon clears no bit while the array is degraded, so every row written since the
 * member failed (and every row being written when it failed) is dirty. The rebuild decides "clean: skip"
 * as the row's slot owner ({@link SyncEngine}), so no write to that row can slip between the decision and
 * the checkpoint moving past it; writes below the checkpoint reach the re-added member as usual.
 *
 * <p>Concurrency: runs under the array's state lock ({@link MemberSet#lock}); stateless otherwise.
 */
final class MemberReAdd {
    private static final Logger LOG = LoggerFactory.getLogger(MemberReAdd.class);

    private MemberReAdd() {
    }

    /**
     * Starts the rebuild of {@code role} onto the faulty device it still holds; returns whether only the
     * bitmap's dirty regions are rebuilt.
     *
     * @throws IllegalStateException naming the reason when the role is not faulty with its device attached,
     *                               or the array has failed
     */
    static boolean start(String name, MemberSet members, Superblocks superblocks, SyncEngine sync, int role) {
        synchronized (members.lock) {
            refuseIfStoppedLocked(name, members);
            if (role < 0 || role >= members.roles.length) {
                throw new IllegalArgumentException(name + ": member role " + role + " does not exist; roles are 0.."
                        + (members.roles.length - 1));
            }
            return startLocked(name, members, superblocks, sync, role);
        }
    }

    /**
     * Puts {@code device}, the device of a member that failed and was removed, back into the role its superblock
     * {@code sb} names ({@code mdadm --re-add} of a removed disk): the role must still be empty and the array
     * degraded by it alone, and the superblock must be that member's own (the array's set UUID, the role's
     * device number and device UUID). The rebuild then goes as {@link #start} says; the array owns the device.
     *
     * @return the role re-added
     * @throws IllegalArgumentException naming why the device is not that member (the caller may add it as a
     *                                  spare instead); nothing changed then
     */
    static int startWithDevice(String name, MemberSet members, Superblocks superblocks, SyncEngine sync,
                               BlockDevice device, Md1Superblock sb) {
        synchronized (members.lock) {
            refuseIfStoppedLocked(name, members);
            if (!Arrays.equals(sb.setUuid, superblocks.templateCopyLocked().setUuid)) {
                throw new IllegalArgumentException(name + ": " + device.name() + " belongs to another array (set UUID "
                        + Md1Superblock.formatUuid(sb.setUuid) + ")");
            }
            for (MemberSet.Member m : members.roles) {
                if (m.devNumber == sb.devNumber && Arrays.equals(m.deviceUuid, sb.deviceUuid)) {
                    if (m.device != null || m.state != Raid5Status.MemberState.MISSING || members.failedRole != m.role) {
                        throw new IllegalArgumentException(name + ": " + device.name() + " was member " + m.role
                                + ", which is " + m.state.name().toLowerCase(Locale.ROOT)
                                + (m.device != null ? " on " + m.displayName : "") + " now; it cannot be re-added");
                    }
                    if (members.failedRoleWasRebuilding) {
                        throw new IllegalArgumentException(name + ": " + device.name() + " was member " + m.role
                                + ", which failed while it was being rebuilt, so it holds only part of the data and"
                                + " cannot be re-added");
                    }
                    m.device = device;
                    m.displayName = device.name();
                    m.state = Raid5Status.MemberState.FAULTY;
                    startLocked(name, members, superblocks, sync, m.role);
                    return m.role;
                }
            }
            throw new IllegalArgumentException(name + ": " + device.name() + " carries this array's superblock but is"
                    + " none of its removed members (device number " + sb.devNumber + ")");
        }
    }

    private static void refuseIfStoppedLocked(String name, MemberSet members) {
        if (members.closed || members.failed) {
            throw new IllegalStateException(name + ": the array is " + (members.closed ? "closed" : "failed")
                    + "; a member cannot be re-added");
        }
    }

    private static boolean startLocked(String name, MemberSet members, Superblocks superblocks, SyncEngine sync,
                                       int role) {
        MemberSet.Member m = members.roles[role];
        if (m.state != Raid5Status.MemberState.FAULTY || m.device == null || members.failedRole != role) {
            throw new IllegalStateException(name + ": member " + role + " is "
                    + m.state.name().toLowerCase(Locale.ROOT) + (m.device == null ? " without a device" : "")
                    + "; only a faulty member that still has its device can be re-added (add a spare instead)");
        }
        if (members.failedRoleWasRebuilding) {
            throw new IllegalStateException(name + ": member " + role + " (" + m.displayName + ") failed while it "
                    + "was being rebuilt, so its device holds only part of the data; it cannot be re-added -- "
                    + "remove it and add it again as a spare, to be rebuilt whole");
        }
        boolean fromBitmap = superblocks.hasBitmap();
        members.rebuildFromBitmap = fromBitmap;
        members.recoveredRows = 0;
        superblocks.rebuildStartsLocked(m.devNumber, role);
        m.state = Raid5Status.MemberState.REBUILDING;
        RowOp running = sync.running();
        if (running != null && running != RowOp.RECOVER) {
            sync.requestStopLocked(true);
        }
        superblocks.writeLocked(false);
        sync.wakeLocked();
        LOG.warn("{}: member {} ({}) re-added; {}", name, role, m.displayName, fromBitmap
                ? "rebuilding the regions the write-intent bitmap marks dirty"
                : "no write-intent bitmap, so it is rebuilt whole");
        return fromBitmap;
    }
}
