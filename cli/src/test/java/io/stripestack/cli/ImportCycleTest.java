package io.stripestack.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The project's main sources as a graph of imports: no file imports a file that imports it, so every pair of
 * classes has one direction of knowledge (a class two others share lives below both). The cli module sees every
 * module, so the check runs here over the whole source tree.
 */
class ImportCycleTest {
    private static final Pattern PACKAGE = Pattern.compile("^package\\s+([\\w.]+);", Pattern.MULTILINE);
    /** A project import, static or not: the package and the top-level class (a nested class counts as its outer one). */
    private static final Pattern IMPORT = Pattern.compile(
            "^import\\s+(?:static\\s+)?(io\\.stripestack(?:\\.[a-z]\\w*)*)\\.([A-Z]\\w*)[\\w.*]*;", Pattern.MULTILINE);

    @Test
    void noTwoMainSourceFilesImportEachOther() throws IOException {
        Map<String, Set<String>> imports = mainSourceImports(repositoryRoot());
        assertTrue(imports.size() > 200, "found only " + imports.size() + " main source files: wrong root?");
        List<String> pairs = new ArrayList<>();
        for (Map.Entry<String, Set<String>> file : imports.entrySet()) {
            for (String imported : file.getValue()) {
                Set<String> back = imports.get(imported);
                if (back != null && back.contains(file.getKey()) && file.getKey().compareTo(imported) < 0) {
                    pairs.add(file.getKey() + " <-> " + imported);
                }
            }
        }
        assertEquals(List.of(), pairs, "files that import each other");
    }

    @Test
    void theScanSeesAMutualImport() {
        Map<String, Set<String>> imports = new HashMap<>();
        record("package io.stripestack.a;\nimport io.stripestack.b.B;\nclass A {}", "A", imports);
        record("package io.stripestack.b;\nimport static io.stripestack.a.A.helper;\nclass B {}", "B", imports);
        assertEquals(Set.of("io.stripestack.b.B"), imports.get("io.stripestack.a.A"));
        assertEquals(Set.of("io.stripestack.a.A"), imports.get("io.stripestack.b.B"));
    }

    private static Map<String, Set<String>> mainSourceImports(Path root) throws IOException {
        Map<String, Set<String>> imports = new HashMap<>();
        try (Stream<Path> files = Files.walk(root)) {
            for (Path file : (Iterable<Path>) files::iterator) {
                String path = root.relativize(file).toString();
                if (path.endsWith(".java") && path.contains("/src/main/java/") && !path.startsWith(".")) {
                    String name = file.getFileName().toString();
                    record(Files.readString(file), name.substring(0, name.length() - ".java".length()), imports);
                }
            }
        }
        return imports;
    }

    private static void record(String source, String simpleName, Map<String, Set<String>> imports) {
        Matcher pkg = PACKAGE.matcher(source);
        if (!pkg.find()) {
            return;
        }
        Set<String> imported = new HashSet<>();
        for (Matcher m = IMPORT.matcher(source); m.find(); ) {
            imported.add(m.group(1) + "." + m.group(2));
        }
        imports.put(pkg.group(1) + "." + simpleName, imported);
    }

    /** The directory of the parent pom, above this module's working directory. */
    private static Path repositoryRoot() throws IOException {
        for (Path dir = Path.of("").toAbsolutePath(); dir != null; dir = dir.getParent()) {
            Path pom = dir.resolve("pom.xml");
            if (Files.exists(pom) && Files.readString(pom).contains("<module>cli</module>")) {
                return dir;
            }
        }
        throw new IOException("no parent pom.xml with <module>cli</module> above " + Path.of("").toAbsolutePath());
    }
}
