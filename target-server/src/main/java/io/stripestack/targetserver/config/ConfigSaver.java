package io.stripestack.targetserver.config;

import io.stripestack.blockdev.Sizes;
import io.stripestack.targetserver.config.StripestackConfig.ArrayConfig;
import io.stripestack.targetserver.config.StripestackConfig.Portal;
import io.stripestack.targetserver.config.StripestackConfig.RemoteMemberConfig;
import io.stripestack.targetserver.config.StripestackConfig.TargetConfig;
import java.io.IOException;
import java.io.StringReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.yaml.snakeyaml.DumperOptions;
import org.yaml.snakeyaml.error.Mark;
import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.Yaml;
import org.yaml.snakeyaml.nodes.MappingNode;
import org.yaml.snakeyaml.nodes.Node;
import org.yaml.snakeyaml.nodes.NodeTuple;
import org.yaml.snakeyaml.nodes.ScalarNode;
import org.yaml.snakeyaml.nodes.SequenceNode;

/**
 * {@code saveconfig}: writes the running portals, arrays and targets into a configuration file. {@code
 * server.portals} is rewritten in flow style ({@code ["HOST:PORT", ...]}) when the running portals differ from
 * the file's, its comments and the rest of the server section kept. The top-level {@code
 * targets:} section is written anew; comments inside it are not kept (comment lines at column 0 at the end of
 * the section stay: they usually introduce the next top-level key). In the {@code arrays:} section an entry of an
 * array that no longer runs is dropped whole, one for an array created at run time is added after the others,
 * and every other entry is kept as written, comments included ({@link ArraysYaml}), except that its {@code
 * members}, {@code spares}, {@code chunk} and {@code stripe_cache_size} are rewritten where the running array
 * differs (a member replaced, the array grown, a setting changed: {@link #withArrayShape}); an {@code arrays:} section
 * in flow style ({@code {...}}) is written anew when it changes. Every other line of the file (data_dir, server,
 * their comments and layout) is kept as it is. The result is parsed as the server would
 * load it before anything is written, so a state that would not load back is refused and the file left alone;
 * then it replaces the file atomically ({@link AtomicFile}). Stateless.
 */
public final class ConfigSaver {
    /** What the operator is told about comments, in the answer and in docs/operations.md. */
    public static final String COMMENTS_NOTE = "comments and layout outside the targets: section are kept, and so"
            + " are the entries of arrays still running, their member lists made true; the targets: section is"
            + " written anew, without comments";

    private ConfigSaver() {
    }

    /**
     * @param baseText the configuration text whose other sections are kept
     * @param file     where to write (named in errors)
     * @param workDir  where a relative data_dir resolves, as when the server loads the file
     * @return how many targets the written file holds
     */
    public static int save(Path file, String baseText, RunningState state, Path dataDir, Path workDir)
            throws IOException {
        List<ArrayConfig> arrays = state.arrays();
        String text;
        try {
            String withArrays = withArrays(withPortals(baseText, state.portals()), arrays, dataDir);
            for (ArrayConfig a : arrays) { // an entry kept as written lists the array as it runs now
                String shaped = withArrayShape(withArrays, a, dataDir);
                withArrays = shaped == null ? withArrays : shaped;
            }
            text = withTargets(withArrays, TargetsYaml.render(state.targets(), dataDir));
        } catch (IllegalArgumentException e) {
            throw new IOException("not saved: " + e.getMessage() + "; " + file + " is unchanged", e);
        }
        StripestackConfig reloaded;
        try {
            reloaded = ConfigLoader.parse(file.toString(), text, workDir);
        } catch (ConfigException e) {
            throw new IOException("not saved: the running state would not load back (" + e.getMessage()
                    + "); " + file + " is unchanged", e);
        }
        if (!reloaded.arrays().keySet().equals(names(arrays))) {
            throw new IOException("not saved: the file would define the arrays " + reloaded.arrays().keySet()
                    + " and the server runs " + names(arrays) + " (is the arrays: section written in an unusual way?); "
                    + file + " is unchanged");
        }
        if (!reloaded.server().portals().equals(state.portals())) {
            throw new IOException("not saved: the file would list the portals " + reloaded.server().portals()
                    + " and the server runs " + state.portals() + "; " + file + " is unchanged");
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

    /**
     * {@code text} with {@code server.portals} set to {@code running} (in flow style, in place of the list the
     * file has, or added as the server section's first key); the text itself when the file lists those portals.
     */
    static String withPortals(String text, List<Portal> running) throws IOException {
        Node root = compose(text);
        String[] lines = text.split("\n", -1);
        String list = portalList(running);
        if (!(root instanceof MappingNode mapping)) {
            return text; // withArrays and withTargets make a file of it; an absent list is the default
        }
        List<NodeTuple> entries = mapping.getValue();
        int at = indexOf(entries, "server");
        if (at < 0) {
            if (running.equals(List.of(DEFAULT_PORTAL))) {
                return text;
            }
            int targets = indexOf(entries, "targets");
            int line = targets < 0 ? lines.length : entries.get(targets).getKeyNode().getStartMark().getLine();
            return splice(lines, line, line, "server:\n  portals: " + list + "\n");
        }
        Node server = entries.get(at).getValueNode();
        if (!(server instanceof MappingNode serverMap) || serverMap.getValue().isEmpty()) {
            return splice(lines, entries.get(at).getKeyNode().getStartMark().getLine(), sectionEnd(lines, entries, at),
                    "server:\n  portals: " + list + "\n");
        }
        int portalsAt = indexOf(serverMap.getValue(), "portals");
        if (portalsAt < 0) {
            if (running.equals(List.of(DEFAULT_PORTAL))) {
                return text;
            }
            if (serverMap.getFlowStyle() == DumperOptions.FlowStyle.FLOW) {
                int open = offset(lines, serverMap.getStartMark()) + 1;
                return text.substring(0, open) + "portals: " + list + ", " + text.substring(open);
            }
            Mark first = serverMap.getValue().get(0).getKeyNode().getStartMark();
            return splice(lines, first.getLine(), first.getLine(), " ".repeat(first.getColumn()) + "portals: " + list + "\n");
        }
        Node value = serverMap.getValue().get(portalsAt).getValueNode();
        List<Portal> inFile = new ArrayList<>();
        if (value instanceof SequenceNode seq) {
            for (Node item : seq.getValue()) {
                if (!(item instanceof ScalarNode scalar)) {
                    return text; // the loader refuses it; the check after rendering says so
                }
                inFile.add(Portal.parse(scalar.getValue()));
            }
        }
        if (inFile.equals(running)) {
            return text;
        }
        Mark end = value instanceof SequenceNode seq && seq.getFlowStyle() == DumperOptions.FlowStyle.BLOCK
                && !seq.getValue().isEmpty() ? seq.getValue().get(seq.getValue().size() - 1).getEndMark() : value.getEndMark();
        return text.substring(0, offset(lines, value.getStartMark())) + list + text.substring(offset(lines, end));
    }

    private static final Portal DEFAULT_PORTAL = new Portal("127.0.0.1", ServerDefaults.PORT);

    private static String portalList(List<Portal> portals) {
        StringBuilder y = new StringBuilder("[");
        for (int i = 0; i < portals.size(); i++) {
            y.append(i == 0 ? "" : ", ").append(TargetsYaml.quote(portals.get(i).toString()));
        }
        return y.append(']').toString();
    }

    /** The character offset of {@code m} in the text split into {@code lines} (columns count code points). */
    private static int offset(String[] lines, Mark m) {
        int offset = 0;
        for (int l = 0; l < m.getLine(); l++) {
            offset += lines[l].length() + 1;
        }
        return offset + lines[m.getLine()].offsetByCodePoints(0, m.getColumn());
    }

    private static Set<String> names(List<ArrayConfig> arrays) {
        Set<String> names = new TreeSet<>();
        arrays.forEach(a -> names.add(a.name()));
        return names;
    }

    /**
     * {@code text} with the entries of arrays not in {@code running} taken out of its top-level arrays section and
     * the entries of those it lacks added; the text itself when the names match.
     */
    static String withArrays(String text, List<ArrayConfig> running, Path dataDir) throws IOException {
        Node root = compose(text);
        String[] lines = text.split("\n", -1);
        Map<String, ArrayConfig> wanted = new LinkedHashMap<>();
        running.forEach(a -> wanted.put(a.name(), a));
        if (!(root instanceof MappingNode mapping)) {
            return wanted.isEmpty() ? text : text + (text.isEmpty() || text.endsWith("\n") ? "" : "\n")
                    + section(running, dataDir);
        }
        List<NodeTuple> entries = mapping.getValue();
        int at = indexOf(entries, "arrays");
        if (at < 0) {
            if (wanted.isEmpty()) {
                return text;
            }
            int targets = indexOf(entries, "targets");
            int line = targets < 0 ? lines.length : entries.get(targets).getKeyNode().getStartMark().getLine();
            return splice(lines, line, line, section(running, dataDir));
        }
        int first = entries.get(at).getKeyNode().getStartMark().getLine();
        int end = sectionEnd(lines, entries, at);
        Node value = entries.get(at).getValueNode();
        if (!(value instanceof MappingNode arraysNode) || arraysNode.getFlowStyle() == DumperOptions.FlowStyle.FLOW
                || arraysNode.getValue().isEmpty()) {
            Set<String> inFile = new TreeSet<>();
            if (value instanceof MappingNode m) {
                m.getValue().forEach(t -> inFile.add(((ScalarNode) t.getKeyNode()).getValue()));
            }
            return inFile.equals(wanted.keySet()) ? text : splice(lines, first, end, section(running, dataDir));
        }
        List<NodeTuple> arrayEntries = arraysNode.getValue();
        StringBuilder kept = new StringBuilder();
        for (int l = first; l < arrayEntries.get(0).getKeyNode().getStartMark().getLine(); l++) {
            kept.append(lines[l]).append('\n'); // "arrays:" and the comments before its first entry
        }
        boolean changed = false;
        int entriesLeft = 0;
        int indent = arrayEntries.get(0).getKeyNode().getStartMark().getColumn();
        for (int i = 0; i < arrayEntries.size(); i++) {
            String name = ((ScalarNode) arrayEntries.get(i).getKeyNode()).getValue();
            int from = arrayEntries.get(i).getKeyNode().getStartMark().getLine();
            int to = i + 1 < arrayEntries.size() ? arrayEntries.get(i + 1).getKeyNode().getStartMark().getLine() : end;
            if (wanted.remove(name) == null) {
                changed = true;
                continue;
            }
            for (int l = from; l < to; l++) {
                kept.append(lines[l]).append('\n');
            }
            entriesLeft++;
        }
        for (ArrayConfig added : wanted.values()) {
            kept.append(ArraysYaml.entry(added, indent, dataDir));
            changed = true;
            entriesLeft++;
        }
        if (!changed) {
            return text;
        }
        return splice(lines, first, end, entriesLeft == 0 ? "arrays: {}\n" : kept.toString());
    }

    /**
     * After a reshape: rewrites the member and spare lists of array {@code a}'s entry in {@code file} (and its
     * {@code chunk} when the entry states one, its {@code stripe_cache_size} when set; see {@link #withArrayShape}),
     * every other line kept, comments included, checked to load back
     * with those files before it replaces the file atomically. One writer at a time with {@link #save} callers
     * that hold {@link #FILE_LOCK}.
     *
     * @return false, changing nothing, when the file has no entry for the array (created at run time and not saved)
     * @throws IOException saying why the file was left unchanged (an entry written in a form this does not edit,
     *                     a result that would not load)
     */
    public static boolean saveArrayShape(Path file, ArrayConfig a, Path dataDir, Path workDir) throws IOException {
        synchronized (FILE_LOCK) {
            String text = java.nio.file.Files.readString(file, StandardCharsets.UTF_8);
            String edited;
            try {
                edited = withArrayShape(text, a, dataDir);
            } catch (IllegalArgumentException e) {
                throw new IOException("not saved: " + e.getMessage() + "; " + file + " is unchanged", e);
            }
            if (edited == null) {
                return false;
            }
            if (edited.equals(text)) {
                return true;   // the entry lists the array as it is already
            }
            ArrayConfig reloaded;
            try {
                reloaded = ConfigLoader.parse(file.toString(), edited, workDir).arrays().get(a.name());
            } catch (ConfigException e) {
                throw new IOException("not saved: the edited file would not load (" + e.getMessage() + "); " + file
                        + " is unchanged", e);
            }
            if (reloaded == null || !absolute(reloaded.members()).equals(absolute(a.members()))
                    || !absolute(reloaded.spares()).equals(absolute(a.spares()))
                    || !urls(reloaded.remote().members()).equals(urls(a.remote().members()))
                    || !urls(reloaded.remote().spares()).equals(urls(a.remote().spares()))) {
                throw new IOException("not saved: the edited entry of " + a.name() + " would not list its members "
                        + a.members() + " and spares " + a.spares() + "; " + file + " is unchanged");
            }
            AtomicFile.write(file, edited.getBytes(StandardCharsets.UTF_8));
            return true;
        }
    }

    /** Held by whoever reads the configuration file to write it back, so two writers never lose each other's edit. */
    public static final Object FILE_LOCK = new Object();

    private static List<String> urls(List<RemoteMemberConfig> remotes) {
        return remotes.stream().map(r -> r.url().toString()).toList();
    }

    private static List<Path> absolute(List<Path> files) {
        return files.stream().map(f -> f.toAbsolutePath().normalize()).toList();
    }

    /**
     * {@code text} with the values of {@code members}, {@code spares} (added after members when missing), {@code
     * chunk} (when present) and {@code stripe_cache_size} (added when the operator set one) of {@code a}'s entry in
     * the top-level arrays section replaced where they differ from {@code a} (files compared as paths under {@code
     * dataDir}, remote members by URL, in any order); the text itself when none differs; null when the section has
     * no such entry.
     */
    static String withArrayShape(String text, ArrayConfig a, Path dataDir) throws IOException {
        Node root = compose(text);
        if (!(root instanceof MappingNode mapping)) {
            return null;
        }
        int at = indexOf(mapping.getValue(), "arrays");
        if (at < 0 || !(mapping.getValue().get(at).getValueNode() instanceof MappingNode arraysNode)) {
            return null;
        }
        int entryAt = indexOf(arraysNode.getValue(), a.name());
        if (entryAt < 0) {
            return null;
        }
        if (!(arraysNode.getValue().get(entryAt).getValueNode() instanceof MappingNode entry)) {
            throw new IllegalArgumentException("the entry of array " + a.name() + " is not a mapping");
        }
        String[] lines = text.split("\n", -1);
        List<NodeTuple> keys = entry.getValue();
        int membersAt = indexOf(keys, "members");
        if (membersAt < 0) {
            throw new IllegalArgumentException("the entry of array " + a.name() + " has no members: key");
        }
        int sparesAt = indexOf(keys, "spares");
        int chunkAt = indexOf(keys, "chunk");
        int cacheAt = indexOf(keys, "stripe_cache_size");
        boolean sameMembers = listsAs(keys.get(membersAt).getValueNode(), a.members(), a.remote().members(), dataDir);
        boolean sameSpares = sparesAt >= 0
                ? listsAs(keys.get(sparesAt).getValueNode(), a.spares(), a.remote().spares(), dataDir)
                : a.spares().isEmpty() && a.remote().spares().isEmpty();
        boolean sameChunk = chunkAt < 0 || scalar(keys.get(chunkAt).getValueNode()).equals(Sizes.format(a.chunkBytes()))
                || sizeOf(keys.get(chunkAt).getValueNode()) == a.chunkBytes();
        boolean sameCache = a.stripeCacheSize() <= 0
                || cacheAt >= 0 && scalar(keys.get(cacheAt).getValueNode()).equals(Integer.toString(a.stripeCacheSize()));
        if (sameMembers && sameSpares && sameChunk && sameCache) {
            return text;
        }
        List<Edit> edits = new ArrayList<>();
        int[] membersSpan = valueSpan(lines, keys.get(membersAt).getValueNode());
        String indent = " ".repeat(keys.get(membersAt).getKeyNode().getStartMark().getColumn());
        boolean flow = entry.getFlowStyle() == DumperOptions.FlowStyle.FLOW;
        if (!sameMembers) {
            edits.add(new Edit(membersSpan[0], membersSpan[1],
                    ArraysYaml.memberList(a.members(), a.remote().members(), dataDir)));
        }
        String spares = ArraysYaml.memberList(a.spares(), a.remote().spares(), dataDir);
        if (!sameSpares && sparesAt >= 0) {
            int[] span = valueSpan(lines, keys.get(sparesAt).getValueNode());
            edits.add(new Edit(span[0], span[1], spares));
        } else if (!sameSpares) {
            edits.add(new Edit(membersSpan[1], membersSpan[1], flow ? ", spares: " + spares
                    : "\n" + indent + "spares: " + spares));
        }
        if (!sameChunk) {
            int[] span = valueSpan(lines, keys.get(chunkAt).getValueNode());
            edits.add(new Edit(span[0], span[1], Sizes.format(a.chunkBytes())));
        }
        if (!sameCache && cacheAt >= 0) {
            int[] span = valueSpan(lines, keys.get(cacheAt).getValueNode());
            edits.add(new Edit(span[0], span[1], Integer.toString(a.stripeCacheSize())));
        } else if (!sameCache) {
            edits.add(new Edit(membersSpan[1], membersSpan[1], flow ? ", stripe_cache_size: " + a.stripeCacheSize()
                    : "\n" + indent + "stripe_cache_size: " + a.stripeCacheSize()));
        }
        // from the end of the text backwards, so the offsets of the edits before stay right (two insertions at
        // one place keep their order: the later one in the list goes in first, and ends up second)
        edits.sort((x, y) -> Integer.compare(y.from(), x.from()));
        StringBuilder out = new StringBuilder(text);
        for (Edit edit : edits) {
            out.replace(edit.from(), edit.to(), edit.text());
        }
        return out.toString();
    }

    /** Whether a members or spares value names these files and remote LUNs (in any order). */
    private static boolean listsAs(Node value, List<Path> files, List<RemoteMemberConfig> remotes, Path dataDir) {
        MemberEntries.Parsed parsed;
        try {
            parsed = MemberEntries.parse(new YamlNode("", "", value), dataDir);
        } catch (ConfigException e) {
            return false;   // written anew, and checked to load back before it is saved
        }
        Set<String> remoteUrls = new TreeSet<>();
        parsed.remotes().forEach(r -> remoteUrls.add(r.url().toString()));
        Set<String> wantedUrls = new TreeSet<>();
        remotes.forEach(r -> wantedUrls.add(r.url().toString()));
        return new java.util.HashSet<>(absolute(parsed.files())).equals(new java.util.HashSet<>(absolute(files)))
                && parsed.files().size() == files.size() && remoteUrls.equals(wantedUrls)
                && parsed.remotes().size() == remotes.size();
    }

    private static String scalar(Node value) {
        return value instanceof ScalarNode s ? s.getValue().trim() : "";
    }

    private static long sizeOf(Node value) {
        try {
            return Sizes.parse(scalar(value));
        } catch (IllegalArgumentException e) {
            return -1;
        }
    }

    /** Characters {@code [from, to)} of a text replaced by {@code text}. */
    private record Edit(int from, int to, String text) {
    }

    /** Where a value stands in the text: a block list ends with its last item, anything else with its node. */
    private static int[] valueSpan(String[] lines, Node value) {
        Mark end = value instanceof SequenceNode seq && seq.getFlowStyle() == DumperOptions.FlowStyle.BLOCK
                && !seq.getValue().isEmpty() ? seq.getValue().get(seq.getValue().size() - 1).getEndMark()
                : value.getEndMark();
        return new int[] {offset(lines, value.getStartMark()), offset(lines, end)};
    }

    private static String section(List<ArrayConfig> arrays, Path dataDir) {
        if (arrays.isEmpty()) {
            return "arrays: {}\n";
        }
        StringBuilder y = new StringBuilder("arrays:\n");
        arrays.forEach(a -> y.append(ArraysYaml.entry(a, 2, dataDir)));
        return y.toString();
    }

    /** Lines {@code [0, from)}, then {@code middle}, then lines {@code [to, end)}. */
    private static String splice(String[] lines, int from, int to, String middle) {
        StringBuilder out = new StringBuilder();
        for (int l = 0; l < from; l++) {
            out.append(lines[l]).append('\n');
        }
        out.append(middle);
        for (int l = to; l < lines.length; l++) {
            out.append(lines[l]);
            if (l < lines.length - 1) {
                out.append('\n');
            }
        }
        return out.toString();
    }

    private static int indexOf(List<NodeTuple> entries, String key) {
        for (int i = 0; i < entries.size(); i++) {
            if (entries.get(i).getKeyNode() instanceof ScalarNode k && k.getValue().equals(key)) {
                return i;
            }
        }
        return -1;
    }

    /**
     * Where the top-level section {@code i} ends: the next key's line, or the end of the file, less the comment
     * lines at column 0 and blank lines before it (they usually introduce what follows).
     */
    private static int sectionEnd(String[] lines, List<NodeTuple> entries, int i) {
        int first = entries.get(i).getKeyNode().getStartMark().getLine();
        int end = i + 1 < entries.size() ? entries.get(i + 1).getKeyNode().getStartMark().getLine() : lines.length;
        while (end > first + 1 && (lines[end - 1].startsWith("#") || lines[end - 1].isBlank())) {
            end--;
        }
        return end;
    }

    private static Node compose(String text) throws IOException {
        try {
            return new Yaml(new LoaderOptions()).compose(new StringReader(text));
        } catch (RuntimeException e) {
            throw new IOException("not saved: the configuration file is not valid YAML now (" + e.getMessage() + ")", e);
        }
    }

    /** {@code text} with its top-level targets section replaced by {@code section} (appended if it has none). */
    static String withTargets(String text, String section) throws IOException {
        Node root = compose(text);
        String[] lines = text.split("\n", -1);
        if (!(root instanceof MappingNode mapping)) {
            return text + (text.isEmpty() || text.endsWith("\n") ? "" : "\n") + section;
        }
        List<NodeTuple> entries = mapping.getValue();
        int i = indexOf(entries, "targets");
        if (i >= 0) {
            return splice(lines, entries.get(i).getKeyNode().getStartMark().getLine(), sectionEnd(lines, entries, i),
                    section);
        }
        return text + (text.isEmpty() || text.endsWith("\n") ? "" : "\n") + section;
    }
}
