package io.stripestack.targetserver.testing;

import io.stripestack.targetserver.control.AdminServer;
import java.io.IOException;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/** Runtime attributes of a running server read over its admin socket, as `stripestack ctl get` does. */
public final class AdminAttributes {
    private AdminAttributes() {
    }

    public static String get(Path socket, String attribute) throws IOException {
        return AdminServer.request(socket, "get " + attribute).trim();
    }

    /** Waits up to a minute for {@code attribute} to read {@code value}; fails with the server's status. */
    public static void waitFor(Path socket, String attribute, String value) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (!get(socket, attribute).equals(value)) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError(attribute + " never became " + value + ":\n" + AdminServer.request(socket, "status"));
            }
            Thread.sleep(50);
        }
    }
}
