package io.stripestack.targetserver.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.stripestack.targetserver.config.StripestackConfig.BackingConfig;
import io.stripestack.targetserver.config.StripestackConfig.LunConfig;
import io.stripestack.targetserver.config.StripestackConfig.ReadaheadConfig;
import io.stripestack.targetserver.config.StripestackConfig.TargetConfig;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * saveconfig killed at any instant (SIGKILL of a child JVM that saves in a loop) leaves the old file or the new one,
 * whole and loadable, never a truncated or half-written one. Half the kills wait for a save's temporary file to
 * appear and land between its creation and its rename; the file carries a large comment block so that this
 * window is wide. The others land anywhere in the loop.
 */
class SaveConfigCrashTest {
    private static final int KILLS = 12;
    private static final String EXTRA = "iqn.2026-11.io.example:extra";

    @TempDir
    Path dir;

    /**
     * The two states the child alternates: one target with one LUN, and three targets with twenty LUNs each. The
     * same from either file a kill leaves (a child started on the larger one would otherwise add its extra
     * targets twice, fail to save and never write a temporary file).
     */
    static List<List<TargetConfig>> states(StripestackConfig loaded) {
        List<TargetConfig> base = loaded.targets().stream().filter(t -> !t.iqn().startsWith(EXTRA)).toList();
        List<TargetConfig> many = new ArrayList<>(base);
        for (int t = 1; t <= 2; t++) {
            List<LunConfig> luns = new ArrayList<>();
            for (int l = 0; l < 20; l++) {
                luns.add(new LunConfig(l, new BackingConfig(null, null, 1 << 20, true), null,
                        new ReadaheadConfig(-1, false), l % 2 == 0, "S" + t + "-" + l));
            }
            many.add(new TargetConfig(EXTRA + t, "extra " + t, List.of(), null, null, luns));
        }
        return List.of(base, many);
    }

    @Test
    void aSaveKilledAtAnyInstantLeavesTheOldOrTheNewFileWhole() throws Exception {
        StringBuilder yaml = new StringBuilder("data_dir: " + dir.resolve("data") + "\n");
        String filler = "# " + "x".repeat(100) + "\n";
        yaml.append(filler.repeat(24_000)); // 2.4 MB of comments (the YAML parser takes up to 3 MiB), kept by every save
        yaml.append("targets:\n  - iqn: \"iqn.2026-11.io.example:base\"\n    luns:\n      - {lun: 0, ram_size: 1MiB}\n");
        Path file = dir.resolve("crash.yaml");
        Files.writeString(file, yaml);
        List<List<TargetConfig>> states = states(ConfigLoader.load(file));
        Path dataDir = ConfigLoader.load(file).dataDir();
        String base = Files.readString(file);
        List<String> expected = new ArrayList<>(List.of(base)); // killed before its first save completed
        for (List<TargetConfig> s : states) {
            expected.add(ConfigSaver.withTargets(base, TargetsYaml.render(s, dataDir)));
        }

        Random random = new Random(42);
        int leftovers = 0;
        for (int kill = 0; kill < KILLS; kill++) {
            Process child = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                    "-Xmx256m", "-cp", System.getProperty("java.class.path"), SaveConfigLoop.class.getName(), file.toString())
                    .redirectErrorStream(true).start();
            try (BufferedReader out = new BufferedReader(new InputStreamReader(child.getInputStream()))) {
                String line = out.readLine();
                assertEquals("saving", line, "the child started saving");
                if (kill % 2 == 0) {
                    awaitTemporaryFile(); // kill between the temporary file's creation and its rename
                } else {
                    Thread.sleep(50 + random.nextInt(400)); // kill wherever the loop is
                }
                child.destroyForcibly(); // SIGKILL
                assertTrue(child.waitFor(30, TimeUnit.SECONDS));
            }
            String text = Files.readString(file);
            if (!expected.contains(text)) {
                fail("after kill " + kill + " the file is no whole state (" + text.length() + " characters; the states have "
                        + expected.stream().map(String::length).toList() + ")");
            }
            ConfigLoader.load(file); // loadable, whichever it is
            try (Stream<Path> files = Files.list(dir)) {
                List<Path> temps = files.filter(p -> p.getFileName().toString().endsWith(".tmp")).toList();
                leftovers += temps.size();
                for (Path t : temps) {
                    Files.delete(t); // a killed save's temporary file: harmless, named apart from the file
                }
            }
        }
        assertTrue(leftovers > 0, "some kill landed between a save's temporary file and its rename");
    }

    private void awaitTemporaryFile() throws Exception {
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (System.nanoTime() < until) {
            try (Stream<Path> files = Files.list(dir)) {
                if (files.anyMatch(p -> p.getFileName().toString().endsWith(".tmp"))) {
                    return;
                }
            }
        }
        fail("the child never wrote a temporary file");
    }
}
