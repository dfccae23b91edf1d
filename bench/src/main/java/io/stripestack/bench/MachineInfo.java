package io.stripestack.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** What the figures were measured on: CPU, cores, memory, load, JDK. Read once from /proc and the JVM. */
final class MachineInfo {
    private MachineInfo() {
    }

    static List<String> describe() {
        List<String> lines = new ArrayList<>();
        lines.add("cpu: " + firstValue(Path.of("/proc/cpuinfo"), "model name") + ", "
                + Runtime.getRuntime().availableProcessors() + " cores available to the JVM");
        lines.add("memory: " + firstValue(Path.of("/proc/meminfo"), "MemTotal") + "; load average (1/5/15 min): "
                + loadAverage());
        lines.add("jdk: " + System.getProperty("java.vm.name") + " " + System.getProperty("java.runtime.version")
                + " on " + System.getProperty("os.name") + " " + System.getProperty("os.version") + " "
                + System.getProperty("os.arch"));
        return lines;
    }

    /** The first three fields of /proc/loadavg, or "unknown". */
    static String loadAverage() {
        try {
            String[] fields = Files.readString(Path.of("/proc/loadavg")).trim().split("\\s+");
            return fields.length >= 3 ? fields[0] + " " + fields[1] + " " + fields[2] : "unknown";
        } catch (IOException e) {
            return "unknown";
        }
    }

    private static String firstValue(Path file, String key) {
        try {
            for (String line : Files.readAllLines(file)) {
                int colon = line.indexOf(':');
                if (colon > 0 && line.substring(0, colon).trim().equals(key)) {
                    return line.substring(colon + 1).trim();
                }
            }
        } catch (IOException e) {
            return "unknown (" + file + ": " + e.getMessage() + ")";
        }
        return "unknown";
    }
}
