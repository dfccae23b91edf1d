package io.stripestack.targetserver.server;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

/**
 * Which files the administration may use as data (a LUN's file, an array's member or spare): a path resolves
 * under the data directory, and is refused, naming it and why, when it lies outside that directory (unless the
 * request says {@value #OUTSIDE_FLAG}), in one of the system's directories ({@code /etc}, {@code /boot}, {@code
 * /proc}, {@code /sys}: never), when it is one of the server's own secrets or its configuration file or admin
 * socket, or when it exists and is neither a regular file nor a block device. The same check keeps the
 * server's data files and key files from being taken as a CHAP secret.
 *
 * <p>Concurrency: stateless apart from what it is given; the secrets are asked for at each check (the running
 * targets and arrays name them), from the admin worker.
 */
final class DataFiles {
    /** Directories of the system's own files (configuration, secrets, kernel interfaces): never data. */
    private static final List<Path> SYSTEM_DIRS = List.of(Path.of("/etc"), Path.of("/boot"),
            Path.of("/proc"), Path.of("/sys"));

    /** The option that lets one request use a file outside the data directory. */
    static final String OUTSIDE_FLAG = "--outside-data-dir";

    private final Path dataDir;
    private final Path configFile;
    private final Path adminSocket;
    /** The LUNs' key and passphrase files now, each with what it is ("the key file of iqn.../lun0"). */
    private final Supplier<Map<Path, String>> keyFiles;
    /** The CHAP secret files now (targets' and remote members'), each with what it is. */
    private final Supplier<Map<Path, String>> chapFiles;

    DataFiles(Path dataDir, Path configFile, Path adminSocket, Supplier<Map<Path, String>> keyFiles,
            Supplier<Map<Path, String>> chapFiles) {
        this.dataDir = dataDir.toAbsolutePath().normalize();
        this.configFile = configFile == null ? null : configFile.toAbsolutePath().normalize();
        this.adminSocket = adminSocket.toAbsolutePath().normalize();
        this.keyFiles = keyFiles;
        this.chapFiles = chapFiles;
    }

    Path dataDir() {
        return dataDir;
    }

    /**
     * {@code given} resolved under the data directory, for the use {@code purpose} names ("back LUN 0 of iqn...",
     * "be added to md0"); refused as the class says.
     */
    Path dataFile(String given, boolean outsideAllowed, String purpose) {
        Path file = dataDir.resolve(given).toAbsolutePath().normalize();
        if (!outsideAllowed && !inside(file)) {
            throw new IllegalArgumentException(file + " is outside the data directory " + dataDir + " and cannot "
                    + purpose + "; give a path under it, or add " + OUTSIDE_FLAG + " to use that file anyway;"
                    + " nothing changed");
        }
        for (Path system : SYSTEM_DIRS) {
            if (file.startsWith(system) || realPathStartsWith(file, system)) {
                throw new IllegalArgumentException(file + " lies in " + system + ", among the system's own files, and"
                        + " cannot " + purpose + "; nothing changed");
            }
        }
        refuseOwnFile(file, purpose);
        if (Files.exists(file, LinkOption.NOFOLLOW_LINKS) && !isDataFile(file)) {
            throw new IllegalArgumentException(file + " is not a regular file or a block device and cannot "
                    + purpose + "; nothing changed");
        }
        return file;
    }

    /** Refuses the configuration file, the admin socket and every secret file of the server for {@code purpose}. */
    void refuseOwnFile(Path file, String purpose) {
        refuseAsSecret(file, purpose);
        refuseListed(file, chapFiles.get(), purpose);
    }

    /**
     * Refuses the configuration file, the admin socket and the LUNs' key and passphrase files as a CHAP secret
     * (a raw key taken as a secret would be sent, hashed, to every initiator that logs in).
     */
    void refuseAsSecret(Path file, String purpose) {
        Path f = file.toAbsolutePath().normalize();
        if (configFile != null && sameFile(f, configFile)) {
            throw new IllegalArgumentException(f + " is the server's configuration file and cannot " + purpose
                    + "; nothing changed");
        }
        if (sameFile(f, adminSocket)) {
            throw new IllegalArgumentException(f + " is the server's admin socket and cannot " + purpose
                    + "; nothing changed");
        }
        refuseListed(f, keyFiles.get(), purpose);
    }

    private static void refuseListed(Path file, Map<Path, String> listed, String purpose) {
        Path f = file.toAbsolutePath().normalize();
        for (Map.Entry<Path, String> e : listed.entrySet()) {
            if (sameFile(f, e.getKey())) {
                throw new IllegalArgumentException(f + " is " + e.getValue() + " and cannot " + purpose
                        + "; nothing changed");
            }
        }
    }

    /** Under the data directory, by its path and, where it or a directory above it exists, by where links lead. */
    private boolean inside(Path file) {
        if (!file.startsWith(dataDir)) {
            return false;
        }
        Path existing = file;
        while (existing != null && !Files.exists(existing)) {
            existing = existing.getParent();
        }
        if (existing == null || !existing.startsWith(dataDir)) {
            return true;   // the data directory itself does not exist yet: no link below it to follow
        }
        try {
            return existing.toRealPath().startsWith(dataDir.toRealPath());
        } catch (IOException e) {
            return false;
        }
    }

    private static boolean realPathStartsWith(Path file, Path dir) {
        try {
            return Files.exists(file) && file.toRealPath().startsWith(dir);
        } catch (IOException e) {
            return false;
        }
    }

    /** A regular file or a block device (following links): what a member or a LUN can stand on. */
    private static boolean isDataFile(Path file) {
        if (Files.isRegularFile(file)) {
            return true;
        }
        try {
            int mode = (Integer) Files.getAttribute(file, "unix:mode");
            return (mode & 0170000) == 0060000;
        } catch (IOException | UnsupportedOperationException | IllegalArgumentException e) {
            return false;
        }
    }

    static boolean sameFile(Path a, Path b) {
        Path na = a.toAbsolutePath().normalize();
        Path nb = b.toAbsolutePath().normalize();
        if (na.equals(nb)) {
            return true;
        }
        try {
            return Files.exists(na) && Files.exists(nb) && Files.isSameFile(na, nb);
        } catch (IOException e) {
            return false;
        }
    }
}
