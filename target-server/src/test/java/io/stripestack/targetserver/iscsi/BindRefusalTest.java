package io.stripestack.targetserver.iscsi;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.channels.ServerSocketChannel;
import org.junit.jupiter.api.Test;

/** A portal that cannot be bound is refused with the one thing to do, which depends on why. */
class BindRefusalTest {

    /** What binding really throws for the address, or null when it binds (then the host has it). */
    private static Exception bind(InetSocketAddress address) {
        try (ServerSocketChannel channel = ServerSocketChannel.open()) {
            channel.bind(address);
            return null;
        } catch (IOException e) {
            return e;
        }
    }

    @Test
    void anAddressTheHostLacksIsNamedAsSuch() {
        InetSocketAddress documentation = new InetSocketAddress("192.0.2.10", 3260);   // TEST-NET-1, RFC 5737
        Exception cause = bind(documentation);
        assertTrue(cause != null, "this host has 192.0.2.10; the test needs a host without it");
        String message = IscsiServer.cannotListen(documentation, cause).getMessage();
        assertTrue(message.contains("192.0.2.10 is not an address of this host"), message);
        assertFalse(message.contains("free the port"), message);
    }

    @Test
    void aPortInUseIsToBeFreedOrChanged() throws Exception {
        try (ServerSocket taken = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            InetSocketAddress address = new InetSocketAddress("127.0.0.1", taken.getLocalPort());
            Exception cause = bind(address);
            assertTrue(cause != null, "bound a port in use");
            String message = IscsiServer.cannotListen(address, cause).getMessage();
            assertTrue(message.contains("free the port or choose another one"), message);
            assertFalse(message.contains("not an address of this host"), message);
        }
    }
}
