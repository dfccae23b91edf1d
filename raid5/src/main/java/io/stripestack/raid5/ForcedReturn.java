package io.stripestack.raid5;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Brings a running array that failed back, like stopping it and {@code mdadm --assemble --force}: the members
 * that turned faulty as the array failed or after ({@link MemberSet#leftAsArrayFailed}) missed no acknowledged
 * write (every I/O fails once the array has failed), so once their devices answer again (remote targets that
 * died at once and came back) they are put back in sync, the array runs degraded without the member that left
 * first, and that one is re-added (rebuilt from the write-intent bitmap's dirty regions, or whole) if its device
 * answers too. Rows being written when the array failed may have parity that does not match their data, as after
 * a forced assembly; the member that left first is never taken back in sync, since the array wrote without it.
 *
 * <p>Concurrency: runs under the array's state lock ({@link MemberSet#lock}), so no member fails or returns
 * meanwhile; the probe reads of the returning devices happen under it too (the array serves nothing while failed).
 */
final class ForcedReturn {
    private static final Logger LOG = LoggerFactory.getLogger(ForcedReturn.class);

    private ForcedReturn() {
    }

    /**
     * Returns what was done, one line per member, for the operator.
     *
     * @throws IllegalStateException naming the reason, with nothing changed, when the array has not failed or a
     *                               member to take back does not answer
     */
    static List<String> start(String name, MemberSet members, Superblocks superblocks, SyncEngine sync) {
        synchronized (members.lock) {
            if (members.closed) {
                throw new IllegalStateException(name + ": the array is closed");
            }
            if (!members.failed) {
                throw new IllegalStateException(name + ": the array has not failed (it is "
                        + members.health().name().toLowerCase(java.util.Locale.ROOT) + "); there is nothing to force "
                        + "-- re-add a faulty member (re-add) or add a spare instead");
            }
            List<MemberSet.Member> back = new ArrayList<>();
            List<Long> theirEvents = new ArrayList<>();
            for (MemberSet.Member m : members.roles) {
                if ((members.leftAsArrayFailed & (1L << m.role)) == 0) {
                    continue;
                }
                if (m.device == null) {
                    throw new IllegalStateException(name + ": member " + m.role + " left as the array failed but was "
                            + "removed since; nothing was changed -- restart the server with --force and its file listed");
                }
                try {
                    theirEvents.add(superblockEvents(m));
                } catch (IOException e) {
                    throw new IllegalStateException(name + ": member " + m.role + " (" + m.displayName + ") does not "
                            + "answer yet (" + e.getMessage() + "); nothing was changed -- force again once it does", e);
                }
                back.add(m);
            }
            if (back.isEmpty()) {
                throw new IllegalStateException(name + ": no member left the array as it failed; nothing to force");
            }
            long arrayEvents = superblocks.events();
            for (MemberSet.Member m : back) {
                m.state = Raid5Status.MemberState.ACTIVE;
                superblocks.memberBackLocked(m.devNumber, m.role);
            }
            members.leftAsArrayFailed = 0;
            members.failed = false;
            superblocks.writeLocked(false);
            List<String> done = new ArrayList<>();
            for (int i = 0; i < back.size(); i++) {
                MemberSet.Member m = back.get(i);
                long forcedEvents = arrayEvents - theirEvents.get(i);
                done.add("member " + m.role + " (" + m.displayName + ") FORCED back in sync: its events "
                        + theirEvents.get(i) + " counted as the array's " + arrayEvents + ", " + forcedEvents + " event"
                        + (forcedEvents == 1 ? "" : "s") + " forced");
            }
            if (members.failed) {
                done.add("a member failed again while its superblock was written: the array has FAILED again");
            } else {
                done.add(reAddFirstToLeave(name, members, superblocks, sync));
                sync.wakeLocked();
            }
            for (String line : done) {
                LOG.warn("{}: forced return: {}", name, line);
            }
            LOG.warn("{}: forced return: rows being written when the array failed may have parity that does not match "
                    + "their data; check the data written last", name);
            return done;
        }
    }

    /** The member that left before the array failed: re-added if its device answers, else what to do. */
    private static String reAddFirstToLeave(String name, MemberSet members, Superblocks superblocks, SyncEngine sync) {
        int role = members.failedRole;
        if (role < 0) {
            return "every member is back";
        }
        MemberSet.Member first = members.roles[role];
        if (first.state != Raid5Status.MemberState.FAULTY || first.device == null) {
            members.startRecoveryLocked();   // onto a spare, if the array has one
            return "member " + role + " is " + (first.state == Raid5Status.MemberState.REBUILDING
                    ? "being rebuilt onto spare " + first.displayName
                    : first.state.name().toLowerCase(java.util.Locale.ROOT)
                            + ": the array runs DEGRADED until a spare is added");
        }
        try {
            superblockEvents(first);
            boolean fromBitmap = MemberReAdd.start(name, members, superblocks, sync, role);
            return "member " + role + " (" + first.displayName + ") left before the array failed and missed writes: "
                    + "re-added, " + (fromBitmap ? "rebuilding the regions the write-intent bitmap marks dirty"
                    : "rebuilt whole");
        } catch (IOException | IllegalStateException e) {
            members.startRecoveryLocked();   // onto a spare, if the array has one
            if (first.state == Raid5Status.MemberState.REBUILDING) {
                return "member " + role + " left before the array failed and is not re-added (" + e.getMessage()
                        + "); rebuilding it onto spare " + first.displayName;
            }
            return "member " + role + " (" + first.displayName + ") left before the array failed and is not re-added ("
                    + e.getMessage() + "): the array runs DEGRADED -- re-add it once it answers, or remove it and add "
                    + "a spare";
        }
    }

    private static long superblockEvents(MemberSet.Member m) throws IOException {
        ByteBuffer block = ByteBuffer.allocate(Md1Superblock.BLOCK_BYTES);
        m.device.read(Md1Superblock.OFFSET_BYTES, block);
        try {
            return Md1Superblock.decode(block.flip(), m.displayName).events;
        } catch (IllegalArgumentException e) {
            throw new IOException("its superblock is unreadable: " + e.getMessage(), e);
        }
    }
}
