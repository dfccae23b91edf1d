package io.stripestack.targetserver.config;

import io.stripestack.targetserver.config.StripestackConfig.TargetConfig;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * The child process of {@link SaveConfigCrashTest}: saves two states in turn into one configuration file, through
 * the same {@link ConfigSaver#save} that saveconfig runs, until it is killed. Prints "saving" once it started.
 */
public final class SaveConfigLoop {
    private SaveConfigLoop() {
    }

    public static void main(String[] args) throws Exception {
        Path file = Path.of(args[0]);
        StripestackConfig loaded = ConfigLoader.load(file);
        List<List<TargetConfig>> states = SaveConfigCrashTest.states(loaded);
        System.out.println("saving");
        System.out.flush();
        for (long i = 0; ; i++) {
            String base = Files.readString(file);
            ConfigSaver.save(file, base, new RunningState(loaded.server().portals(), List.copyOf(loaded.arrays().values()),
                    states.get((int) (i % 2))), loaded.dataDir(), Path.of(""));
        }
    }
}
