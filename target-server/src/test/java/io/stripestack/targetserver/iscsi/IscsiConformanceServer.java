package io.stripestack.targetserver.iscsi;

import io.stripestack.blockdev.MemoryBlockDevice;
import io.stripestack.targetserver.scsi.LogicalUnit;
import io.stripestack.targetserver.scsi.LogicalUnitIdentity;
import io.stripestack.targetserver.scsi.ScsiTarget;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * A manual harness, not a test: serves iqn.2026-11.io.stripestack:conformance with LUN 1 on a
 * 256 MiB memory device at 127.0.0.1:PORT (argument, default 3261) until killed, for libiscsi's
 * iscsi-test-cu (/work/shared/tools/peer/conformance.sh 127.0.0.1:PORT IQN 1).
 */
public final class IscsiConformanceServer {
    private IscsiConformanceServer() {
    }

    public static void main(String[] args) throws Exception {
        int port = args.length > 0 ? Integer.parseInt(args[0]) : 3261;
        String iqn = "iqn.2026-11.io.stripestack:conformance";
        MemoryBlockDevice device = new MemoryBlockDevice("conformance", 256 << 20, 512);
        ScsiTarget router = new ScsiTarget(Map.of(1L, new LogicalUnit(device,
                LogicalUnitIdentity.of(UUID.nameUUIDFromBytes(iqn.getBytes(StandardCharsets.UTF_8))), false)));
        ExecutorService executor = Executors.newFixedThreadPool(4);
        IscsiServer server = new IscsiServer(IscsiServerSettings.builder()
                .bind(new InetSocketAddress("127.0.0.1", port)).build(),
                List.of(IscsiTargetDefinition.builder(iqn, router).build()), executor);
        server.start();
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            server.close();
            executor.shutdown();
        }));
        Thread.currentThread().join();
    }
}
