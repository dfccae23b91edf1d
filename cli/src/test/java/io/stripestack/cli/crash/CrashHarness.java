package io.stripestack.cli.crash;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;

/** What the crash tests share: the server as a child JVM to kill, its log, free ports, parity on the member files. */
final class CrashHarness {
    private CrashHarness() {
    }

    /** Waits until the server's log contains {@code text}; returns the log. */
    static String awaitLog(Path log, String text, int seconds) throws Exception {
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        String content = Files.readString(log, StandardCharsets.UTF_8);
        while (!content.contains(text) && System.nanoTime() < until) {
            Thread.sleep(100);
            content = Files.readString(log, StandardCharsets.UTF_8);
        }
        assertTrue(content.contains(text), "no '" + text + "' in the server's log within " + seconds + " s:\n" + content);
        return content;
    }

    /** XOR of all members per row, from the md v1.2 superblock's data_offset, size and chunk. */
    record ParityScan(int chunk, Set<Long> writtenRows, Set<Long> mismatchedRows) {
        static ParityScan of(List<Path> members) throws IOException {
            ByteBuffer sb = ByteBuffer.allocate(256).order(ByteOrder.LITTLE_ENDIAN);
            try (FileChannel ch = FileChannel.open(members.get(0))) {
                ch.read(sb, 4096);
            }
            assertEquals(0xa92b4efc, sb.getInt(0), "md superblock magic");
            long dataOffset = sb.getLong(128) * 512;
            long usedBytes = sb.getLong(80) * 512;
            int chunk = sb.getInt(88) * 512;
            ByteBuffer xor = ByteBuffer.allocate(chunk);
            ByteBuffer piece = ByteBuffer.allocate(chunk);
            Set<Long> written = new TreeSet<>();
            Set<Long> mismatched = new TreeSet<>();
            FileChannel[] channels = new FileChannel[members.size()];
            try {
                for (int i = 0; i < channels.length; i++) {
                    channels[i] = FileChannel.open(members.get(i));
                }
                for (long row = 0; row * chunk < usedBytes; row++) {
                    java.util.Arrays.fill(xor.array(), (byte) 0);
                    boolean any = false;
                    for (FileChannel ch : channels) {
                        piece.clear();
                        while (piece.hasRemaining() && ch.read(piece, dataOffset + row * chunk + piece.position()) > 0) {
                            // positional read to the end of the chunk
                        }
                        byte[] p = piece.array();
                        byte[] x = xor.array();
                        for (int i = 0; i < chunk; i++) {
                            any |= p[i] != 0;
                            x[i] ^= p[i];
                        }
                    }
                    if (any) {
                        written.add(row);
                    }
                    for (byte v : xor.array()) {
                        if (v != 0) {
                            mismatched.add(row);
                            break;
                        }
                    }
                }
            } finally {
                for (FileChannel ch : channels) {
                    if (ch != null) {
                        ch.close();
                    }
                }
            }
            return new ParityScan(chunk, written, mismatched);
        }
    }

    static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    /** The real server as a separate JVM, on this test's class path; returns once it accepts connections. */
    static Process startServer(Path config, int port, Path log) throws Exception {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        Process p = new ProcessBuilder(java, "-Xmx256m", "-cp", System.getProperty("java.class.path"),
                "io.stripestack.cli.StripestackCli", "serve", "--config", config.toString())
                .redirectErrorStream(true).redirectOutput(log.toFile()).start();
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (System.nanoTime() < until) {
            if (!p.isAlive()) {
                fail("the server exited with " + p.exitValue() + ":\n" + Files.readString(log, StandardCharsets.UTF_8));
            }
            try (Socket s = new Socket()) {
                s.connect(new InetSocketAddress("127.0.0.1", port), 200);
                return p;
            } catch (IOException notYet) {
                Thread.sleep(100);
            }
        }
        p.destroyForcibly();
        fail("the server did not listen on port " + port + " within 30 s:\n" + Files.readString(log, StandardCharsets.UTF_8));
        return p;
    }
}
