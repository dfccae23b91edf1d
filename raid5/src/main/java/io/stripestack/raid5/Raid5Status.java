package io.stripestack.raid5;

import java.util.List;

/**
 * A snapshot of an array's health, for an mdstat-like view.
 *
 * @param name      array name
 * @param health    clean (all members active), degraded (one member faulty or missing) or failed
 * @param members   one entry per role, in role order
 * @param events    the superblock event counter
 * @param sizeBytes usable size of the array
 * @param spares    hot spares (device names), waiting to replace a failed member
 * @param sync      the background sync (resync, recovery, check, repair) and its progress
 * @param mismatchCount md's {@code mismatch_cnt} of the last check or repair (512-byte sectors)
 * @param consistencyPolicy how parity survives a crash (md's consistency_policy)
 * @param startRecovery what the partial parity log's replay did at open, or empty
 */
public record Raid5Status(String name, Health health, List<Member> members, long events, long sizeBytes,
                          int chunkBytes, Raid5Layout layout, List<String> spares, SyncProgress sync,
                          long mismatchCount, ConsistencyPolicy consistencyPolicy, String startRecovery) {

    public enum Health { CLEAN, DEGRADED, FAILED }

    /**
     * ACTIVE: in sync; REBUILDING: a replacement being rebuilt (valid below the recovery checkpoint only);
     * FAULTY: failed, still attached; MISSING: no device (never found, or removed).
     */
    public enum MemberState { ACTIVE, FAULTY, MISSING, REBUILDING }

    /** @param device the member's name (its file), or null when missing */
    public record Member(int role, String device, MemberState state) { }

    /** Like a /proc/mdstat entry: {@code md0 : active raid5 a[0] b[1] c[2](F) ... [3/2] [UU_]}. */
    public String mdstat() {
        StringBuilder s = new StringBuilder(name).append(" : ")
                .append(health == Health.FAILED ? "inactive" : "active").append(" raid5");
        StringBuilder map = new StringBuilder();
        int up = 0;
        for (Member m : members) {
            if (m.device() != null) {
                s.append(' ').append(m.device()).append('[').append(m.role()).append(']');
                if (m.state() == MemberState.FAULTY) {
                    s.append("(F)");
                }
            }
        }
        for (String spare : spares) {
            s.append(' ').append(spare).append("(S)");
        }
        for (Member m : members) {
            boolean active = m.state() == MemberState.ACTIVE;
            up += active ? 1 : 0;
            map.append(active ? 'U' : '_');
        }
        s.append("\n      ").append(sizeBytes / 1024).append(" blocks super 1.2 level 5, ")
                .append(chunkBytes / 1024).append("k chunk, algorithm ").append(layout.mdNumber())
                .append(" [").append(members.size()).append('/').append(up).append("] [").append(map).append(']');
        String progress = sync.mdstatLine();
        if (!progress.isEmpty()) {
            s.append("\n      ").append(progress);
        }
        return s.toString();
    }
}
