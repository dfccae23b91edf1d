package io.stripestack.targetserver.control;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class AdminServerTest {
    @TempDir
    Path dir;

    @Test
    void getSetListOverTheSocketWithValidation() throws Exception {
        ControlRegistry registry = new ControlRegistry();
        AtomicInteger cache = new AtomicInteger(256);
        registry.register("md0/stripe_cache_size", ControlAttribute.ofInt(cache::get, cache::set, 17, 32768));
        registry.register("md0/level", ControlAttribute.readOnly(() -> "raid5"));
        registry.setStatusReport(() -> "md0 : active raid5\n");
        Path socket = dir.resolve("admin.sock");
        try (AdminServer server = new AdminServer(socket, registry)) {
            assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(socket)));
            assertEquals("256\n", AdminServer.request(socket, "get md0/stripe_cache_size"));
            AdminServer.request(socket, "set md0/stripe_cache_size 4096");
            assertEquals(4096, cache.get());
            IOException range = assertThrows(IOException.class,
                    () -> AdminServer.request(socket, "set md0/stripe_cache_size 5"));
            assertTrue(range.getMessage().contains("valid: 17..32768"), range.getMessage());
            assertEquals(4096, cache.get());
            IOException ro = assertThrows(IOException.class, () -> AdminServer.request(socket, "set md0/level raid6"));
            assertTrue(ro.getMessage().contains("read-only"));
            String list = AdminServer.request(socket, "list md0/");
            assertTrue(list.contains("md0/stripe_cache_size = 4096"), list);
            assertTrue(list.contains("md0/level = raid5  (read-only)"), list);
            assertEquals("md0 : active raid5\n", AdminServer.request(socket, "status"));
            IOException unknown = assertThrows(IOException.class, () -> AdminServer.request(socket, "get md9/x"));
            assertTrue(unknown.getMessage().contains("no attribute 'md9/x'"));
        }
        assertTrue(Files.notExists(socket), "socket removed on close");
    }
}
