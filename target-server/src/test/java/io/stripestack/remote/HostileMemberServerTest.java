package io.stripestack.remote;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stripestack.initiator.InitiatorOptions;
import io.stripestack.initiator.IscsiInitiator;
import io.stripestack.initiator.IscsiUrl;
import io.stripestack.remote.HostileTarget.Misbehaviour;
import io.stripestack.targetserver.config.ConfigLoader;
import io.stripestack.targetserver.config.StripestackConfig;
import io.stripestack.targetserver.server.StripestackServer;
import io.stripestack.targetserver.testing.AdminAttributes;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * An array exported by the real server, with three member files and one member on a {@link HostileTarget}, read
 * and written over TCP by a tenant while another tenant's LUN on the same server keeps the server's pooled
 * buffers full of its own bytes. Once the member target breaks the protocol (a short read that does not own up to
 * it, Data-In past the transfer, a 16 MiB data segment, a wrong ITT, a close inside a PDU, an R2T past the
 * write), the tenant still reads exactly what the array holds, never a byte of the other tenant's; the member is
 * failed once the retry window passes, so the array serves degraded; it is not logged in again by itself; and
 * the connections it was given and the lines logged about it stay few. A member target that goes silent while the
 * array is idle is found by the idle probe and failed without any I/O.
 */
class HostileMemberServerTest {
    private static final String ARRAY_IQN = "iqn.2026-12.io.stripestack:array";
    private static final String OTHER_IQN = "iqn.2026-12.io.stripestack:other";
    private static final long MEMBER_BYTES = 16L << 20;
    private static final int MIB = 1 << 20;
    private static final byte OTHER_TENANTS_BYTE = 0x5c;
    private static final int RETRY_SECONDS = 3;
    /** Generous guards for a loaded machine; the behaviour under test takes a few seconds. */
    private static final long GUARD_SECONDS = 90;

    @TempDir
    Path dir;

    private StripestackConfig config(String memberUrl) throws Exception {
        String yaml = """
                data_dir: %s
                server:
                  portals: ["127.0.0.1:0"]
                  io_threads: 4
                arrays:
                  md0:
                    members: [m0.img, m1.img, m2.img, %s]
                    create_member_size: 16MiB
                    chunk: 64KiB
                    remote_connections: 2
                    remote_queue_depth: 8
                    remote_retry_timeout_seconds: %d
                    remote_command_timeout_seconds: 2
                targets:
                  - iqn: %s
                    luns:
                      - {lun: 0, array: md0, readahead: 0}
                  - iqn: %s
                    luns:
                      - {lun: 0, file: other.img, create_size: 16MiB, readahead: 0}
                """.formatted(dir.resolve("data"), memberUrl, RETRY_SECONDS, ARRAY_IQN, OTHER_IQN);
        Path file = dir.resolve("hostile.yaml");
        Files.writeString(file, yaml);
        return ConfigLoader.load(file);
    }

    private static IscsiInitiator login(StripestackServer server, String iqn) throws IOException {
        String url = "iscsi://127.0.0.1:" + server.boundAddresses().get(0).getPort() + "/" + iqn + "/0";
        InitiatorOptions options = InitiatorOptions.defaults();
        options = new InitiatorOptions(options.initiatorIqn(), options.immediateData(), options.initialR2T(),
                options.maxRecvDataSegmentLength(), options.maxBurstLength(), options.firstBurstLength(),
                options.maxTasks(), options.connectTimeout(), Duration.ofSeconds(GUARD_SECONDS),
                options.headerDigest(), options.dataDigest());
        return IscsiInitiator.login(IscsiUrl.parse(url), options);
    }

    @ParameterizedTest
    @EnumSource(value = Misbehaviour.class, names = {"SHORT_READ", "OVERSIZE_DATA_IN", "HUGE_SEGMENT", "WRONG_ITT",
            "CLOSE_MID_PDU", "BAD_R2T"})
    void aMemberTargetThatBreaksTheProtocolIsFailedAndNoForeignByteReachesAClient(Misbehaviour misbehaviour)
            throws Exception {
        try (HostileTarget hostile = HostileTarget.start(MEMBER_BYTES);
             LogLines remoteLines = LogLines.counting("RemoteBlockDevice", "RemoteSession", "CommandPath",
                     "ConnectionLifecycle", "LoginNegotiation", "NopResponder", "PduReceiver")) {
            StripestackConfig config = config(hostile.url());
            try (StripestackServer server = StripestackServer.start(config);
                 IscsiInitiator tenant = login(server, ARRAY_IQN);
                 IscsiInitiator other = login(server, OTHER_IQN)) {
                Path socket = config.server().adminSocket();
                AdminAttributes.waitFor(socket, "md0/array_state", "clean");
                ByteBuffer mine = ByteBuffer.allocateDirect(MIB);
                for (int i = 0; i < MIB; i++) {
                    byte b = (byte) (i * 31 + 7);
                    mine.put(i, b == OTHER_TENANTS_BYTE ? (byte) (b + 1) : b); // the other tenant's byte is its own
                }
                tenant.write16(0, mine);
                int connectionsBefore = hostile.connections();
                int linesBefore = remoteLines.count();

                hostile.misbehave(misbehaviour);
                long guard = System.nanoTime() + TimeUnit.SECONDS.toNanos(GUARD_SECONDS);
                ByteBuffer back = ByteBuffer.allocateDirect(MIB);
                for (int round = 0; !AdminAttributes.get(socket, "md0/remote/0").contains(": failed"); round++) {
                    assertTrue(System.nanoTime() < guard, "the member was never failed:\n"
                            + AdminAttributes.get(socket, "md0/remote/0"));
                    fillServerBuffersWithTheOtherTenantsBytes(other);
                    if (misbehaviour == Misbehaviour.BAD_R2T) {
                        tenant.write16(0, mine);
                    }
                    tenant.read16(0, back.clear());
                    assertEquals(0, foreignBytes(back.flip()), "round " + round + ": bytes of the other tenant in"
                            + " the tenant's own megabyte");
                    assertEquals(mine.clear(), back, "round " + round + ": the tenant's own megabyte");
                    long neverWritten = (8L + round % 16) * MIB;
                    tenant.read16(neverWritten / 512, back.clear());
                    assertNothingButZeros(back.flip(), "round " + round + ", never-written bytes at " + neverWritten);
                }
                AdminAttributes.waitFor(socket, "md0/array_state", "degraded");
                String failed = AdminAttributes.get(socket, "md0/remote/0");
                assertTrue(failed.contains("sessions 0/2"), "a failed member keeps no connection: " + failed);
                assertTrue(!failed.contains("protocol_errors 0") && failed.contains("protocol_errors "),
                        "the target's protocol errors are counted: " + failed);
                int connectionsAtFailure = hostile.connections() - connectionsBefore;
                // the retry window sees a login at 0, 0.1, 0.3, 0.7, 1.5 s... shared by the member's two sessions
                assertTrue(connectionsAtFailure <= 20, connectionsAtFailure + " connections within the window");

                Thread.sleep(5000); // two rounds of the server's look for returning targets
                assertEquals(connectionsBefore + connectionsAtFailure, hostile.connections(),
                        "a member target that broke the protocol is not logged in again by itself");
                tenant.read16(0, back.clear());
                assertEquals(mine.clear(), back.flip(), "the tenant's megabyte, degraded");
                int lines = remoteLines.count() - linesBefore;
                assertTrue(lines > 0 && lines <= 15, lines + " lines logged about the member:\n" + remoteLines.text());
            }
        }
    }

    @Test
    void aMemberTargetLostWhileTheArrayIsIdleIsFailedByTheIdleProbe() throws Exception {
        try (HostileTarget hostile = HostileTarget.start(MEMBER_BYTES)) {
            StripestackConfig config = config(hostile.url());
            try (StripestackServer server = StripestackServer.start(config)) {
                Path socket = config.server().adminSocket();
                AdminAttributes.waitFor(socket, "md0/array_state", "clean");
                hostile.misbehave(Misbehaviour.SILENT); // no FIN, no RST: only a command finds it gone
                AdminAttributes.waitFor(socket, "md0/array_state", "degraded");
                String line = AdminAttributes.get(socket, "md0/remote/0");
                assertTrue(line.contains(": failed"), line);
            }
        }
    }

    /** The other tenant writes a megabyte of its byte and reads it back a few times: pooled buffers now hold it. */
    private static void fillServerBuffersWithTheOtherTenantsBytes(IscsiInitiator other) throws IOException {
        ByteBuffer secret = ByteBuffer.allocateDirect(MIB);
        for (int i = 0; i < MIB; i++) {
            secret.put(i, OTHER_TENANTS_BYTE);
        }
        other.write16(0, secret);
        for (int i = 0; i < 4; i++) {
            other.read16(0, secret.clear());
        }
    }

    private static int foreignBytes(ByteBuffer b) {
        int foreign = 0;
        for (int i = b.position(); i < b.limit(); i++) {
            foreign += b.get(i) == OTHER_TENANTS_BYTE ? 1 : 0;
        }
        return foreign;
    }

    private static void assertNothingButZeros(ByteBuffer b, String what) {
        assertEquals(0, foreignBytes(b), what + ": bytes of the other tenant");
        for (int i = b.position(); i < b.limit(); i++) {
            assertEquals(0, b.get(i), what + ": byte " + i);
        }
    }

    /**
     * Counts the lines the server logs (slf4j-simple writes to System.err at each call, naming the logger by its
     * class's simple name) from the named loggers, passing every line on to the real System.err.
     */
    private static final class LogLines extends OutputStream implements AutoCloseable {
        private final PrintStream original = System.err;
        private final String[] loggers;
        private final AtomicInteger lines = new AtomicInteger();
        private final StringBuilder text = new StringBuilder();
        private final ByteArrayOutputStream line = new ByteArrayOutputStream();

        private LogLines(String... loggers) {
            this.loggers = loggers;
        }

        static LogLines counting(String... loggers) {
            LogLines l = new LogLines(loggers);
            System.setErr(new PrintStream(l, true, StandardCharsets.UTF_8));
            return l;
        }

        @Override
        public synchronized void write(int b) {
            original.write(b);
            if (b != '\n') {
                line.write(b);
                return;
            }
            String s = line.toString(StandardCharsets.UTF_8);
            line.reset();
            for (String logger : loggers) {
                if (s.contains(" " + logger + " - ")) {
                    lines.incrementAndGet();
                    text.append(s).append('\n');
                    return;
                }
            }
        }

        int count() {
            return lines.get();
        }

        synchronized String text() {
            return text.toString();
        }

        @Override
        public void close() {
            System.setErr(original);
        }
    }
}
