package io.stripestack.bench.soak;

import io.stripestack.secrets.ChapSecretFile;
import io.stripestack.targetserver.config.ConfigLoader;
import io.stripestack.blockdev.Sizes;
import io.stripestack.initiator.InitiatorOptions;
import io.stripestack.initiator.IscsiInitiator;
import io.stripestack.initiator.IscsiUrl;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code stripestack soak}: a data-integrity soak against a LUN, in process or through iSCSI, for seconds or
 * days. See docs/soak.md. Runs on the CLI's main thread; a shutdown hook turns Ctrl-C into an orderly stop
 * with the final line printed.
 */
@Command(name = "soak", mixinStandardHelpOptions = true,
        description = {"Write self-checking 4 KiB blocks to a LUN and verify every read against the last",
                "acknowledged write, for as long as you like (docs/soak.md).",
                "Exit status: 0 no corruption and no I/O error, 1 corruption found, 2 I/O errors only.",
                "  stripestack soak --config conf/default.yaml --lun 0 --duration 3d",
                "  stripestack soak --url iscsi://127.0.0.1:3260/iqn.2026-11.io.stripestack:default/0 --duration 2h",
                "  stripestack soak --config c.yaml --lun 0 --duration 10m --fail-member-after 60s --fail-role 1"})
public final class SoakCommand implements Callable<Integer> {

    static final class Target {
        @Option(names = "--url", paramLabel = "URL",
                description = "iscsi://[USER[%%SECRET]@]HOST[:PORT]/TARGET-IQN/LUN: any iSCSI target, through the network")
        String url;

        @Option(names = {"-c", "--config"}, paramLabel = "FILE",
                description = "build this configuration's stack in this process (no network) and soak one LUN")
        Path config;
    }

    @ArgGroup(exclusive = true, multiplicity = "1")
    Target target;

    @Option(names = "--lun", paramLabel = "N", defaultValue = "0", description = "with --config: the LUN (default 0)")
    int lun;

    @Option(names = "--target", paramLabel = "IQN", description = "with --config: the target, when several have the LUN")
    String targetIqn;

    @Option(names = "--chap-secret-file", paramLabel = "FILE",
            description = "with --url USER@...: read the CHAP secret from this file (mode 0600) instead of the URL")
    Path chapSecretFile;

    @Option(names = {"-d", "--duration"}, paramLabel = "TIME",
            description = "how long: 30s, 90m, 2h, 3d (default: until Ctrl-C)")
    String duration;

    @Option(names = {"-q", "--queue-depth", "--threads"}, paramLabel = "N", defaultValue = "8",
            description = "I/Os in flight, one worker thread each (default 8)")
    int queueDepth;

    @Option(names = "--max-io", paramLabel = "SIZE", defaultValue = "128K",
            description = "largest I/O, a multiple of 4K (default 128K); sizes vary from 4K up to it")
    String maxIo;

    @Option(names = "--read-percent", paramLabel = "P", defaultValue = "30",
            description = "share of I/Os that read and verify (default 30)")
    int readPercent;

    @Option(names = "--span", paramLabel = "SIZE", description = "use only the first SIZE bytes (default: the whole LUN)")
    String span;

    @Option(names = "--seed", paramLabel = "N", description = "the run's seed (default: random, printed)")
    Long seed;

    @Option(names = "--report-every", paramLabel = "TIME", defaultValue = "10s",
            description = "summary period (default 10s)")
    String reportEvery;

    @Option(names = "--sync-every", paramLabel = "TIME", defaultValue = "5s",
            description = "SYNCHRONIZE CACHE period, 0 for never (default 5s)")
    String syncEvery;

    @Option(names = "--fail-member-after", paramLabel = "TIME",
            description = "fail a member of the RAID-5 array below after this long (in process: directly; "
                    + "--url: through --socket)")
    String failMemberAfter;

    @Option(names = "--fail-role", paramLabel = "ROLE", defaultValue = "0", description = "the member role to fail (default 0)")
    int failRole;

    @Option(names = "--add-spare", paramLabel = "FILE",
            description = "right after the member failure, add FILE (created with the members' size if missing) as a"
                    + " hot spare: the array rebuilds onto it while the soak goes on")
    Path addSpare;

    @Option(names = "--socket", paramLabel = "PATH",
            description = "with --url and --fail-member-after: the server's admin socket")
    Path socket;

    @Option(names = "--array", paramLabel = "NAME", defaultValue = "md0",
            description = "with --url and --fail-member-after: the array's name (default md0)")
    String array;

    @Override
    public Integer call() throws Exception {
        PrintStream out = System.out;
        SoakSettings settings = settings();
        SoakDevice device;
        ArrayChaos chaos = null;
        if (target.config != null) {
            InProcessStack stack = InProcessStack.start(ConfigLoader.load(target.config), targetIqn, lun);
            device = stack.device();
            if (settings.failMemberAfter() != null && stack.array() != null) {
                chaos = ArrayChaos.of(stack.array());
            }
        } else {
            device = SoakDevice.of(login());
            if (settings.failMemberAfter() != null) {
                if (socket == null) {
                    throw new IllegalArgumentException("--fail-member-after with --url needs --socket PATH (the"
                            + " server's admin socket) and --array NAME");
                }
                chaos = ArrayChaos.viaAdminSocket(socket, array);
            }
        }
        // Ctrl-C / SIGTERM: the hook stops the run and waits until the final line is out and the device (and
        // an in-process server) is closed, so arrays are flushed and marked clean before the JVM ends.
        CountDownLatch finished = new CountDownLatch(1);
        Thread hook = null;
        try (device) {
            SoakRunner runner = new SoakRunner(device, settings, chaos, out);
            hook = new Thread(() -> {
                runner.stop();
                try {
                    finished.await(60, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }, "soak-shutdown");
            Runtime.getRuntime().addShutdownHook(hook);
            return runner.run().exitCode();
        } finally {
            finished.countDown();
            if (hook != null) {
                try {
                    Runtime.getRuntime().removeShutdownHook(hook);
                } catch (IllegalStateException shuttingDown) {
                    // the hook is running and was just released
                }
            }
        }
    }

    private SoakSettings settings() {
        long maxIoBytes = Sizes.parse(maxIo);
        if (maxIoBytes < BlockPattern.BLOCK || maxIoBytes % BlockPattern.BLOCK != 0) {
            throw new IllegalArgumentException("--max-io " + maxIo + " must be a multiple of 4K");
        }
        Duration sync = SoakSettings.parseDuration(syncEvery);
        return SoakSettings.defaults()
                .withDuration(duration == null ? null : SoakSettings.parseDuration(duration))
                .withLoad(queueDepth, (int) (maxIoBytes / BlockPattern.BLOCK), readPercent)
                .withSpan(span == null ? 0 : Sizes.parse(span))
                .withSeed(seed != null ? seed : new java.security.SecureRandom().nextLong() & Long.MAX_VALUE)
                .withPeriods(SoakSettings.parseDuration(reportEvery), sync)
                .withMemberFailure(failMemberAfter == null ? null : SoakSettings.parseDuration(failMemberAfter), failRole)
                .withSpare(addSpare);
    }

    private IscsiInitiator login() throws IOException {
        IscsiUrl url = IscsiUrl.parse(target.url);
        char[] secret = url.chapSecret();
        if (chapSecretFile != null) {
            secret = ChapSecretFile.read(chapSecretFile);
        }
        if (url.chapUser() != null && secret == null) {
            throw new IllegalArgumentException("the URL names CHAP user " + url.chapUser() + " but no secret: give"
                    + " --chap-secret-file FILE (or USER%SECRET in the URL)");
        }
        IscsiUrl withSecret = new IscsiUrl(url.host(), url.port(), url.targetIqn(), url.lun(), url.chapUser(), secret);
        try {
            return IscsiInitiator.login(withSecret, InitiatorOptions.defaults());
        } finally {
            withSecret.clearSecret();
            url.clearSecret();
        }
    }
}
