package io.stripestack.targetserver.server;

import io.stripestack.blockdev.BlockDevice;
import io.stripestack.blockdev.IoStats;
import io.stripestack.raid5.Raid5Array;
import io.stripestack.raid5.SyncProgress;
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
 * pre-reads, readahead hits...), and the iSCSI write buffer budget's use. Also the Prometheus text
 * exposition of the same counters.
 *
 * <p>Concurrency: {@link #render} and {@link #prometheus} may run on several admin threads at once; the
 * previous-sample table is guarded by this object's monitor.
 */
final class StatusReport {
    private final Map<String, Raid5Array> arrays;
    private final List<LunStack> luns;
    /** The iSCSI server's write buffer budget; null when the report has no iSCSI server to show. */
    private final Supplier<BufferStats> buffers;
    /** The counters each layer had at the previous report, by target/lunN + layer. */
    private final Map<String, long[]> previous = new HashMap<>();
    private long previousNanos = System.nanoTime();

    /** @param buffers the iSCSI server's buffer budgets, or null for a report without them */
    StatusReport(Map<String, Raid5Array> arrays, List<LunStack> luns, Supplier<BufferStats> buffers) {
        this.arrays = arrays;
        this.luns = luns;
        this.buffers = buffers;
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

    /** Every counter of every layer in Prometheus' text format. */
    String prometheus() {
        StringBuilder out = new StringBuilder();
        out.append("# TYPE stripestack_device_counter counter\n");
        for (LunStack lun : luns) {
            for (BlockDevice layer : lun.layers()) {
                exposition(out, lun.controlPath(), layerKind(layer, lun).split(" ")[0], layer.stats());
            }
        }
        for (Map.Entry<String, Raid5Array> e : arrays.entrySet()) {
            out.append("stripestack_array_degraded{array=\"").append(e.getKey()).append("\"} ")
                    .append(e.getValue().status().health().ordinal()).append('\n');
        }
        out.append("# TYPE stripestack_array_shape gauge\n");
        for (Map.Entry<String, Raid5Array> e : arrays.entrySet()) {
            Raid5Array array = e.getValue();
            String label = "{array=\"" + e.getKey() + "\",";
            out.append("stripestack_array_shape").append(label).append("what=\"raid_disks\"} ")
                    .append(array.raidDevices()).append('\n');
            out.append("stripestack_array_shape").append(label).append("what=\"chunk_bytes\"} ")
                    .append(array.chunkBytes()).append('\n');
            out.append("stripestack_array_shape").append(label).append("what=\"size_bytes\"} ")
                    .append(array.size()).append('\n');
        }
        // md's sync_completed and sync_speed: the running action (resync, recover, check, repair, reshape) and how far
        out.append("# TYPE stripestack_array_sync gauge\n");
        for (Map.Entry<String, Raid5Array> e : arrays.entrySet()) {
            SyncProgress p = e.getValue().syncProgress();
            if (!p.running()) {
                continue;
            }
            String label = "{array=\"" + e.getKey() + "\",action=\"" + p.action() + "\",";
            out.append("stripestack_array_sync").append(label).append("what=\"completed_sectors\"} ")
                    .append(p.doneSectors()).append('\n');
            out.append("stripestack_array_sync").append(label).append("what=\"total_sectors\"} ")
                    .append(p.totalSectors()).append('\n');
            out.append("stripestack_array_sync").append(label).append("what=\"speed_kib_per_second\"} ")
                    .append(p.speedKiBps()).append('\n');
        }
        if (buffers != null) {
            WriteBufferStats w = buffers.get().writes();
            out.append("# TYPE stripestack_write_buffer_bytes gauge\n");
            out.append("stripestack_write_buffer_bytes{kind=\"budget\"} ").append(w.budgetBytes()).append('\n');
            out.append("stripestack_write_buffer_bytes{kind=\"in_use\"} ").append(w.bytesInUse()).append('\n');
            out.append("stripestack_write_buffer_bytes{kind=\"peak\"} ").append(w.peakBytesInUse()).append('\n');
            out.append("# TYPE stripestack_write_buffer_commands_waiting gauge\n");
            out.append("stripestack_write_buffer_commands_waiting ").append(w.commandsWaiting()).append('\n');
            out.append("# TYPE stripestack_write_buffer_commands_total counter\n");
            out.append("stripestack_write_buffer_commands_total{outcome=\"waited\"} ").append(w.commandsWaited()).append('\n');
            out.append("stripestack_write_buffer_commands_total{outcome=\"refused\"} ").append(w.commandsRefused()).append('\n');
            DataInStats r = buffers.get().reads();
            out.append("# TYPE stripestack_data_in_bytes gauge\n");
            out.append("stripestack_data_in_bytes{kind=\"budget\"} ").append(r.budgetBytes()).append('\n');
            out.append("stripestack_data_in_bytes{kind=\"per_session\"} ").append(r.perSessionBytes()).append('\n');
            out.append("stripestack_data_in_bytes{kind=\"held\"} ").append(r.bytesHeld()).append('\n');
            out.append("stripestack_data_in_bytes{kind=\"peak\"} ").append(r.peakBytesHeld()).append('\n');
            out.append("# TYPE stripestack_data_in_reads_waited_total counter\n");
            out.append("stripestack_data_in_reads_waited_total ").append(r.readsWaited()).append('\n');
        }
        return out.toString();
    }

    private static void exposition(StringBuilder out, String owner, String layer, IoStats stats) {
        for (Map.Entry<String, Long> c : stats.snapshot().entrySet()) {
            out.append("stripestack_device_counter{owner=\"").append(owner).append("\",layer=\"").append(layer)
                    .append("\",counter=\"").append(c.getKey()).append("\"} ").append(c.getValue()).append('\n');
        }
    }
}
