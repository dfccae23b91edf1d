package io.stripestack.targetserver.testing;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

/**
 * A Linux tgt target (tgtd, Debian {@code tgt}) for tests: one process on a free loopback port serving
 * sparse files as LUNs 1..N, started as {@code /work/shared/tools/peer/start-tgt.sh} does. {@link #kill()}
 * SIGKILLs it (a crashed target machine), {@link #restart()} starts it again on the same port and files; close
 * kills it, and a shutdown hook kills it should the test JVM end without closing, so no tgtd outlives its test.
 * A missing tgtd skips the test on a developer's machine and fails it under CI=true.
 *
 * <p>Used by one test thread.
 */
public final class Tgtd implements AutoCloseable {
    /** tgtd refuses larger management ports (its control socket is named after it). */
    private static final int MAX_CONTROL_PORT = 30000;

    private final Path dir;
    private final int port;
    private final String iqn;
    private final int luns;
    private Process process;
    private int controlPort;
    /** CHAP account the target demands, or null; set again at each restart. */
    private String[] chap;
    /** Whether the target grants CRC32C digests; set again at each restart. */
    private boolean digestsAllowed;
    /** The one initiator name the target accepts, or null for any; set again at each restart. */
    private String onlyInitiator;
    /** Session parameters the target declares, by key; set again at each restart. */
    private final java.util.Map<String, String> parameters = new java.util.LinkedHashMap<>();
    private final Thread reaper = new Thread(this::kill, "tgtd-reaper");

    private Tgtd(Path dir, int port, String iqn, int luns) {
        this.dir = dir;
        this.port = port;
        this.iqn = iqn;
        this.luns = luns;
    }

    /** Starts tgtd with {@code luns} sparse LUNs of {@code lunBytes} each, backed by files in {@code dir}. */
    public static Tgtd start(Path dir, int luns, long lunBytes) throws Exception {
        ExternalTools.requireTool("tgtd");
        ExternalTools.requireTool("tgtadm");
        Files.createDirectories(dir);
        for (int i = 1; i <= luns; i++) {
            try (RandomAccessFile f = new RandomAccessFile(dir.resolve("lun" + i + ".img").toFile(), "rw")) {
                f.setLength(lunBytes);
            }
        }
        int port;
        try (ServerSocket probe = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            port = probe.getLocalPort();
        }
        Tgtd t = new Tgtd(dir, port, "iqn.2026-11.io.stripestack.test:tgt" + port, luns);
        Runtime.getRuntime().addShutdownHook(t.reaper);
        try {
            t.launch();
        } catch (Exception | Error e) {
            t.close();
            throw e;
        }
        return t;
    }

    private void launch() throws Exception {
        controlPort = freeControlPort();
        process = new ProcessBuilder("tgtd", "-f", "-C", Integer.toString(controlPort), "--iscsi",
                "portal=127.0.0.1:" + port).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(dir.resolve("tgtd.log").toFile())).start();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (!(adm(false, "--mode", "target", "--op", "show") && portOpen())) {
            if (!process.isAlive() || System.nanoTime() > deadline) {
                throw new IOException("tgtd did not start on port " + port + "; see " + dir.resolve("tgtd.log") + ":\n"
                        + Files.readString(dir.resolve("tgtd.log")));
            }
            Thread.sleep(100);
        }
        adm(true, "--mode", "target", "--op", "new", "--tid", "1", "--targetname", iqn);
        for (int i = 1; i <= luns; i++) {
            adm(true, "--mode", "logicalunit", "--op", "new", "--tid", "1", "--lun", Integer.toString(i),
                    "--bstype", "rdwr", "--backing-store", dir.resolve("lun" + i + ".img").toString());
        }
        if (onlyInitiator == null) {
            adm(true, "--mode", "target", "--op", "bind", "--tid", "1", "--initiator-address", "ALL");
        } else {
            adm(true, "--mode", "target", "--op", "bind", "--tid", "1", "--initiator-name", onlyInitiator);
        }
        if (chap != null) {
            adm(true, "--mode", "account", "--op", "new", "--user", chap[0], "--password", chap[1]);
            adm(true, "--mode", "account", "--op", "bind", "--tid", "1", "--user", chap[0]);
        }
        if (digestsAllowed) {
            applyDigests();
        }
        for (java.util.Map.Entry<String, String> p : parameters.entrySet()) {
            applyParameter(p.getKey(), p.getValue());
        }
    }

    /**
     * From now on (restarts included) the target declares {@code key=value} at login, e.g. MaxBurstLength,
     * InitialR2T or ImmediateData; sessions that are logged in keep what they negotiated.
     */
    public void setParameter(String key, String value) throws Exception {
        parameters.put(key, value);
        applyParameter(key, value);
    }

    private void applyParameter(String key, String value) throws Exception {
        adm(true, "--mode", "target", "--op", "update", "--tid", "1", "--name", key, "--value", value);
    }

    /** From now on (restarts included) only the initiator of this name may log in, from any address. */
    public void allowOnlyInitiator(String initiatorName) throws Exception {
        adm(true, "--mode", "target", "--op", "unbind", "--tid", "1", "--initiator-address", "ALL");
        onlyInitiator = initiatorName;
        adm(true, "--mode", "target", "--op", "bind", "--tid", "1", "--initiator-name", initiatorName);
    }

    /** From now on (restarts included) the target grants CRC32C header and data digests to an initiator that asks. */
    public void allowDigests() throws Exception {
        digestsAllowed = true;
        applyDigests();
    }

    private void applyDigests() throws Exception {
        for (String key : List.of("HeaderDigest", "DataDigest")) {
            adm(true, "--mode", "target", "--op", "update", "--tid", "1", "--name", key, "--value", "CRC32C,None");
        }
    }

    /**
     * From now on the target demands one-way CHAP with this account (a test secret: tgtadm takes it on its
     * command line, which is why the server never does so with a real one).
     */
    public void requireChap(String user, String secret) throws Exception {
        chap = new String[] {user, secret};
        adm(true, "--mode", "account", "--op", "new", "--user", user, "--password", secret);
        adm(true, "--mode", "account", "--op", "bind", "--tid", "1", "--user", user);
    }

    /** A management port whose control socket no other tgtd holds. */
    private static int freeControlPort() {
        for (;;) {
            int p = ThreadLocalRandom.current().nextInt(2000, MAX_CONTROL_PORT);
            if (!Files.exists(Path.of("/var/run/tgtd/socket." + p)) && !Files.exists(Path.of("/run/tgtd/socket." + p))) {
                return p;
            }
        }
    }

    private boolean adm(boolean required, String... args) throws Exception {
        List<String> command = new java.util.ArrayList<>(List.of("tgtadm", "-C", Integer.toString(controlPort),
                "--lld", "iscsi"));
        command.addAll(List.of(args));
        ExternalTools.Result r = ExternalTools.run(20, command);
        if (required) {
            r.requireSuccess(String.join(" ", command));
        }
        return r.exitCode() == 0;
    }

    private boolean portOpen() {
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress("127.0.0.1", port), 500);
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    /** The management port tgtadm reaches this tgtd on ({@code tgtadm -C PORT}). */
    public int controlPort() {
        return controlPort;
    }

    /** {@code iscsi://127.0.0.1:PORT/IQN/LUN}. */
    public String url(int lun) {
        return "iscsi://127.0.0.1:" + port + "/" + iqn + "/" + lun;
    }

    /** The file behind LUN {@code lun}. */
    public Path backingFile(int lun) {
        return dir.resolve("lun" + lun + ".img");
    }

    public boolean isRunning() {
        return process != null && process.isAlive();
    }

    /** SIGSTOP: a hung target; its connections stay open and nothing is answered (the kernel still accepts). */
    public void pause() throws Exception {
        ExternalTools.run("kill", "-STOP", Long.toString(process.pid())).requireSuccess("kill -STOP");
    }

    /** SIGCONT after {@link #pause}. */
    public void resume() throws Exception {
        ExternalTools.run("kill", "-CONT", Long.toString(process.pid())).requireSuccess("kill -CONT");
    }

    /** SIGKILL, as a target machine that dies: its connections drop with it. */
    public void kill() {
        Process p = process;
        if (p != null && p.isAlive()) {
            p.destroyForcibly();
            try {
                p.waitFor(10, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        for (String leftover : List.of("socket." + controlPort, "socket." + controlPort + ".lock")) {
            try {
                Files.deleteIfExists(Path.of("/var/run/tgtd", leftover)); // a killed tgtd leaves its control socket
            } catch (IOException e) {
                // not ours to worry about: the next start picks another control port
            }
        }
    }

    /** Starts tgtd again on the same port and backing files (a target machine that comes back). */
    public void restart() throws Exception {
        kill();
        launch();
    }

    @Override
    public void close() {
        kill();
        try {
            Runtime.getRuntime().removeShutdownHook(reaper);
        } catch (IllegalStateException shuttingDown) {
            // the hook is running or about to
        }
    }
}
