package io.stripestack.targetserver.server;

import static io.stripestack.targetserver.server.PrometheusText.COUNTER;
import static io.stripestack.targetserver.server.PrometheusText.GAUGE;

import io.stripestack.blockdev.BlockDevice;
import io.stripestack.blockdev.IoStats;
import io.stripestack.raid5.ArrayExport;
import io.stripestack.raid5.ConsistencyPolicy;
import io.stripestack.raid5.Raid5Array;
import io.stripestack.raid5.Raid5Status;
import io.stripestack.raid5.SyncProgress;
import io.stripestack.targetserver.iscsi.BufferStats;
import io.stripestack.targetserver.iscsi.DataInStats;
import io.stripestack.targetserver.iscsi.WriteBufferStats;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Function;
import java.util.function.Supplier;
import java.util.function.ToDoubleFunction;
import java.util.function.ToLongFunction;

/**
 * The Prometheus text of /metrics (and {@code stripestack metrics}): one family per quantity, in base units
 * ({@code _bytes}, {@code _seconds}, counters ending in {@code _total}), a state as one gauge per state
 * valued 0 or 1 (node_exporter's md collector: {@code node_md_state{state=...}}, {@code node_md_disks{state=...}}),
 * so no series changes its labels when a state changes. The families are listed in docs/operations.md.
 *
 * <p>Concurrency: stateless; any admin or metrics thread may render at any time. Each value is read on its
 * own (a scrape is not one instant across counters).
 */
final class MetricsReport {
    /** md's sync_action words, the reshape included, each one series of {@code stripestack_array_sync_action}. */
    private static final List<String> SYNC_ACTIONS = List.of("idle", "frozen", "resync", "recover", "check", "repair",
            "reshape");
    /** node_exporter's md collector's names of member states: active, failed, spare, down (missing), recovering. */
    private static final List<String> DISK_STATES = List.of("active", "failed", "spare", "down", "recovering");

    /** A layer counter ({@link IoStats#counter}) exposed as a family of its own. */
    private record LayerCounter(String counter, String family, String help) { }

    /** The RAID-5 engine's layer counters, per array. */
    private static final List<LayerCounter> ARRAY_COUNTERS = List.of(
            new LayerCounter("full_stripe_writes", "stripestack_array_full_stripe_writes_total",
                    "Row updates that wrote every data chunk of the row, with parity computed without member reads."),
            new LayerCounter("rmw_writes", "stripestack_array_rmw_writes_total",
                    "Partial row updates by read-modify-write (old data and parity read first)."),
            new LayerCounter("reconstruct_writes", "stripestack_array_reconstruct_writes_total",
                    "Partial row updates by reconstruct-write (the untouched data chunks read first)."),
            new LayerCounter("member_prereads", "stripestack_array_member_prereads_total",
                    "Member reads made for writes and by sync passes."),
            new LayerCounter("stripe_cache_hits", "stripestack_array_stripe_cache_hits_total",
                    "Member chunks a partial write found in the stripe cache instead of reading them."),
            new LayerCounter("held_writes", "stripestack_array_held_writes_total",
                    "Writes that waited for an overlapping row update to finish."),
            new LayerCounter("degraded_reads", "stripestack_array_degraded_reads_total",
                    "Pieces rebuilt from parity, for a missing member or a failed member read."),
            new LayerCounter("read_errors_corrected", "stripestack_array_read_errors_corrected_total",
                    "Member read errors corrected by rewriting the piece rebuilt from parity."),
            new LayerCounter("parity_mismatches", "stripestack_array_parity_mismatches_total",
                    "Rows whose parity disagreed with their data on a read (check_parity_on_reads)."),
            new LayerCounter("ppl_writes", "stripestack_array_ppl_writes_total",
                    "Partial parity log units written to the members."),
            new LayerCounter("ppl_bytes", "stripestack_array_ppl_written_bytes_total",
                    "Bytes of partial parity log units written to the members."),
            new LayerCounter("ppl_rows", "stripestack_array_ppl_rows_total",
                    "Row updates the partial parity log units carried."),
            new LayerCounter("ppl_area_restarts", "stripestack_array_ppl_area_restarts_total",
                    "Times a member's partial parity log started over at the start of its area."),
            new LayerCounter("ppl_ordering_flushes", "stripestack_array_ppl_ordering_flushes_total",
                    "Member flushes a partial parity log unit waited for before it was written."),
            new LayerCounter("bitmap_writes", "stripestack_array_bitmap_writes_total",
                    "Write-intent bitmap images written to the members (a region turning dirty, idle ones cleared)."));

    /** The readahead stage's counters, per LUN. */
    private static final List<LayerCounter> READAHEAD_COUNTERS = List.of(
            new LayerCounter("readahead_hits", "stripestack_readahead_hits_total",
                    "Reads served from prefetched data."),
            new LayerCounter("readahead_hit_bytes", "stripestack_readahead_hit_bytes_total",
                    "Bytes of reads served from prefetched data."),
            new LayerCounter("readahead_misses", "stripestack_readahead_misses_total",
                    "Reads that went to the device below the readahead stage."),
            new LayerCounter("prefetch_bytes", "stripestack_readahead_prefetched_bytes_total",
                    "Bytes read below by prefetches that succeeded."),
            new LayerCounter("wasted_prefetch_bytes", "stripestack_readahead_wasted_bytes_total",
                    "Prefetched bytes dropped unread."),
            new LayerCounter("prefetch_errors", "stripestack_readahead_prefetch_errors_total",
                    "Prefetch reads that failed."),
            new LayerCounter("prefetch_skipped_no_budget", "stripestack_readahead_budget_exhausted_total",
                    "Times a prefetch window stopped short because the readahead budget was used up."));

    /** The crypto layer's counters, per LUN. */
    private static final List<LayerCounter> CRYPT_COUNTERS = List.of(
            new LayerCounter("sectors_encrypted", "stripestack_crypt_encrypted_sectors_total",
                    "dm-crypt sectors (of the LUN's encryption sector size) encrypted."),
            new LayerCounter("sectors_decrypted", "stripestack_crypt_decrypted_sectors_total",
                    "dm-crypt sectors (of the LUN's encryption sector size) decrypted."));

    private final Map<String, Raid5Array> arrays;
    private final List<LunStack> luns;
    /** The iSCSI server's buffer budgets; null when there is no iSCSI server to show. */
    private final Supplier<BufferStats> buffers;
    /** The I_T nexuses logged in to each target, by target IQN; null when there is no iSCSI server. */
    private final Supplier<Map<String, List<String>>> sessions;

    MetricsReport(Map<String, Raid5Array> arrays, List<LunStack> luns, Supplier<BufferStats> buffers,
            Supplier<Map<String, List<String>>> sessions) {
        this.arrays = arrays;
        this.luns = luns;
        this.buffers = buffers;
        this.sessions = sessions;
    }

    /** Whether this report exposes the layer counter of that name as a family (the others are not exported). */
    static boolean exposes(String layerCounter) {
        for (List<LayerCounter> list : List.of(ARRAY_COUNTERS, READAHEAD_COUNTERS, CRYPT_COUNTERS)) {
            for (LayerCounter c : list) {
                if (c.counter().equals(layerCounter)) {
                    return true;
                }
            }
        }
        return false;
    }

    String render() {
        PrometheusText text = new PrometheusText();
        arrays(text, new LinkedHashMap<>(arrays));
        luns(text, List.copyOf(luns));
        iscsi(text);
        return text.toString();
    }

    private static void arrays(PrometheusText text, Map<String, Raid5Array> arrays) {
        Map<String, Raid5Status> status = new LinkedHashMap<>();
        Map<String, SyncProgress> sync = new LinkedHashMap<>();
        for (Map.Entry<String, Raid5Array> e : arrays.entrySet()) {
            status.put(e.getKey(), e.getValue().status());
            sync.put(e.getKey(), e.getValue().syncProgress());
        }
        text.family("stripestack_array_state", GAUGE,
                "1 for the array's state: clean (every member in sync), degraded (runs without one member), failed.");
        for (Map.Entry<String, Raid5Status> e : status.entrySet()) {
            for (Raid5Status.Health h : Raid5Status.Health.values()) {
                text.sample("stripestack_array_state", e.getValue().health() == h ? 1 : 0, "array", e.getKey(),
                        "state", h.name().toLowerCase(Locale.ROOT));
            }
        }
        text.family("stripestack_array_degraded", GAUGE,
                "Members the array runs without (md's degraded): failed, missing or still rebuilding.");
        for (Map.Entry<String, Raid5Status> e : status.entrySet()) {
            long notInSync = e.getValue().members().stream()
                    .filter(m -> m.state() != Raid5Status.MemberState.ACTIVE).count();
            text.sample("stripestack_array_degraded", notInSync, "array", e.getKey());
        }
        text.family("stripestack_array_disks", GAUGE,
                "Members by state: active, failed (faulty, still attached), spare, down (missing),"
                        + " recovering (being rebuilt).");
        for (Map.Entry<String, Raid5Status> e : status.entrySet()) {
            long[] byState = disksByState(e.getValue());
            for (int s = 0; s < DISK_STATES.size(); s++) {
                text.sample("stripestack_array_disks", byState[s], "array", e.getKey(), "state", DISK_STATES.get(s));
            }
        }
        arrayGauge(text, arrays, "stripestack_array_disks_required", "Members the array's shape has (md's raid_disks).",
                Raid5Array::raidDevices);
        arrayGauge(text, arrays, "stripestack_array_size_bytes", "Usable size of the array.", Raid5Array::size);
        arrayGauge(text, arrays, "stripestack_array_chunk_bytes", "The array's chunk size.", Raid5Array::chunkBytes);
        arrayGauge(text, arrays, "stripestack_array_stripe_cache_rows",
                "Rows the stripe cache holds (md's stripe_cache_size).", Raid5Array::stripeCacheSize);
        text.family("stripestack_array_consistency_policy", GAUGE,
                "1 for how the array keeps parity consistent across a crash (md's consistency_policy).");
        for (Map.Entry<String, Raid5Array> e : arrays.entrySet()) {
            ConsistencyPolicy now = e.getValue().consistencyPolicy();
            for (ConsistencyPolicy p : ConsistencyPolicy.values()) {
                text.sample("stripestack_array_consistency_policy", p == now ? 1 : 0, "array", e.getKey(),
                        "policy", p.mdName());
            }
        }
        text.family("stripestack_array_sync_action", GAUGE,
                "1 for what the array's sync thread does (md's sync_action; reshape while the shape changes).");
        for (Map.Entry<String, SyncProgress> e : sync.entrySet()) {
            for (String action : SYNC_ACTIONS) {
                text.sample("stripestack_array_sync_action", e.getValue().action().equals(action) ? 1 : 0,
                        "array", e.getKey(), "action", action);
            }
        }
        arrayGauge(text, sync, "stripestack_array_sync_completed_bytes",
                "Bytes of each member the running sync action has processed (md's sync_completed); 0 when idle.",
                p -> p.running() ? p.doneSectors() * 512 : 0);
        arrayGauge(text, sync, "stripestack_array_sync_size_bytes",
                "Bytes of each member the running sync action covers; 0 when idle.",
                p -> p.running() ? p.totalSectors() * 512 : 0);
        arrayGauge(text, sync, "stripestack_array_sync_speed_bytes_per_second",
                "Recent speed of the running sync action in bytes of member data per second (md's sync_speed).",
                p -> p.running() ? p.speedKiBps() * 1024 : 0);
        arrayGauge(text, arrays, "stripestack_array_mismatch_bytes",
                "Bytes the last check or repair found inconsistent (md's mismatch_cnt times 512).",
                a -> a.mismatchCount() * 512);
        for (LayerCounter c : ARRAY_COUNTERS) {
            text.family(c.family(), COUNTER, c.help());
            for (Map.Entry<String, Raid5Array> e : arrays.entrySet()) {
                text.sample(c.family(), e.getValue().stats().layerCounter(c.counter()), "array", e.getKey());
            }
        }
    }

    private static long[] disksByState(Raid5Status s) {
        long[] n = new long[DISK_STATES.size()];
        for (Raid5Status.Member m : s.members()) {
            n[switch (m.state()) {
                case ACTIVE -> 0;
                case FAULTY -> 1;
                case MISSING -> 3;
                case REBUILDING -> 4;
            }]++;
        }
        n[2] = s.spares().size();
        return n;
    }

    /** A gauge with one sample per array, read from what {@code arrays} holds for it (the array, its sync...). */
    private static <T> void arrayGauge(PrometheusText text, Map<String, T> arrays, String family, String help,
            ToLongFunction<T> value) {
        text.family(family, GAUGE, help);
        for (Map.Entry<String, T> e : arrays.entrySet()) {
            text.sample(family, value.applyAsLong(e.getValue()), "array", e.getKey());
        }
    }

    private static void luns(PrometheusText text, List<LunStack> luns) {
        lunCounter(text, luns, "stripestack_lun_reads_completed_total", "Reads completed by each layer of the LUN.",
                IoStats::readOps);
        lunCounter(text, luns, "stripestack_lun_read_bytes_total", "Bytes read by each layer of the LUN.",
                IoStats::readBytes);
        lunSeconds(text, luns, "stripestack_lun_read_time_seconds_total",
                "Seconds the LUN's layer spent on reads, summed over reads (divide by reads for the mean).",
                s -> s.readNanos() / 1e9);
        lunCounter(text, luns, "stripestack_lun_writes_completed_total", "Writes completed by each layer of the LUN.",
                IoStats::writeOps);
        lunCounter(text, luns, "stripestack_lun_written_bytes_total", "Bytes written by each layer of the LUN.",
                IoStats::writeBytes);
        lunSeconds(text, luns, "stripestack_lun_write_time_seconds_total",
                "Seconds the LUN's layer spent on writes, summed over writes (divide by writes for the mean).",
                s -> s.writeNanos() / 1e9);
        lunCounter(text, luns, "stripestack_lun_flush_requests_total",
                "Flushes (SYNCHRONIZE CACHE) through each layer.", IoStats::flushOps);
        lunCounter(text, luns, "stripestack_lun_discards_completed_total",
                "Discards (UNMAP, WRITE SAME) through each layer.", IoStats::discardOps);
        lunCounter(text, luns, "stripestack_lun_discarded_bytes_total", "Bytes discarded through each layer.",
                IoStats::discardBytes);
        lunCounter(text, luns, "stripestack_lun_io_errors_total", "Reads and writes of each layer that failed.",
                IoStats::errors);
        text.family("stripestack_lun_io_now", GAUGE, "Reads and writes in flight in each layer of the LUN.");
        for (LunStack lun : luns) {
            for (BlockDevice layer : lun.layers()) {
                text.sample("stripestack_lun_io_now", layer.stats().inFlight(), lunLabels(lun, layer));
            }
        }
        lunLayerCounters(text, luns, READAHEAD_COUNTERS, LunStack::readahead);
        lunLayerCounters(text, luns, CRYPT_COUNTERS, LunStack::crypto);
    }

    /** A layer's own counters, for the LUNs that have that layer. */
    private static void lunLayerCounters(PrometheusText text, List<LunStack> luns, List<LayerCounter> counters,
            Function<LunStack, BlockDevice> layerOf) {
        for (LayerCounter c : counters) {
            text.family(c.family(), COUNTER, c.help());
            for (LunStack lun : luns) {
                BlockDevice layer = layerOf.apply(lun);
                if (layer != null) {
                    text.sample(c.family(), layer.stats().layerCounter(c.counter()),
                            "target", lun.target(), "lun", Integer.toString(lun.config().lun()));
                }
            }
        }
    }

    private static void lunCounter(PrometheusText text, List<LunStack> luns, String family, String help,
            ToLongFunction<IoStats> value) {
        text.family(family, COUNTER, help);
        for (LunStack lun : luns) {
            for (BlockDevice layer : lun.layers()) {
                text.sample(family, value.applyAsLong(layer.stats()), lunLabels(lun, layer));
            }
        }
    }

    private static void lunSeconds(PrometheusText text, List<LunStack> luns, String family, String help,
            ToDoubleFunction<IoStats> value) {
        text.family(family, COUNTER, help);
        for (LunStack lun : luns) {
            for (BlockDevice layer : lun.layers()) {
                text.sample(family, value.applyAsDouble(layer.stats()), lunLabels(lun, layer));
            }
        }
    }

    /**
     * A LUN's layer: {@code readahead} (what the initiator sees when the LUN has one), {@code crypt},
     * {@code raid5} (the array below, the array's own counts) or {@code base} (the LUN's file or RAM).
     */
    private static String[] lunLabels(LunStack lun, BlockDevice layer) {
        String kind = layer == lun.readahead() ? "readahead" : layer == lun.crypto() ? "crypt"
                : layer instanceof ArrayExport ? "raid5" : "base";
        return new String[] {"target", lun.target(), "lun", Integer.toString(lun.config().lun()), "layer", kind};
    }

    private void iscsi(PrometheusText text) {
        if (sessions != null) {
            text.family("stripestack_iscsi_sessions", GAUGE, "iSCSI sessions logged in to each target.");
            for (Map.Entry<String, List<String>> e : sessions.get().entrySet()) {
                text.sample("stripestack_iscsi_sessions", e.getValue().size(), "target", e.getKey());
            }
        }
        if (buffers == null) {
            return;
        }
        BufferStats b = buffers.get();
        WriteBufferStats w = b.writes();
        text.family("stripestack_write_buffer_budget_bytes", GAUGE,
                "Memory all sessions' write data may hold before writes wait (server.write_buffer_budget).")
                .sample("stripestack_write_buffer_budget_bytes", w.budgetBytes());
        text.family("stripestack_write_buffer_in_use_bytes", GAUGE, "Write data held now.")
                .sample("stripestack_write_buffer_in_use_bytes", w.bytesInUse());
        text.family("stripestack_write_buffer_peak_bytes", GAUGE, "The most write data held at once since start.")
                .sample("stripestack_write_buffer_peak_bytes", w.peakBytesInUse());
        text.family("stripestack_write_buffer_commands_waiting", GAUGE, "Writes waiting for write buffer room now.")
                .sample("stripestack_write_buffer_commands_waiting", w.commandsWaiting());
        text.family("stripestack_write_buffer_waited_commands_total", COUNTER,
                "Writes that waited for write buffer room.")
                .sample("stripestack_write_buffer_waited_commands_total", w.commandsWaited());
        text.family("stripestack_write_buffer_refused_commands_total", COUNTER,
                "Writes refused with TASK SET FULL for want of write buffer room.")
                .sample("stripestack_write_buffer_refused_commands_total", w.commandsRefused());
        DataInStats r = b.reads();
        text.family("stripestack_data_in_budget_bytes", GAUGE, "Memory all sessions' read data in flight may hold.")
                .sample("stripestack_data_in_budget_bytes", r.budgetBytes());
        text.family("stripestack_data_in_per_session_bytes", GAUGE, "Read data in flight one session may hold.")
                .sample("stripestack_data_in_per_session_bytes", r.perSessionBytes());
        text.family("stripestack_data_in_held_bytes", GAUGE, "Read data held in flight now.")
                .sample("stripestack_data_in_held_bytes", r.bytesHeld());
        text.family("stripestack_data_in_peak_bytes", GAUGE, "The most read data held in flight at once since start.")
                .sample("stripestack_data_in_peak_bytes", r.peakBytesHeld());
        text.family("stripestack_data_in_reads_waited_total", COUNTER, "Reads that waited for Data-In room.")
                .sample("stripestack_data_in_reads_waited_total", r.readsWaited());
    }
}
