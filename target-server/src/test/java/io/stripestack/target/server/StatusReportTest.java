package io.stripestack.target.server;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stripestack.target.iscsi.WriteBufferStats;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class StatusReportTest {

    @Test
    void writeBufferBudgetAppearsInStatusAndPrometheusText() {
        WriteBufferStats stats = new WriteBufferStats(256L << 20, 64L << 20, 3L << 20, 40L << 20, 2, 17, 5);
        StatusReport report = new StatusReport(Map.of(), List.of(), () -> stats);
        String status = report.render();
        assertTrue(status.contains("iSCSI write buffers: 3.0 of 256.0 MiB in use (peak 40.0), 2 writes waiting; "
                + "since start 17 waited, 5 refused TASK SET FULL"), status);
        String prometheus = report.prometheus();
        assertTrue(prometheus.contains("stripestack_write_buffer_bytes{kind=\"in_use\"} " + (3L << 20) + "\n"), prometheus);
        assertTrue(prometheus.contains("stripestack_write_buffer_bytes{kind=\"budget\"} " + (256L << 20) + "\n"), prometheus);
        assertTrue(prometheus.contains("stripestack_write_buffer_commands_waiting 2\n"), prometheus);
        assertTrue(prometheus.contains("stripestack_write_buffer_commands_total{outcome=\"refused\"} 5\n"), prometheus);

        StatusReport withoutIscsi = new StatusReport(Map.of(), List.of(), null);
        assertFalse(withoutIscsi.render().contains("write buffers"));
        assertFalse(withoutIscsi.prometheus().contains("write_buffer"));
    }
}
