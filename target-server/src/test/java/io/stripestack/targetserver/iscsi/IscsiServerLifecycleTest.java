package io.stripestack.targetserver.iscsi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stripestack.blockdev.MemoryBlockDevice;
import io.stripestack.targetserver.scsi.LogicalUnit;
import io.stripestack.targetserver.scsi.LogicalUnitIdentity;
import io.stripestack.targetserver.scsi.ScsiTarget;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.junit.jupiter.api.Test;

/** Start, bind errors and graceful close of a real server on 127.0.0.1. */
class IscsiServerLifecycleTest {

    private static IscsiTargetDefinition target() {
        ScsiTarget router = new ScsiTarget(Map.of(0L, new LogicalUnit(new MemoryBlockDevice("l", 1 << 20, 512),
                LogicalUnitIdentity.of(UUID.randomUUID()), false)));
        return IscsiTargetDefinition.builder("iqn.2026-11.io.stripestack:life", router).build();
    }

    @Test
    void closeDropsIdleAndHalfLoggedInConnectionsPromptly() throws Exception {
        ExecutorService executor = Executors.newFixedThreadPool(2);
        IscsiServer server = new IscsiServer(IscsiServerSettings.builder()
                .bind(new InetSocketAddress("127.0.0.1", 0)).drainTimeout(Duration.ofSeconds(5)).build(),
                List.of(target()), executor);
        try {
            server.start();
            assertThrows(IllegalStateException.class, server::start);
            try (Socket idle = new Socket("127.0.0.1", server.boundPort())) {
                idle.setSoTimeout(5000);
                long deadline = System.nanoTime() + 5_000_000_000L;
                while (server.connectionCount() < 1 && System.nanoTime() < deadline) {
                    Thread.sleep(10);
                }
                assertEquals(1, server.connectionCount());
                long start = System.nanoTime();
                server.close();
                assertTrue(System.nanoTime() - start < 4_000_000_000L, "close does not wait for idle connections");
                InputStream in = idle.getInputStream();
                assertEquals(-1, in.read(), "connection closed by the server");
            }
            server.close(); // idempotent
        } finally {
            executor.shutdownNow();
        }
    }

    @Test
    void bindingAnAddressInUseNamesItAndLeavesNothingBound() throws Exception {
        ExecutorService executor = Executors.newSingleThreadExecutor();
        IscsiServer first = new IscsiServer(IscsiServerSettings.builder().bind(new InetSocketAddress("127.0.0.1", 0)).build(),
                List.of(target()), executor);
        try {
            first.start();
            InetSocketAddress taken = first.boundAddresses().get(0);
            IscsiServer second = new IscsiServer(IscsiServerSettings.builder()
                    .bind(new InetSocketAddress("127.0.0.1", 0)).bind(taken).build(), List.of(target()), executor);
            IOException e = assertThrows(IOException.class, second::start);
            assertTrue(e.getMessage().contains("127.0.0.1:" + taken.getPort() + " ("), e.getMessage());
            assertThrows(IllegalStateException.class, second::boundPort, "the first address was unbound again");
        } finally {
            first.close();
            executor.shutdownNow();
        }
    }
}
