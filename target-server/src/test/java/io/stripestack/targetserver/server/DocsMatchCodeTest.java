package io.stripestack.targetserver.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stripestack.targetserver.config.ConfigLoader;
import io.stripestack.targetserver.config.StripestackConfig;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Statements in shipped text that describe what the code does, checked against the code's behaviour. */
class DocsMatchCodeTest {
    @TempDir
    Path workDir;

    /** The comment lines at the top of a file, before its first key. */
    private static String openingComment(String text) {
        StringBuilder comment = new StringBuilder();
        for (String line : text.split("\n")) {
            if (!line.startsWith("#")) {
                break;
            }
            comment.append(line).append('\n');
        }
        return comment.toString();
    }

    /** An example's opening comment calls its member files sparse exactly when it creates them sparse. */
    @Test
    void exampleCommentsSayWhetherMembersAreSparse() throws Exception {
        List<Path> files;
        try (Stream<Path> s = Files.list(Path.of("..", "conf"))) {
            files = s.filter(p -> p.toString().endsWith(".yaml")).sorted().toList();
        }
        assertTrue(files.contains(Path.of("..", "conf", "default.yaml")), files.toString());
        for (Path example : files) {
            String text = Files.readString(example);
            StripestackConfig config = ConfigLoader.parse(example.toString(), text, workDir);
            boolean createsSparse = config.arrays().values().stream()
                    .anyMatch(a -> a.createMemberSize() > 0 && a.createSparse());
            boolean saysSparse = openingComment(text).toLowerCase(Locale.ROOT).contains("sparse");
            assertEquals(createsSparse, saysSparse, example + ": its opening comment "
                    + (saysSparse ? "calls the member files sparse, but they are created allocated"
                    : "does not say the member files are created sparse") + ":\n" + openingComment(text));
        }
    }

    /**
     * ARCHITECTURE.md's read path: a claim of no user-space copy must not stand for encrypted LUNs, whose
     * SectorCipher stages every chunk through a heap array (in and out: two copies).
     */
    @Test
    void theReadPathStatesTheCopiesOfEncryptedReads() throws Exception {
        String architecture = Files.readString(Path.of("..", "docs", "ARCHITECTURE.md"));
        Matcher read = Pattern.compile("(?s)- Healthy read:(.*?)\n- ").matcher(architecture);
        assertTrue(read.find(), "no 'Healthy read' item in docs/ARCHITECTURE.md");
        String item = read.group(1).replaceAll("\\s+", " ");
        assertTrue(item.contains("With encryption there are two"), item);
        assertTrue(item.contains("heap"), item);
        assertTrue(item.contains("docs/crypto.md"), "the figures are cited: " + item);
    }
}
