package io.stripestack.targetserver.config;

import io.stripestack.targetserver.config.StripestackConfig.TargetConfig;
import java.io.IOException;
import java.io.StringReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.Yaml;
import org.yaml.snakeyaml.nodes.MappingNode;
import org.yaml.snakeyaml.nodes.Node;
import org.yaml.snakeyaml.nodes.NodeTuple;
import org.yaml.snakeyaml.nodes.ScalarNode;

/**
 * {@code saveconfig}: writes the running targets into a configuration file. Only the top-level {@code targets:}
 * section is written anew; every other line of the file (data_dir, server, arrays, their comments and layout)
 * is kept as it is, and comments inside the targets section are not (comment lines at column 0 at the end of
 * the section stay: they usually introduce the next top-level key). The result is parsed as the server would
 * load it before anything is written, so a state that would not load back is refused and the file left alone;
 * then it replaces the file atomically ({@link AtomicFile}). Stateless.
 */
public final class ConfigSaver {
    /** What the operator is told about comments, in the answer and in docs/operations.md. */
    public static final String COMMENTS_NOTE = "comments and layout outside the targets: section are kept;"
            + " the targets: section is written anew, without comments";

    private ConfigSaver() {
    }

    /**
     * @param baseText the configuration text whose other sections are kept
     * @param file     where to write (named in errors)
     * @param workDir  where a relative data_dir resolves, as when the server loads the file
     * @return how many targets the written file holds
     */
    public static int save(Path file, String baseText, List<TargetConfig> targets, Path dataDir,
            Path workDir) throws IOException {
        String text = withTargets(baseText, TargetsYaml.render(targets, dataDir));
        StripestackConfig reloaded;
        try {
            reloaded = ConfigLoader.parse(file.toString(), text, workDir);
        } catch (ConfigException e) {
            throw new IOException("not saved: the running state would not load back (" + e.getMessage()
                    + "); " + file + " is unchanged", e);
        }
        for (TargetConfig t : reloaded.targets()) { // the check read the secret files: zero what it read
            for (StripestackConfig.ChapConfig c : new StripestackConfig.ChapConfig[] {t.chap(), t.mutualChap()}) {
                if (c != null) {
                    java.util.Arrays.fill(c.secret(), '\0');
                }
            }
        }
        AtomicFile.write(file, text.getBytes(StandardCharsets.UTF_8));
        return reloaded.targets().size();
    }

    /** {@code text} with its top-level targets section replaced by {@code section} (appended if it has none). */
    static String withTargets(String text, String section) throws IOException {
        Node root;
        try {
            root = new Yaml(new LoaderOptions()).compose(new StringReader(text));
        } catch (RuntimeException e) {
            throw new IOException("not saved: the configuration file is not valid YAML now (" + e.getMessage() + ")", e);
        }
        String[] lines = text.split("\n", -1);
        if (!(root instanceof MappingNode mapping)) {
            return text + (text.isEmpty() || text.endsWith("\n") ? "" : "\n") + section;
        }
        List<NodeTuple> entries = mapping.getValue();
        for (int i = 0; i < entries.size(); i++) {
            if (entries.get(i).getKeyNode() instanceof ScalarNode key && key.getValue().equals("targets")) {
                int first = key.getStartMark().getLine();
                int end = i + 1 < entries.size() ? entries.get(i + 1).getKeyNode().getStartMark().getLine() : lines.length;
                while (end > first + 1 && (lines[end - 1].startsWith("#") || lines[end - 1].isBlank())) {
                    end--;
                }
                StringBuilder out = new StringBuilder();
                for (int l = 0; l < first; l++) {
                    out.append(lines[l]).append('\n');
                }
                out.append(section);
                for (int l = end; l < lines.length; l++) {
                    out.append(lines[l]);
                    if (l < lines.length - 1) {
                        out.append('\n');
                    }
                }
                return out.toString();
            }
        }
        return text + (text.isEmpty() || text.endsWith("\n") ? "" : "\n") + section;
    }
}
