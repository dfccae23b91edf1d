package io.stripestack.raid5;

import java.util.Locale;

/**
 * What the array's background sync (md's {@code sync_action}) is doing. Positions are in 512-byte sectors
 * of one member's data area, as md's {@code sync_completed} counts them.
 *
 * @param action       "idle", "frozen", "resync", "recover", "check" or "repair"
 * @param doneSectors  member sectors already processed by the running action (0 when idle)
 * @param totalSectors member sectors the action covers (the used size of each member)
 * @param speedKiBps   recent speed in KiB of member data per second (md's {@code sync_speed})
 * @param etaSeconds   estimated seconds to completion at that speed, -1 when unknown or idle
 */
public record SyncProgress(String action, long doneSectors, long totalSectors, long speedKiBps, long etaSeconds) {

    public boolean running() {
        return !action.equals("idle") && !action.equals("frozen");
    }

    /**
     * The /proc/mdstat progress line, e.g.
     * {@code [=>...................]  recovery =  8.5% (3456/40000) finish=1.2min speed=12345K/sec}
     * (counts in KiB of one member); empty when nothing runs.
     */
    public String mdstatLine() {
        if (!running() || totalSectors <= 0) {
            return "";
        }
        long permille = Math.min(1000, doneSectors * 1000 / totalSectors);
        int filled = (int) (permille / 50);
        StringBuilder s = new StringBuilder("[");
        s.append("=".repeat(filled)).append('>').append(".".repeat(20 - filled)).append("]  ");
        String label = action.equals("recover") ? "recovery" : action;
        s.append(label).append(" =").append(String.format(Locale.ROOT, "%3d.%d%%", permille / 10, permille % 10))
                .append(" (").append(doneSectors / 2).append('/').append(totalSectors / 2).append(')');
        long minutesTenths = etaSeconds < 0 ? -1 : (etaSeconds * 10 + 59) / 60;
        s.append(" finish=").append(minutesTenths < 0 ? "?" : minutesTenths / 10 + "." + minutesTenths % 10).append("min");
        s.append(" speed=").append(speedKiBps).append("K/sec");
        return s.toString();
    }
}
