package io.stripestack.raid5;

import io.stripestack.blockdev.BlockDevice;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Opens an existing array from its members' superblocks, like {@code mdadm --assemble}: the member order
 * comes from each superblock's device role, not from the order of the list. A device whose superblock
 * is missing or damaged, that belongs to another array (different set UUID), that is stale (fewer
 * events than the newest superblock: it missed writes) or that the newest superblock records as
 * faulty is never used; each such device, and each role nobody fills, is reported by name with what to
 * do. With exactly one role unfilled the array starts degraded (if {@link Raid5Options#allowDegraded()});
 * with more, assemble fails with {@link Raid5AssembleException}. Spares (role 0xffff) are kept as hot
 * spares; a member whose superblock carries a recovery offset resumes its rebuild from there. An array
 * that was not shut down cleanly and is degraded is refused unless
 * {@link Raid5Options#startDirtyDegraded()} (md's {@code start_dirty_degraded}). A member whose md
 * bad-block log lists bad sectors is refused (the engine does not honour the log), with nothing written;
 * a spare with such a log is left unused and untouched (see {@link MdBadBlockLog}). With
 * {@link Raid5Options#force()} an array that lost more than one member starts again when the members that left
 * last did so only as the array failed (mdadm's {@code --assemble --force}, with a staleness check mdadm lacks):
 * see {@link #force}.
 *
 * <p>Ownership: the array takes every device it uses and closes it on {@link Raid5Array#close()};
 * devices assemble does not use are closed before it returns. Stateless; safe from any thread.
 */
public final class Raid5Assembler {
    private static final Logger LOG = LoggerFactory.getLogger(Raid5Assembler.class);
    private static final String FORCE_HINT = ". If the members that left last still hold their data (they failed "
            + "together: a full file system, targets that went away at once), start it with force (serve --force; "
            + "md's mdadm --assemble --force), which takes them back and says which";

    /**
     * A member of this set that is not current (marked faulty, or stale), still in its role by its own superblock
     * and whole: what a forced assembly may take back, or make a spare to rebuild onto.
     */
    private record LeftBehind(int index, BlockDevice device, Md1Superblock sb, int role, String problem) {
    }

    private Raid5Assembler() {
    }

    /**
     * @param devices      candidate members, in any order
     * @param missingNames members the caller expected but could not open (e.g. absent files), for the report
     */
    public static Raid5Array assemble(List<? extends BlockDevice> devices, List<String> missingNames,
                                      Raid5Options options) throws IOException {
        List<String> problems = new ArrayList<>();
        int count = devices.size();
        Md1Superblock[] sbs = new Md1Superblock[count];
        for (int i = 0; i < count; i++) {
            BlockDevice d = devices.get(i);
            try {
                ByteBuffer block = ByteBuffer.allocate(Md1Superblock.BLOCK_BYTES);
                d.read(Md1Superblock.OFFSET_BYTES, block);
                sbs[i] = Md1Superblock.decode(block.flip(), d.name());
            } catch (IllegalArgumentException e) {
                problems.add(e.getMessage());
            } catch (IOException e) {
                problems.add(d.name() + ": cannot read its superblock (" + e.getMessage()
                        + "); it is not used -- check the file or replace the member");
            }
        }
        Md1Superblock ref = pickReference(sbs);
        if (ref == null) {
            closeAll(devices, new boolean[count]);
            throw new Raid5AssembleException("no RAID-5 member with a valid md superblock among "
                    + names(devices), problems);
        }
        checkSupported(ref, devices.get(indexOf(sbs, ref)).name());
        BlockDevice[] byRole = new BlockDevice[ref.raidDisks];
        List<MemberSet.Member> spares = new ArrayList<>();
        Md1Superblock[] sbByRole = new Md1Superblock[ref.raidDisks];
        boolean[] used = new boolean[count];
        List<String> refusals = new ArrayList<>();
        List<LeftBehind> leftBehind = new ArrayList<>();
        String setName = "'" + ref.setName + "' (" + Md1Superblock.formatUuid(ref.setUuid) + ")";
        for (int i = 0; i < count; i++) {
            Md1Superblock sb = sbs[i];
            if (sb == null) {
                continue;
            }
            BlockDevice d = devices.get(i);
            if (!sb.sameSet(ref)) {
                problems.add(d.name() + ": belongs to another array '" + sb.setName + "' ("
                        + Md1Superblock.formatUuid(sb.setUuid) + "), not to " + setName
                        + "; it is not used -- remove it from this array's member list");
                continue;
            }
            int role = sb.devNumber < ref.devRoles.length ? ref.devRoles[sb.devNumber] : Md1Superblock.ROLE_SPARE;
            long needed = ref.dataOffsetSectors * 512 + ref.sizeSectors * 512;
            if (role == Md1Superblock.ROLE_FAULTY) {
                leaveBehind(leftBehind, problems, i, d, sb, ref, needed, d.name() + ": was marked faulty in " + setName
                        + " (its events " + sb.events + ", array events " + ref.events + "); it is not used -- "
                        + "replace it with a new member");
                continue;
            }
            if (role == Md1Superblock.ROLE_SPARE && d.size() >= needed && sb.dataOffsetSectors == ref.dataOffsetSectors) {
                String badBlocks = badBlockRefusal(d, sb, problems);
                if (badBlocks != null) {
                    problems.add(badBlocks + " -- it is not used as a spare and is left untouched");
                    continue;
                }
                spares.add(new MemberSet.Member(-1, d, d.name(), sb.devNumber, sb.deviceUuid, sb.dataSizeSectors,
                        Raid5Status.MemberState.ACTIVE));
                used[i] = true;
                continue;
            }
            if (role >= ref.raidDisks) {
                problems.add(d.name() + ": has no usable role (0x" + Integer.toHexString(role) + ") in "
                        + setName + "; it is not used -- remove it from the member list");
                continue;
            }
            boolean reshapeStep = reshapeStepBehind(sb, ref);
            boolean reshapeInvolved = sb.isReshaping() || ref.isReshaping();
            if (sb.events + 1 < ref.events || (sb.events < ref.events && reshapeInvolved && !reshapeStep)) {
                leaveBehind(leftBehind, problems, i, d, sb, ref, needed, d.name() + ": is stale (events " + sb.events
                        + " < " + ref.events + "): it missed writes made while it was away; it is not used -- rebuild "
                        + "onto it as a new member, or remove it from the list");
                continue;
            }
            if (d.size() < needed || (sb.dataOffsetSectors != ref.dataOffsetSectors && !reshapeStep)) {
                problems.add(d.name() + ": is " + d.size() + " bytes with data offset " + sb.dataOffsetSectors
                        + " sectors; the array needs " + needed + " bytes with data offset " + ref.dataOffsetSectors
                        + " -- the file was truncated or altered; it is not used");
                continue;
            }
            if (byRole[role] != null) {
                closeAll(devices, new boolean[count]);
                throw new Raid5AssembleException("two devices claim role " + role + " of " + setName,
                        List.of(byRole[role].name() + " and " + d.name() + " have the same role and events; "
                                + "one is a copy of the other -- list only one of them"));
            }
            String badBlocks = badBlockRefusal(d, sb, problems);
            if (badBlocks != null) {
                refusals.add(badBlocks + ". stripestack does not honour md's bad-block log and would read those "
                        + "sectors as valid data, so it does not start the array with this member; nothing has been "
                        + "written to any member. Replace the member under Linux (mdadm --replace, or --fail, --remove "
                        + "and --add), or take the file out of this array (out of its configuration, and out of the "
                        + "directories searched for its members) to start degraded without it and rebuild onto a spare");
            }
            byRole[role] = d;
            sbByRole[role] = sb;
            used[i] = true;
        }
        if (!refusals.isEmpty()) {
            closeAll(devices, new boolean[count]);
            for (String r : refusals) {
                LOG.warn("assemble {}: {}", setName, r);
            }
            throw new Raid5AssembleException("cannot start " + setName + ": md's bad-block log of "
                    + (refusals.size() == 1 ? "a member lists bad sectors" : refusals.size() + " members lists bad sectors"),
                    refusals);
        }
        Md1Superblock template = ref.copy();
        boolean forced = false;
        if (options.force()) {
            forced = force(byRole, sbByRole, used, leftBehind, spares, sbs, ref, template, setName, problems, devices);
        }
        for (LeftBehind l : leftBehind) {
            if (!used[l.index]) {
                problems.add(l.problem);
            }
        }
        MemberSet.Member[] roles = new MemberSet.Member[ref.raidDisks];
        int absent = 0;
        long resumeRows = 0;
        for (int r = 0; r < ref.raidDisks; r++) {
            if (byRole[r] != null && sbByRole[r].isRecovering()) {
                Md1Superblock sb = sbByRole[r];
                absent++;
                resumeRows = sb.recoveryOffset / ref.chunkSectors;
                problems.add(byRole[r].name() + ": was being rebuilt as member " + r + "; the rebuild resumes at "
                        + "member sector " + resumeRows * ref.chunkSectors);
                roles[r] = new MemberSet.Member(r, byRole[r], byRole[r].name(), sb.devNumber, sb.deviceUuid,
                        sb.dataSizeSectors, Raid5Status.MemberState.REBUILDING);
            } else if (byRole[r] == null) {
                absent++;
                problems.add("role " + r + " of " + setName + " has no usable member (see above); the array is "
                        + "degraded without it -- replace the member");
                roles[r] = new MemberSet.Member(r, null, null, -1, new byte[16], 0, Raid5Status.MemberState.MISSING);
            } else {
                Md1Superblock sb = sbByRole[r];
                roles[r] = new MemberSet.Member(r, byRole[r], byRole[r].name(), sb.devNumber, sb.deviceUuid,
                        sb.dataSizeSectors, Raid5Status.MemberState.ACTIVE);
            }
        }
        List<String> notFound = new ArrayList<>();
        for (String missing : missingNames) {
            // md's rule: a device is a member when its superblock says so and it is given, whatever its name
            notFound.add(missing + (absent > 0 ? ": not found; if the member is lost, the array runs degraded until it "
                    + "is replaced" : ": not found, and not needed: every member role is held by a device whose "
                    + "superblock says so (a renamed or moved member file is found by its superblock)"));
        }
        problems.addAll(0, notFound);
        if (absent > 1 || (absent == 1 && !options.allowDegraded())) {
            closeAll(devices, new boolean[count]);
            throw new Raid5AssembleException("cannot start " + setName + ": " + absent + " of " + ref.raidDisks
                    + " members unavailable" + (absent == 1 ? " and degraded start is not allowed"
                    : !options.force() && !leftBehind.isEmpty() ? FORCE_HINT : ""), problems);
        }
        if (forced) {
            // mdadm --force marks such an array clean: the members taken back hold every acknowledged write
            problems.add("forced start: rows being written when the array failed may have parity that does not match "
                    + "their data; check the data written last");
        } else if (absent == 1 && !ref.isClean() && !ref.hasPpl() && !options.startDirtyDegraded()) {
            closeAll(devices, new boolean[count]);
            throw new Raid5AssembleException("cannot start " + setName + ": it was not shut down cleanly AND is "
                    + "degraded. Rows being written at the crash may have parity that does not match their data "
                    + "(the RAID-5 write hole), and with a member missing such rows cannot be resynced: the missing "
                    + "member's data there would be rebuilt wrong, silently. Bring the missing member back if you "
                    + "can; otherwise start it anyway with start_dirty_degraded (Raid5Options.withStartDirtyDegraded) "
                    + "and check the data written last", problems);
        }
        closeAll(devices, used);
        for (String p : problems) {
            LOG.warn("assemble {}: {}", setName, p);
        }
        if (!forced && !template.isClean() && !template.hasPpl() && absent == 1) {
            LOG.warn("assemble {}: started DIRTY and DEGRADED (start_dirty_degraded): rows written at the crash may "
                    + "read back wrong from the missing member; check the data written last", setName);
        }
        WriteIntentBitmap bitmap = template.hasBitmap() ? loadBitmap(roles, template, problems) : null;
        return new Raid5Array(template, roles, spares, resumeRows, bitmap, options, problems);
    }

    /** Notes a member that is not used; one a forced assembly could take back is kept in {@code leftBehind}. */
    private static void leaveBehind(List<LeftBehind> leftBehind, List<String> problems, int index, BlockDevice d,
                                    Md1Superblock sb, Md1Superblock ref, long needed, String problem) {
        int ownRole = sb.devNumber < sb.devRoles.length ? sb.devRoles[sb.devNumber] : Md1Superblock.ROLE_SPARE;
        boolean whole = d.size() >= needed && sb.dataOffsetSectors == ref.dataOffsetSectors;
        if (ownRole < ref.raidDisks && whole && !sb.isRecovering() && !sb.isReshaping() && !ref.isReshaping()) {
            leftBehind.add(new LeftBehind(index, d, sb, ownRole, problem));
        } else {
            problems.add(problem);
        }
    }

    /**
     * What {@code mdadm --assemble --force} does when too few members are current: the freshest left-behind member
     * is taken back into its role (its events count as the newest), then every other one of the same events, until
     * the array can start; the remaining left-behind members become spares, rebuilt onto. Unlike mdadm, a member is
     * taken back only when the superblocks show that no write could be acknowledged without it: it left as the
     * array failed ({@link #whyStale}); otherwise the start is refused, naming it. Returns whether a member was
     * forced; the forced roles are written into {@code template}.
     */
    private static boolean force(BlockDevice[] byRole, Md1Superblock[] sbByRole, boolean[] used,
                                 List<LeftBehind> leftBehind, List<MemberSet.Member> spares, Md1Superblock[] sbs,
                                 Md1Superblock ref, Md1Superblock template, String setName, List<String> problems,
                                 List<? extends BlockDevice> devices) throws Raid5AssembleException {
        int empty = 0;
        for (BlockDevice d : byRole) {
            empty += d == null ? 1 : 0;
        }
        if (empty <= 1) {
            return false;
        }
        List<LeftBehind> freshestFirst = new ArrayList<>(leftBehind);
        freshestFirst.sort((a, b) -> Long.compare(b.sb.events, a.sb.events));
        long vintage = -1;
        for (LeftBehind c : freshestFirst) {
            if ((empty <= 1 && c.sb.events != vintage) || byRole[c.role] != null) {
                continue;
            }
            String refusal = whyStale(c, sbs, ref, devices);
            if (refusal == null) {
                refusal = badBlockRefusal(c.device, c.sb, problems);
            }
            if (refusal != null) {
                if (empty <= 1) {
                    continue;   // not needed: it becomes a spare like the others
                }
                closeAll(devices, new boolean[devices.size()]);
                List<String> why = new ArrayList<>(problems);
                why.add(refusal);
                throw new Raid5AssembleException("cannot force " + setName + " to start: " + empty + " of "
                        + ref.raidDisks + " members unavailable, and the freshest one left behind, " + c.device.name()
                        + ", is really stale", why);
            }
            byRole[c.role] = c.device;
            sbByRole[c.role] = c.sb;
            used[c.index] = true;
            template.devRoles[c.sb.devNumber] = c.role;
            vintage = c.sb.events;
            empty--;
            String what = c.device.name() + ": FORCED back into member " + c.role + " (as mdadm --assemble --force "
                    + "does): its events " + c.sb.events + " counted as the array's " + ref.events + ", "
                    + (ref.events - c.sb.events) + " event" + (ref.events - c.sb.events == 1 ? "" : "s") + " forced";
            problems.add(what);
        }
        if (vintage < 0) {
            return false;
        }
        for (LeftBehind l : leftBehind) {
            if (used[l.index] || badBlockRefusal(l.device, l.sb, new ArrayList<>()) != null) {
                continue;
            }
            used[l.index] = true;
            template.devRoles[l.sb.devNumber] = Md1Superblock.ROLE_SPARE;
            spares.add(new MemberSet.Member(-1, l.device, l.device.name(), l.sb.devNumber, l.sb.deviceUuid,
                    l.sb.dataSizeSectors, Raid5Status.MemberState.ACTIVE));
            problems.add(l.device.name() + ": left the array before it failed (events " + l.sb.events + " < "
                    + ref.events + "), so it missed writes; after the forced start it is a spare, rebuilt onto");
        }
        return true;
    }

    /**
     * Null when member {@code c} left the array only as the array failed, so it holds every acknowledged write:
     * its own superblock already records the array without redundancy (losing it failed the array), or the
     * superblock update after its last one (events + 1, on a member given) took out another member with it.
     * Otherwise why it is really stale. A superblock update reaches every member that holds a role, so a member's
     * own superblock shows the array as it was when the member left.
     */
    private static String whyStale(LeftBehind c, Md1Superblock[] sbs, Md1Superblock ref,
                                   List<? extends BlockDevice> devices) {
        int raidDisks = ref.raidDisks;
        int own = rolesHeld(c.sb, raidDisks, -1);
        if (own < raidDisks) {
            return null;
        }
        for (int i = 0; i < sbs.length; i++) {
            Md1Superblock next = sbs[i];
            if (next != null && next.sameSet(ref) && next.events == c.sb.events + 1) {
                int without = rolesHeld(next, raidDisks, c.sb.devNumber);
                if (without < raidDisks - 1) {
                    return null;
                }
                return c.device.name() + " (member " + c.role + ", events " + c.sb.events + ") is really stale: the "
                        + "update that took it out (events " + next.events + ", on " + devices.get(i).name()
                        + ") left the array running on " + without + " members, which went on acknowledging writes it "
                        + "missed; forcing it would serve stale data -- give the members that left last (a renamed or "
                        + "moved file: list it), or restore the data from a backup";
            }
        }
        return c.device.name() + " (member " + c.role + ", events " + c.sb.events + ") is really stale: its superblock "
                + "records all " + raidDisks + " members in sync, and no member given records the update that took it "
                + "out (events " + (c.sb.events + 1) + "), so the array may have run without it and acknowledged writes "
                + "it missed; forcing it would serve stale data -- give the members that left last (a renamed or moved "
                + "file: list it), or restore the data from a backup";
    }

    /** How many of the {@code raidDisks} roles {@code sb}'s dev_roles give to a device other than {@code except}. */
    private static int rolesHeld(Md1Superblock sb, int raidDisks, int except) {
        boolean[] held = new boolean[raidDisks];
        int count = 0;
        for (int d = 0; d < sb.devRoles.length; d++) {
            int role = sb.devRoles[d];
            if (d != except && role >= 0 && role < raidDisks && !held[role]) {
                held[role] = true;
                count++;
            }
        }
        return count;
    }

    /**
     * The write-intent bitmap of the first active member that holds a usable one (all members carry the
     * same image); null, with a problem noted, when none does: an unclean stop then resyncs everything.
     */
    private static WriteIntentBitmap loadBitmap(MemberSet.Member[] roles, Md1Superblock sb, List<String> problems) {
        String why = "no member holds it";
        for (MemberSet.Member m : roles) {
            if (m.device == null || m.state != Raid5Status.MemberState.ACTIVE) {
                continue;
            }
            long room = sb.dataOffsetSectors * 512 - WriteIntentBitmap.memberOffset(sb.superOffsetSectors);
            if (room < WriteIntentBitmap.blockBytes(1)) {
                why = "no room before the data offset";
                break;
            }
            ByteBuffer raw = ByteBuffer.allocate((int) Math.min(room, 4L << 20));
            String[] problem = new String[1];
            try {
                m.device.read(WriteIntentBitmap.memberOffset(sb.superOffsetSectors), raw);
                WriteIntentBitmap loaded = WriteIntentBitmap.decode(raw.flip(), sb, problem);
                if (loaded != null) {
                    return loaded;
                }
                why = m.displayName + ": " + problem[0];
            } catch (IOException e) {
                why = m.displayName + ": " + e.getMessage();
            }
        }
        if (!sb.isClean()) {
            problems.add("the write-intent bitmap cannot be used (" + why + "); the resync covers every row");
        }
        return null;
    }

    /**
     * Null when {@code d} may be used as far as md's bad-block log goes: it records no bad blocks
     * (feature bit clear; a reserved but unused log is kept as it is), or the bit is set but the log is
     * empty (noted in {@code problems}; the next superblock write clears the bit, as the kernel's would).
     * Otherwise why it must not be used: the log lists bad ranges, or cannot be read.
     */
    private static String badBlockRefusal(BlockDevice d, Md1Superblock sb, List<String> problems) {
        if (!sb.hasBadBlocks()) {
            return null;
        }
        if (!sb.hasBadBlockLog()) {
            return d.name() + ": feature_map says md's bad-block log holds entries, but the superblock reserves no "
                    + "log (bblog_size " + sb.bblogSize + ", bblog_offset " + sb.bblogOffset + ")";
        }
        List<MdBadBlockLog.Entry> entries;
        try {
            entries = MdBadBlockLog.read(d, sb);
        } catch (IOException e) {
            return d.name() + ": feature_map says md's bad-block log holds entries, and the log cannot be read ("
                    + e.getMessage() + ")";
        }
        if (entries.isEmpty()) {
            problems.add(d.name() + ": feature_map says md's bad-block log holds entries, but the log is empty; the "
                    + "flag is cleared at the next superblock write (as the kernel does) and the log's space is kept");
            return null;
        }
        return d.name() + ": md's bad-block log on this member lists " + entries.size() + " bad range"
                + (entries.size() == 1 ? "" : "s") + " (member sectors start+length: "
                + entries.subList(0, Math.min(4, entries.size())) + (entries.size() > 4 ? " ..." : "")
                + "; mdadm --examine-badblocks lists them): Linux could not write those sectors, so they may hold "
                + "stale data";
    }

    /** The superblock with most events among the UUID shared by the most devices. */
    private static Md1Superblock pickReference(Md1Superblock[] sbs) {
        Md1Superblock best = null;
        int bestVotes = 0;
        for (Md1Superblock candidate : sbs) {
            if (candidate == null) {
                continue;
            }
            int votes = 0;
            Md1Superblock newest = candidate;
            for (Md1Superblock other : sbs) {
                if (other != null && other.sameSet(candidate)) {
                    votes++;
                    if (other.events > newest.events) {
                        newest = other;
                    }
                }
            }
            if (votes > bestVotes || (votes == bestVotes && newest.events > best.events)) {
                best = newest;
                bestVotes = votes;
            }
        }
        return best;
    }

    /**
     * A member one event behind the newest superblock, still in its role there, is current: it missed only the last
     * superblock update, which a crash cut off after other members had it (md records a failed member as faulty in
     * the others' superblocks, so a member that missed writes is not in its role there). The kernel assembles with
     * the same margin of one event. Across a reshape's start, checkpoint or end this also holds: the data every
     * superblock describes is on it (a reshape flushes the members before each such update), when its data offset
     * is one of the two the reshape moves between.
     */
    private static boolean reshapeStepBehind(Md1Superblock sb, Md1Superblock ref) {
        if (sb.events + 1 != ref.events || !(sb.isReshaping() || ref.isReshaping())) {
            return false;
        }
        long sbOffset = sb.dataOffsetSectors + (sb.isReshaping() ? sb.newOffset : 0);
        long refOffset = ref.dataOffsetSectors + (ref.isReshaping() ? ref.newOffset : 0);
        return sbOffset == refOffset || sb.dataOffsetSectors == ref.dataOffsetSectors;
    }

    private static void checkSupported(Md1Superblock ref, String member) throws Raid5AssembleException {
        String problem = null;
        if (ref.level != 5) {
            problem = member + ": the array is RAID level " + ref.level + "; only RAID-5 is supported";
        } else if (ref.raidDisks < 3 || ref.raidDisks > ref.devRoles.length) {
            problem = member + ": raid_disks " + ref.raidDisks + " is not a valid RAID-5 member count";
        } else if (ref.chunkSectors < 8 || Integer.bitCount(ref.chunkSectors) != 1) {
            problem = member + ": chunk of " + ref.chunkSectors + " sectors is not a power of two >= 4 KiB";
        } else if (ref.layout < 0 || ref.layout > 3) {
            problem = member + ": layout " + ref.layout + " is not one of md's four RAID-5 layouts (0-3)";
        } else if (ref.sizeSectors <= 0 || ref.sizeSectors % ref.chunkSectors != 0) {
            problem = member + ": member size " + ref.sizeSectors + " sectors is not a positive multiple of the chunk";
        }
        if (problem != null) {
            throw new Raid5AssembleException("unsupported array", List.of(problem));
        }
    }

    private static int indexOf(Md1Superblock[] sbs, Md1Superblock sb) {
        return Arrays.asList(sbs).indexOf(sb);
    }

    private static String names(List<? extends BlockDevice> devices) {
        List<String> names = new ArrayList<>();
        for (BlockDevice d : devices) {
            names.add(d.name());
        }
        return names.toString();
    }

    private static void closeAll(List<? extends BlockDevice> devices, boolean[] keep) {
        for (int i = 0; i < devices.size(); i++) {
            if (!keep[i]) {
                try {
                    devices.get(i).close();
                } catch (IOException e) {
                    LOG.debug("closing unused member {}: {}", devices.get(i).name(), e.getMessage());
                }
            }
        }
    }
}
