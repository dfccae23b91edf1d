package io.stripestack.targetserver.server;

import io.stripestack.blockdev.BlockDevice;
import io.stripestack.blockdev.IoStats;
import io.stripestack.raid5.ArrayExport;
import io.stripestack.raid5.Raid5Array;
import io.stripestack.targetserver.iscsi.BufferStats;
import io.stripestack.targetserver.iscsi.DataInStats;
import io.stripestack.targetserver.iscsi.WriteBufferStats;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Supplier;

/**
 * The text of {@code stripestack status}: the arrays like /proc/mdstat, then one iostat-like line per
 * layer of every LUN, with rates since the previous report, and the layer
 * counters that explain RAID-5 and crypto behaviour (full-stripe writes, read-modify-writes, member
 * pre-reads, readahead hits...), the iSCSI sessions of every target and the iSCSI buffer budgets' use. The
 * Prometheus text of the same quantities is {@link MetricsReport}'s.
 *
 * <p>Concurrency: {@link #render} may run on several admin threads at once; the previous-sample table is
 * guarded by this object's monitor.
 */
final class StatusReport {
    private final Map<String, Raid5Array> arrays;
    private final List<LunStack> luns;
    /** The iSCSI server's write buffer budget; null when the report has no iSCSI server to show. */
    private final Supplier<BufferStats> buffers;
    /** The I_T nexuses logged in to each target, by IQN; null when the report has no iSCSI server to show. */
    private final Supplier<Map<String, List<String>>> sessions;
    /** The counters each layer had at the previous report, by target/lunN + layer. */
    private final Map<String, long[]> previous = new HashMap<>();
    private long previousNanos = System.nanoTime();

    /**
     * @param buffers  the iSCSI server's buffer budgets, or null for a report without them
     * @param sessions the sessions of each target (by IQN), or null for a report without them
     */
    StatusReport(Map<String, Raid5Array> arrays, List<LunStack> luns, Supplier<BufferStats> buffers,
            Supplier<Map<String, List<String>>> sessions) {
        this.arrays = arrays;
        this.luns = luns;
        this.buffers = buffers;
        this.sessions = sessions;
    }

    synchronized String render() {
        long now = System.nanoTime();
        double seconds = Math.max(1e-3, (now - previousNanos) / 1e9);
        previousNanos = now;
        StringBuilder out = new StringBuilder("Personalities : [raid5]\n");
        for (Raid5Array array : arrays.values()) {
            out.append(array.status().mdstat()).append('\n');
            out.append(String.format(Locale.ROOT,
                    "      consistency_policy %s, stripe_cache_size %d, check_parity_on_reads %d, sync_action %s, mismatch_cnt %d, sync_speed_min/max %d/%d K/sec%n",
                    array.consistencyPolicy().mdName(), array.stripeCacheSize(), array.checkParityOnReads() ? 1 : 0,
                    array.syncAction(), array.mismatchCount(), array.syncSpeedMin(), array.syncSpeedMax()));
            if (!array.startRecovery().isEmpty()) {
                out.append("      at start: ").append(array.startRecovery()).append('\n');
            }
        }
        out.append('\n');
        out.append(String.format(Locale.ROOT, "%-44s %9s %9s %9s %9s %7s%n", "Device", "r/s", "rMB/s", "w/s",
                "wMB/s", "inflt"));
        for (LunStack lun : luns) {
            out.append(lun.controlPath()).append('\n');
            for (BlockDevice layer : lun.layers()) {
                String kind = layerKind(layer, lun);
                line(out, lun.controlPath() + " " + kind, "  " + kind, layer.stats(), seconds);
            }
        }
        out.append('\n');
        if (sessions != null) {
            for (Map.Entry<String, List<String>> target : sessions.get().entrySet()) {
                int n = target.getValue().size();
                out.append(target.getKey()).append(": ").append(n).append(n == 1 ? " session" : " sessions")
                        .append(n == 0 ? "\n" : ":\n");
                for (String nexus : target.getValue()) {
                    out.append("  ").append(nexus).append('\n');
                }
            }
        }
        if (buffers != null) {
            BufferStats b = buffers.get();
            WriteBufferStats w = b.writes();
            out.append(String.format(Locale.ROOT,
                    "iSCSI write buffers: %.1f of %.1f MiB in use (peak %.1f), %d writes waiting; since start %d waited, %d refused TASK SET FULL%n",
                    w.bytesInUse() / 1048576.0, w.budgetBytes() / 1048576.0, w.peakBytesInUse() / 1048576.0,
                    w.commandsWaiting(), w.commandsWaited(), w.commandsRefused()));
            DataInStats r = b.reads();
            out.append(String.format(Locale.ROOT,
                    "iSCSI Data-In: %.1f of %.1f MiB held (peak %.1f, %.1f MiB per session); since start %d reads waited for room%n",
                    r.bytesHeld() / 1048576.0, r.budgetBytes() / 1048576.0, r.peakBytesHeld() / 1048576.0,
                    r.perSessionBytes() / 1048576.0, r.readsWaited()));
        }
        for (LunStack lun : luns) {
            for (BlockDevice layer : lun.layers()) {
                Map<String, Long> snap = layer.stats().snapshot();
                StringBuilder counters = new StringBuilder();
                boolean past = false;
                for (Map.Entry<String, Long> c : snap.entrySet()) {
                    if (c.getKey().equals("in_flight")) {
                        past = true;
                        continue;
                    }
                    if (past) {
                        counters.append(' ').append(c.getKey()).append('=').append(c.getValue());
                    }
                }
                if (counters.length() > 0) {
                    out.append(lun.controlPath()).append(' ').append(layerKind(layer, lun)).append(':')
                            .append(counters).append('\n');
                }
            }
        }
        return out.toString();
    }

    private static String layerKind(BlockDevice layer, LunStack lun) {
        if (layer == lun.readahead()) {
            return "readahead";
        }
        if (layer == lun.crypto()) {
            return "crypt";
        }
        return layer instanceof ArrayExport ? "raid5 " + layer.name() : "base " + layer.name();
    }

    /**
     * One iostat-like line; {@code key} names the layer in {@link #previous} and must be unique across LUNs
     * (target, LUN and layer), since the labels ("readahead", "crypt") repeat in every LUN.
     */
    private void line(StringBuilder out, String key, String label, IoStats s, double seconds) {
        long[] now = {s.readOps(), s.readBytes(), s.writeOps(), s.writeBytes()};
        long[] before = previous.put(key, now);
        if (before == null) {
            before = new long[4];
        }
        out.append(String.format(Locale.ROOT, "%-44s %9.1f %9.2f %9.1f %9.2f %7d%n", truncate(label, 44),
                (now[0] - before[0]) / seconds, (now[1] - before[1]) / seconds / 1e6,
                (now[2] - before[2]) / seconds, (now[3] - before[3]) / seconds / 1e6, s.inFlight()));
    }

    private static String truncate(String s, int width) {
        return s.length() <= width ? s : "..." + s.substring(s.length() - width + 3);
    }
}
