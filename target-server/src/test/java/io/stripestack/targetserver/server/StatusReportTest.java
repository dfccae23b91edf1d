package io.stripestack.targetserver.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stripestack.blockdev.MemoryBlockDevice;
import io.stripestack.readahead.ReadaheadBlockDevice;
import io.stripestack.readahead.ReadaheadBudget;
import io.stripestack.targetserver.config.StripestackConfig.BackingConfig;
import io.stripestack.targetserver.config.StripestackConfig.LunConfig;
import io.stripestack.targetserver.config.StripestackConfig.ReadaheadConfig;
import io.stripestack.targetserver.iscsi.BufferStats;
import io.stripestack.targetserver.iscsi.DataInStats;
import io.stripestack.targetserver.iscsi.WriteBufferStats;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

class StatusReportTest {

    @Test
    void writeBufferBudgetAppearsInStatusAndPrometheusText() {
        WriteBufferStats stats = new WriteBufferStats(256L << 20, 64L << 20, 3L << 20, 40L << 20, 2, 17, 5);
        DataInStats reads = new DataInStats(256L << 20, 32L << 20, 5L << 20, 30L << 20, 9);
        StatusReport report = new StatusReport(Map.of(), List.of(), () -> new BufferStats(stats, reads), null);
        String status = report.render();
        assertTrue(status.contains("iSCSI write buffers: 3.0 of 256.0 MiB in use (peak 40.0), 2 writes waiting; "
                + "since start 17 waited, 5 refused TASK SET FULL"), status);
        assertTrue(status.contains("iSCSI Data-In: 5.0 of 256.0 MiB held (peak 30.0, 32.0 MiB per session); "
                + "since start 9 reads waited for room"), status);
        MetricsReport metrics = new MetricsReport(Map.of(), List.of(), () -> new BufferStats(stats, reads), null);
        String prometheus = metrics.render();
        assertTrue(prometheus.contains("\nstripestack_write_buffer_in_use_bytes " + (3L << 20) + "\n"), prometheus);
        assertTrue(prometheus.contains("\nstripestack_write_buffer_budget_bytes " + (256L << 20) + "\n"), prometheus);
        assertTrue(prometheus.contains("\nstripestack_write_buffer_commands_waiting 2\n"), prometheus);
        assertTrue(prometheus.contains("\nstripestack_write_buffer_refused_commands_total 5\n"), prometheus);
        assertTrue(prometheus.contains("\nstripestack_data_in_held_bytes " + (5L << 20) + "\n"), prometheus);
        assertTrue(prometheus.contains("\nstripestack_data_in_reads_waited_total 9\n"), prometheus);

        StatusReport withoutIscsi = new StatusReport(Map.of(), List.of(), null, null);
        assertFalse(withoutIscsi.render().contains("write buffers"));
        assertFalse(new MetricsReport(Map.of(), List.of(), null, null).render().contains("write_buffer"));
    }

    @Test
    void statusListsTheSessionsOfEveryTarget() {
        String nexus = "iqn.2026-11.io.example:host,i,0x400001370000,iqn.2026-11.io.stripestack:t,t,0x1";
        StatusReport report = new StatusReport(Map.of(), List.of(), null, () -> Map.of(
                "iqn.2026-11.io.stripestack:t", List.of(nexus), "iqn.2026-11.io.stripestack:idle", List.of()));
        String status = report.render();
        assertTrue(status.contains("iqn.2026-11.io.stripestack:t: 1 session:\n  " + nexus + "\n"), status);
        assertTrue(status.contains("iqn.2026-11.io.stripestack:idle: 0 sessions\n"), status);
    }

    private static LunStack lun(int number, ReadaheadBudget budget) {
        MemoryBlockDevice base = new MemoryBlockDevice("ram" + number, 4 << 20, 512);
        ReadaheadBlockDevice readahead = new ReadaheadBlockDevice(base, budget);
        readahead.setReadAheadKb(0);        // no background prefetch: the counters move only with the test's I/O
        LunConfig config = new LunConfig(number, new BackingConfig(null, null, 4 << 20, true), null,
                new ReadaheadConfig(-1, false), false, "s" + number);
        return new LunStack("iqn.2026-11.io.stripestack:t", config, readahead, readahead, null, base);
    }

    /** The r/s and w/s of every "  readahead" / "  base" line of a report, in order. */
    private static List<double[]> rates(String status) {
        List<double[]> rates = new ArrayList<>();
        Matcher m = Pattern.compile("^  (?:readahead|base \\S+)\\s+(-?[\\d.]+)\\s+(-?[\\d.]+)\\s+(-?[\\d.]+)\\s+(-?[\\d.]+)",
                Pattern.MULTILINE).matcher(status);
        while (m.find()) {
            rates.add(new double[] {Double.parseDouble(m.group(1)), Double.parseDouble(m.group(3))});
        }
        return rates;
    }

    /**
     * Two LUNs, only the first one busy: every LUN's layers are compared with their own previous sample, so
     * the idle LUN shows 0, and a second report with no I/O in between shows 0 everywhere (keyed by layer
     * label alone, the LUNs' "readahead" lines were compared with each other: negative rates).
     */
    @Test
    void ratesOfTwoLunsAreEachTheirOwn() throws Exception {
        ReadaheadBudget budget = new ReadaheadBudget(4 << 20);
        LunStack busy = lun(0, budget);
        LunStack idle = lun(1, budget);
        StatusReport report = new StatusReport(Map.of(), List.of(busy, idle), null, null);
        report.render();
        for (int i = 0; i < 50; i++) {
            busy.top().write(i * 4096L, ByteBuffer.allocate(4096));
            busy.top().read(i * 4096L, ByteBuffer.allocate(4096));
        }
        String first = report.render();
        List<double[]> r = rates(first);
        assertEquals(4, r.size(), first);
        assertTrue(r.get(0)[0] > 0 && r.get(0)[1] > 0, "the busy LUN's readahead layer: " + first);
        assertEquals(0.0, r.get(2)[0], "the idle LUN's readahead r/s: " + first);
        assertEquals(0.0, r.get(2)[1], "the idle LUN's readahead w/s: " + first);
        assertEquals(0.0, r.get(3)[0], "the idle LUN's base r/s: " + first);

        String second = report.render();
        for (double[] rate : rates(second)) {
            assertEquals(0.0, rate[0], "no I/O since the last report: " + second);
            assertEquals(0.0, rate[1], "no I/O since the last report: " + second);
        }
        busy.top().close();
        idle.top().close();
    }
}
