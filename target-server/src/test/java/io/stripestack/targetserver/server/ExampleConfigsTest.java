package io.stripestack.targetserver.server;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stripestack.targetserver.config.ConfigLoader;
import io.stripestack.targetserver.config.StripestackConfig;
import io.stripestack.targetserver.testing.ExternalTools;
import io.stripestack.targetserver.testing.ExternalTools.Result;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Every configuration shipped in conf/ runs as it is: it parses, the server starts on it (in a scratch
 * directory, on a free port instead of 3260), and libiscsi's iscsi-readcapacity16 reads every LUN's
 * capacity through a real login (with the target's CHAP credentials where it has them). The libiscsi commands
 * its header comment shows ({@code #   iscsi-...} lines) run as written too, on that port.
 */
class ExampleConfigsTest {
    @TempDir
    Path workDir;

    static Stream<Path> examples() throws Exception {
        List<Path> files;
        try (Stream<Path> s = Files.list(Path.of("..", "conf"))) {
            files = s.filter(p -> p.toString().endsWith(".yaml")).sorted().toList();
        }
        assertTrue(files.size() >= 4, "conf/ holds the examples: " + files);
        return files.stream();
    }

    @ParameterizedTest
    @MethodSource("examples")
    void runsAsItIs(Path example) throws Exception {
        ExternalTools.requireTool("iscsi-readcapacity16");
        String text = Files.readString(example).replace("127.0.0.1:3260", "127.0.0.1:0")
                .replaceAll("(?m)^\\s*advertise:.*$", "");
        StripestackConfig config = ConfigLoader.parse(example.toString(), text, workDir);
        try (StripestackServer server = StripestackServer.start(config)) {
            int port = server.boundAddresses().get(0).getPort();
            for (var target : config.targets()) {
                String auth = target.chap() == null ? ""
                        : target.chap().user() + "%" + new String(target.chap().secret()) + "@";
                if (target.mutualChap() != null) {
                    continue; // iscsi-ls cannot do mutual CHAP; the iSCSI tests cover it
                }
                for (var lun : target.luns()) {
                    Result rc = ExternalTools.run("iscsi-readcapacity16",
                            "iscsi://" + auth + "127.0.0.1:" + port + "/" + target.iqn() + "/" + lun.lun())
                            .requireSuccess("iscsi-readcapacity16 on " + example + " LUN " + lun.lun());
                    assertTrue(rc.output().contains("Total size:"), rc.output());
                }
            }
            Matcher shown = Pattern.compile("(?m)^#   ((?:LIBISCSI_\\S+ )*iscsi-.*)$")
                    .matcher(Files.readString(example));
            while (shown.find()) {
                String command = shown.group(1).replace("127.0.0.1:3260", "127.0.0.1:" + port);
                ExternalTools.run(60, List.of("bash", "-c", command)).requireSuccess(example + ": " + shown.group(1));
            }
        }
        assertFalse(Files.exists(config.server().adminSocket()), "admin socket removed at stop");
    }
}
