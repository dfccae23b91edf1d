package io.stripestack.raid5;

import io.stripestack.blockdev.BlockDevice;
import io.stripestack.blockdev.MediumErrorException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CopyOnWriteArrayList;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Which device holds which role, the hot spares, and whether the array can still serve I/O: member
 * failures (I/O errors, {@code mdadm --fail}), spares ({@code --add}), removal ({@code --remove}) and the
 * hand-over of a failed role to a spare that is then rebuilt.
 *
 * <p>Concurrency: {@link #lock} (the array's state lock) guards member health, the spares, the sync state
 * ({@link SyncEngine}) and the superblocks ({@link Superblocks}): a member failure changes all of them at
 * once. Lock order: the state lock, then the bitmap's monitor. I/O reads the published state without the
 * lock: {@link #failedRole}, {@link #failed}, {@link #closed} and {@link #recoveredRows} are volatile, and
 * I/O reads the failed role and the recovery checkpoint after taking its row locks (slot owner or shared
 * row lock). The recovery checkpoint moves from row {@code r} to {@code r + 1} only while row {@code r}'s
 * write slot is owned (by the sync pass, see {@link SyncEngine}), so a writer or reader holding a row sees a
 * stable answer to "is the new member valid here".
 */
final class MemberSet {
    /** The array's logger: operators follow one array in one log stream. */
    private static final Logger LOG = LoggerFactory.getLogger(MemberSet.class);

    /**
     * One member slot (role), or a spare (role -1). {@code device} is null when the member is missing.
     * The device fields change only under the state lock, when a spare takes over a failed role; they are
     * volatile because I/O reads them without that lock.
     */
    static final class Member {
        final int role;
        volatile BlockDevice device;
        volatile String displayName;
        volatile int devNumber;
        volatile byte[] deviceUuid;
        volatile long dataSizeSectors;
        volatile Raid5Status.MemberState state;

        Member(int role, BlockDevice device, String displayName, int devNumber, byte[] deviceUuid,
               long dataSizeSectors, Raid5Status.MemberState state) {
            this.role = role;
            this.device = device;
            this.displayName = displayName;
            this.devNumber = devNumber;
            this.deviceUuid = deviceUuid;
            this.dataSizeSectors = dataSizeSectors;
            this.state = state;
        }

        /** Takes over the spare's device for this role; the caller holds the state lock. */
        void takeOver(Member spare) {
            device = spare.device;
            displayName = spare.displayName;
            devNumber = spare.devNumber;
            deviceUuid = spare.deviceUuid;
            dataSizeSectors = spare.dataSizeSectors;
        }

        boolean holdsRole() {
            return state == Raid5Status.MemberState.ACTIVE || state == Raid5Status.MemberState.REBUILDING;
        }
    }

    /** The array's state lock; see the class comment. */
    final Object lock = new Object();
    private final String name;
    private final StripeGeometry geo;
    /** Members by role. */
    final Member[] roles;
    /**
     * Hot spares, in the order they were added; changed under the state lock. Copy-on-write so that the
     * bitmap writer, which must not take the state lock, can walk it.
     */
    final List<Member> spares = new CopyOnWriteArrayList<>();
    /**
     * The members a running reshape grows onto (see {@link Reshaper}): not spares, not yet roles of this
     * geometry; their superblocks are written with the others'. Changed under the state lock.
     */
    final List<Member> reshapeTargets = new CopyOnWriteArrayList<>();
    /** Devices of replaced members, closed with the array; guarded by the state lock. */
    final List<BlockDevice> retired = new ArrayList<>();
    /** Role of the one faulty, missing or rebuilding member, or -1. Written under the state lock. */
    volatile int failedRole = -1;
    /** A second member is lost: every I/O fails. */
    volatile boolean failed;
    /**
     * The roles that turned faulty as the array failed or after (a bit per role): no write was acknowledged
     * without them, so a forced return ({@link ForcedReturn}) may take them back. Guarded by the state lock.
     */
    long leftAsArrayFailed;
    /**
     * Whether {@link #failedRole} was being rebuilt when it failed: its device then holds only part of the data,
     * and must be rebuilt whole rather than re-added. Guarded by the state lock.
     */
    boolean failedRoleWasRebuilding;
    volatile boolean closed;
    /**
     * Rows of the rebuilding member ({@code failedRole}) that hold valid data; 0 when no rebuild runs.
     * Advanced only by the sync pass as owner of the row's slot (see the class comment).
     */
    volatile long recoveredRows;
    /**
     * The rebuilding member is a re-added one ({@link MemberReAdd}): only the bitmap's dirty regions need
     * rebuilding. Written under the state lock; a spare's rebuild clears it.
     */
    volatile boolean rebuildFromBitmap;
    private Superblocks superblocks;
    private SyncEngine sync;

    /**
     * @param resumeRecoveryRows where the rebuild of a member assembled as rebuilding resumes
     * @throws IllegalStateException when more than one role has no active member
     */
    MemberSet(String name, StripeGeometry geo, Member[] roles, List<Member> spareMembers, long resumeRecoveryRows) {
        this.name = name;
        this.geo = geo;
        this.roles = roles;
        this.spares.addAll(spareMembers);
        int absent = 0;
        for (Member m : roles) {
            if (m.state != Raid5Status.MemberState.ACTIVE) {
                absent++;
                failedRole = m.role;
            }
        }
        if (absent > 1) {
            throw new IllegalStateException(name + ": " + absent + " members unavailable");
        }
        if (failedRole >= 0 && roles[failedRole].state == Raid5Status.MemberState.REBUILDING) {
            recoveredRows = Math.min(geo.rows, resumeRecoveryRows);
        }
    }

    /** The parts a member failure updates; set once by the array before any I/O or thread starts. */
    void connect(Superblocks superblocks, SyncEngine sync) {
        this.superblocks = superblocks;
        this.sync = sync;
    }

    /**
     * The member whose chunks of {@code row} must be rebuilt from the others, or -1: the failed member,
     * unless it is being rebuilt and {@code row} is below the checkpoint. Call with the row held (slot
     * owner or shared row lock) and pass values of {@code failedRole} and {@code recoveredRows} read once.
     */
    static int missingIn(long row, int failedRole, long recoveredRows) {
        return failedRole >= 0 && row >= recoveredRows ? failedRole : -1;
    }

    /** Whether {@code device} is still the member being rebuilt. */
    boolean rebuildingOnto(BlockDevice device) {
        int role = failedRole;
        return device != null && role >= 0 && roles[role].state == Raid5Status.MemberState.REBUILDING
                && roles[role].device == device;
    }

    /** The device of the role whose rebuild runs now, or null. */
    BlockDevice rebuildTarget() {
        int role = failedRole;
        return role >= 0 ? roles[role].device : null;
    }

    /** I/O after close would fail on the closed members and must not be mistaken for member failures. */
    void checkOpen() throws IOException {
        if (closed) {
            throw new java.nio.channels.ClosedChannelException();
        }
    }

    void checkUsable(long offset, boolean write) throws MediumErrorException {
        if (failed) {
            throw new MediumErrorException(name + ": array has failed (" + describeFaulty()
                    + "); its data cannot be read or written correctly. If the members failed together, force the "
                    + "array back once they answer (like mdadm --assemble --force); otherwise restore the data from a "
                    + "backup", offset, write);
        }
    }

    private String describeFaulty() {
        StringBuilder s = new StringBuilder();
        for (Member m : roles) {
            if (m.state != Raid5Status.MemberState.ACTIVE) {
                s.append(s.length() == 0 ? "" : ", ").append("member ").append(m.role).append(' ')
                        .append(m.device == null ? "(missing)" : m.displayName).append(' ')
                        .append(m.state.name().toLowerCase(Locale.ROOT));
            }
        }
        return s.toString();
    }

    Raid5Status.Health health() {
        return failed ? Raid5Status.Health.FAILED
                : failedRole >= 0 ? Raid5Status.Health.DEGRADED : Raid5Status.Health.CLEAN;
    }

    /** Flushes every member holding a role (data and parity); a member whose flush fails is marked faulty. */
    void flush() throws IOException {
        checkUsable(0, true);
        for (Member m : roles) {
            BlockDevice device = m.device;
            if (m.holdsRole()) {
                try {
                    device.flush();
                } catch (IOException e) {
                    memberFailed(m.role, device, e);
                }
            }
        }
        checkUsable(0, true);
    }

    /**
     * Marks member {@code role} faulty (once) and records it in the other members' superblocks; a
     * rebuilding member that fails ends its rebuild. Then a spare, if any, starts replacing it.
     *
     * @param device the device whose I/O failed, or null for the role's current one (operator); an error
     *               of a device that has since been replaced by a spare is ignored
     */
    void memberFailed(int role, BlockDevice device, Throwable cause) {
        synchronized (lock) {
            Member m = roles[role];
            if (device != null && m.device != device) {
                LOG.debug("{}: ignoring an error of {}, which no longer holds member {}: {}", name, device.name(), role,
                        cause.getMessage());
                return;
            }
            if (m.state == Raid5Status.MemberState.REBUILDING) {
                recoveredRows = 0;
                m.state = Raid5Status.MemberState.FAULTY;
                failedRoleWasRebuilding = true;
                requestSyncStopLocked(RowOp.RECOVER);
                LOG.error("{}: replacement member {} ({}) failed during its rebuild: {}. The array stays DEGRADED; "
                        + "add another spare", name, role, m.displayName, cause.getMessage());
            } else if (m.state != Raid5Status.MemberState.ACTIVE) {
                return;
            } else {
                m.state = Raid5Status.MemberState.FAULTY;
                if (failedRole >= 0) {
                    failed = true;
                    leftAsArrayFailed |= 1L << role;
                    if (sync != null) {
                        sync.requestStopLocked(true);
                    }
                    LOG.error("{}: member {} ({}) failed: {}. A second member is lost ({}): the array has FAILED and "
                            + "refuses all I/O. If the members failed together and answer again, force it back (like "
                            + "mdadm --assemble --force: the ctl attribute force, or serve --force after a stop)",
                            name, role, m.displayName, cause.getMessage(), describeFaulty());
                } else {
                    failedRole = role;
                    failedRoleWasRebuilding = false;
                    requestSyncStopLocked(null);
                    LOG.error("{}: member {} ({}) failed: {}. The array is DEGRADED: reads of its chunks are rebuilt "
                            + "from parity. {}", name, role, m.displayName, cause.getMessage(), spares.isEmpty()
                            ? "Add a spare to rebuild onto (another failure would lose data)"
                            : "Rebuilding onto spare " + spares.get(0).displayName);
                }
            }
            if (sync == null) {
                return;   // still opening: the array writes the superblocks, and starts recovery, once connected
            }
            superblocks.writeLocked(false);
            startRecoveryLocked();
            sync.wakeLocked();
        }
    }

    /**
     * Stops the running sync pass after its row: when it is {@code pass}, or any pass if {@code pass} is null.
     * Nothing runs before {@link #connect}.
     */
    private void requestSyncStopLocked(RowOp pass) {
        if (sync != null) {
            RowOp running = sync.running();
            sync.requestStopLocked(pass == null ? running != null : running == pass);
        }
    }

    /** The members whose superblock or bitmap write failed are faulty in turn; the caller holds the state lock. */
    void superblockWritesFailedLocked(List<Member> lost) {
        for (Member m : lost) {
            if (m.state == Raid5Status.MemberState.REBUILDING) {
                recoveredRows = 0;
                failedRoleWasRebuilding = true;
            } else if (failedRole >= 0 && failedRole != m.role) {
                failed = true;
                leftAsArrayFailed |= 1L << m.role;
            } else {
                failedRole = m.role;
                failedRoleWasRebuilding = false;
            }
            m.state = Raid5Status.MemberState.FAULTY;
        }
    }

    /** Fails the roles whose write-intent bitmap write failed (a bit mask of roles). */
    void bitmapWriteFailed(long failedRoles) {
        for (int role = 0; role < geo.members; role++) {
            if ((failedRoles & (1L << role)) != 0) {
                memberFailed(role, null, new IOException("writing the write-intent bitmap failed"));
            }
        }
    }

    /** If degraded with a spare and no rebuild running, makes the spare the rebuilding member. */
    void startRecoveryLocked() {
        if (failed || closed || failedRole < 0 || spares.isEmpty() || !reshapeTargets.isEmpty()) {
            return;
        }
        Member slot = roles[failedRole];
        if (slot.state == Raid5Status.MemberState.REBUILDING) {
            return;
        }
        Member spare = spares.remove(0);
        if (slot.device != null) {
            retired.add(slot.device);
        }
        recoveredRows = 0;
        rebuildFromBitmap = false;
        superblocks.rebuildStartsLocked(spare.devNumber, slot.role);
        slot.takeOver(spare);
        slot.state = Raid5Status.MemberState.REBUILDING;
        RowOp running = sync.running();
        if (running != null && running != RowOp.RECOVER) {
            sync.requestStopLocked(true);
        }
        superblocks.writeLocked(false);
        LOG.warn("{}: rebuilding member {} onto spare {}", name, slot.role, slot.displayName);
    }

    /**
     * The rebuild wrote the last row: the rebuilding member becomes active and the array clean. Returns it,
     * or null if it failed after its last row. The caller holds the state lock.
     */
    Member rebuildCompleteLocked() {
        if (failedRole < 0 || roles[failedRole].state != Raid5Status.MemberState.REBUILDING) {
            return null;
        }
        Member m = roles[failedRole];
        m.state = Raid5Status.MemberState.ACTIVE;
        failedRole = -1;
        recoveredRows = 0;
        return m;
    }

    /** Marks member {@code role} faulty as if it had returned an I/O error (operator action, like mdadm --fail). */
    void failMember(int role) {
        checkRole(role);
        memberFailed(role, null, new IOException("failed by operator"));
    }

    private void checkRole(int role) {
        if (role < 0 || role >= geo.members) {
            throw new IllegalArgumentException(name + ": member role " + role + " does not exist; roles are 0.."
                    + (geo.members - 1));
        }
    }

    /** See {@link Raid5Array#addSpare}; {@code blockSize} is the array's logical block size. */
    void addSpare(BlockDevice device, int blockSize) throws IOException {
        checkOpen();
        long needed = superblocks.memberBytesNeeded();
        if (device.size() < needed) {
            throw new IllegalArgumentException(name + ": " + device.name() + " is " + device.size()
                    + " bytes; a member of this array needs at least " + needed
                    + " (data offset + member size) -- use a larger device");
        }
        if (device.logicalBlockSize() > blockSize || geo.chunk % device.logicalBlockSize() != 0) {
            throw new IllegalArgumentException(name + ": " + device.name() + " has " + device.logicalBlockSize()
                    + "-byte blocks; the array uses " + blockSize + "-byte blocks -- use a device with "
                    + blockSize + "-byte (or smaller) blocks");
        }
        byte[] uuid = new byte[16];
        new java.security.SecureRandom().nextBytes(uuid);
        device.write(0, ByteBuffer.allocate(Md1Superblock.OFFSET_BYTES));
        synchronized (lock) {
            checkOpen();
            int devNumber = superblocks.addSpareDeviceLocked();
            Member spare = new Member(-1, device, device.name(), devNumber, uuid,
                    device.size() / 512 - geo.dataOffset / 512, Raid5Status.MemberState.ACTIVE);
            spares.add(spare);
            superblocks.writeLocked(false);
            LOG.info("{}: added {} as a spare (device number {})", name, device.name(), devNumber);
            startRecoveryLocked();
            sync.wakeLocked();
        }
    }

    /** See {@link Raid5Array#removeMember}. */
    void removeMember(int role) throws IOException {
        checkRole(role);
        BlockDevice device;
        synchronized (lock) {
            Member m = roles[role];
            if (m.holdsRole()) {
                throw new IllegalStateException(name + ": member " + role + " (" + m.displayName + ") is "
                        + m.state.name().toLowerCase(Locale.ROOT) + "; fail it first (failMember)");
            }
            device = m.device;
            if (device == null) {
                return;
            }
            m.device = null;
            m.displayName = null;
            m.state = Raid5Status.MemberState.MISSING;
            superblocks.writeLocked(false);
            LOG.info("{}: removed faulty member {} ({})", name, role, device.name());
        }
        device.close();
    }

    /** Per role: device name (null when missing) and state, for {@link Raid5Status}; the caller holds the lock. */
    List<Raid5Status.Member> describeRolesLocked() {
        List<Raid5Status.Member> list = new ArrayList<>(geo.members);
        for (Member m : roles) {
            list.add(new Raid5Status.Member(m.role, m.device == null ? null : m.displayName, m.state));
        }
        return List.copyOf(list);
    }

    List<String> spareNamesLocked() {
        List<String> names = new ArrayList<>();
        for (Member s : spares) {
            names.add(s.displayName);
        }
        return List.copyOf(names);
    }

    /** Every device the array owns: members, spares and replaced members, to close. */
    List<BlockDevice> allDevices() {
        List<BlockDevice> devices = new ArrayList<>();
        synchronized (lock) {
            for (Member m : roles) {
                if (m.device != null) {
                    devices.add(m.device);
                }
            }
            for (Member s : spares) {
                devices.add(s.device);
            }
            for (Member t : reshapeTargets) {
                devices.add(t.device);
            }
            devices.addAll(retired);
        }
        return devices;
    }

    /** Closes the role holders' devices after a failed open (the array never started). */
    void closeRoleDevices() throws IOException {
        for (Member m : roles) {
            if (m.device != null) {
                m.device.close();
            }
        }
    }
}
