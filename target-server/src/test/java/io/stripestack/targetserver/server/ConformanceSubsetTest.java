package io.stripestack.targetserver.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.stripestack.targetserver.config.ConfigLoader;
import io.stripestack.targetserver.config.StripestackConfig;
import io.stripestack.targetserver.testing.ExternalTools;
import io.stripestack.targetserver.testing.ExternalTools.Result;
import java.nio.file.Path;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A representative subset of libiscsi's conformance suite (iscsi-test-cu, with --dataloss) against a
 * RAID-5 LUN of the real server: every suite must run its tests and fail none. The whole suite runs from
 * scripts/conformance.sh (results in docs/conformance.md).
 */
class ConformanceSubsetTest {
    private static final String IQN = "iqn.2026-11.io.stripestack:conformance";
    private static final Pattern SUMMARY = Pattern.compile(
            "^\\s*tests\\s+(\\d+)\\s+(\\d+)\\s+(\\d+)\\s+(\\d+)\\s+(\\d+)\\s*$", Pattern.MULTILINE);

    @TempDir
    static Path dir;
    static StripestackServer server;

    @BeforeAll
    static void start() throws Exception {
        StripestackConfig config = ConfigLoader.parse("conformance.yaml", """
                data_dir: %s
                server: {portals: ["127.0.0.1:0"]}
                arrays:
                  md0: {members: [m0, m1, m2, m3], create_member_size: 32MiB, chunk: 64KiB}
                targets:
                  - iqn: %s
                    luns: [{lun: 0, array: md0}]
                """.formatted(dir, IQN), dir);
        server = StripestackServer.start(config);
    }

    @AfterAll
    static void stop() {
        if (server != null) {
            server.close();
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"SCSI.TestUnitReady", "SCSI.Inquiry", "SCSI.ReadCapacity10", "SCSI.ReadCapacity16",
            "SCSI.Mandatory", "SCSI.ModeSense6", "SCSI.ReportSupportedOpcodes", "SCSI.Read10", "SCSI.Read16",
            "SCSI.Write10", "SCSI.Write16", "SCSI.WriteVerify16", "SCSI.Verify10", "SCSI.WriteSame10",
            "SCSI.CompareAndWrite", "SCSI.Reserve6", "SCSI.ProutRegister", "SCSI.MultipathIO",
            "iSCSI.iSCSIcmdsn", "iSCSI.iSCSIResiduals", "iSCSI.iSCSITMF", "iSCSI.iSCSIdatasn"})
    void suitePassesWithoutFailures(String suite) throws Exception {
        runWithoutFailures(suite, lun0());
    }

    /**
     * Suites whose every test must run: libiscsi skips (and CUnit passes) a test whose command is answered
     * INVALID COMMAND OPERATION CODE, so without this check losing the command would go unnoticed.
     */
    @ParameterizedTest
    @ValueSource(strings = {"SCSI.ExtendedCopy", "SCSI.ReceiveCopyResults"})
    void suiteRunsEveryTestWithoutFailures(String suite) throws Exception {
        String output = runWithoutFailures(suite, lun0());
        assertFalse(output.contains("[SKIPPED]"), suite + " skipped tests:\n" + output);
    }

    private static String lun0() {
        return "iscsi://127.0.0.1:" + server.boundAddresses().get(0).getPort() + "/" + IQN + "/0";
    }

    /** Runs one suite against a LUN; fails unless it ran tests and none failed. Returns its output. */
    static String runWithoutFailures(String suite, String url) throws Exception {
        ExternalTools.requireTool("iscsi-test-cu");
        Result r = ExternalTools.run(180, List.of("iscsi-test-cu", "--dataloss", "-t", suite, url, url));
        Matcher m = SUMMARY.matcher(r.output());
        if (!m.find()) {
            fail(suite + ": no CUnit summary in the output:\n" + r.output());
        }
        int ran = Integer.parseInt(m.group(2));
        int failed = Integer.parseInt(m.group(4));
        assertTrue(ran > 0, suite + " ran no test:\n" + r.output());
        assertEquals(0, failed, suite + " failed tests:\n" + r.output());
        return r.output();
    }
}
