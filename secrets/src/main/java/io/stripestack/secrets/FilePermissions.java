package io.stripestack.secrets;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFileAttributeView;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Collections;
import java.util.EnumSet;
import java.util.Set;

/**
 * The one place that judges file permissions: secret files (keys, passphrases, CHAP secrets) must be
 * readable by their owner only, and data files (members, spares, LUN files) are created owner-only
 * and named when others may read or write them. On a file system without POSIX permissions there is
 * nothing to judge and every check passes.
 */
public final class FilePermissions {
    /** rw------- (0600): the mode of every file the server creates, data or secret. */
    public static final Set<PosixFilePermission> OWNER_READ_WRITE = Collections.unmodifiableSet(
            EnumSet.of(PosixFilePermission.OWNER_READ, PosixFilePermission.OWNER_WRITE));
    private static final Set<PosixFilePermission> GROUP_AND_OTHERS = EnumSet.of(PosixFilePermission.GROUP_READ,
            PosixFilePermission.GROUP_WRITE, PosixFilePermission.GROUP_EXECUTE, PosixFilePermission.OTHERS_READ,
            PosixFilePermission.OTHERS_WRITE, PosixFilePermission.OTHERS_EXECUTE);
    private static final Set<PosixFilePermission> GROUP_AND_OTHERS_READ = EnumSet.of(PosixFilePermission.GROUP_READ,
            PosixFilePermission.OTHERS_READ);

    private FilePermissions() {
    }

    /**
     * Refuses a secret file that group or others can read, naming it, what a reader could do and the
     * chmod that fixes it.
     *
     * @param what     how the message names the file, e.g. {@code "CHAP secret file"}
     * @param exposure what a reader of the file could do, for the message
     */
    public static void requirePrivate(Path file, String what, String exposure) throws IOException {
        Set<PosixFilePermission> permissions = permissions(file);
        if (permissions != null && permissions.stream().anyMatch(GROUP_AND_OTHERS_READ::contains)) {
            throw new IOException(what + " " + file + " is readable by group or others ("
                    + PosixFilePermissions.toString(permissions) + "); " + exposure + ". "
                    + "Run 'chmod 600 " + file + "' (or 400) and retry.");
        }
    }

    /**
     * Creates a new, empty file that only its owner may read and write: a secret written into it is never
     * readable by others, as it would be between writing a file and a chmod. On a file system without POSIX
     * permissions the file is created with its defaults.
     *
     * @throws java.nio.file.FileAlreadyExistsException if {@code file} exists (its permissions are not this call's)
     */
    public static Path createPrivate(Path file) throws IOException {
        if (!file.getFileSystem().supportedFileAttributeViews().contains("posix")) {
            return Files.createFile(file);
        }
        return Files.createFile(file, PosixFilePermissions.asFileAttribute(OWNER_READ_WRITE));
    }

    /**
     * What is wrong with a data file that users other than its owner may read or write, with the fix,
     * or null when nothing is (or the file system has no POSIX permissions, or it is not a regular file:
     * block devices are left to the system's device permissions).
     */
    public static String sharedDataFileProblem(Path file) throws IOException {
        if (!Files.isRegularFile(file)) {
            return null;
        }
        Set<PosixFilePermission> permissions = permissions(file);
        if (permissions == null || permissions.stream().noneMatch(GROUP_AND_OTHERS::contains)) {
            return null;
        }
        return file + " is accessible to other users (" + PosixFilePermissions.toString(permissions)
                + "): its data can be read or changed outside the server; run chmod 600 " + file;
    }

    private static Set<PosixFilePermission> permissions(Path file) throws IOException {
        PosixFileAttributeView view = Files.getFileAttributeView(file, PosixFileAttributeView.class);
        return view == null ? null : view.readAttributes().permissions();
    }
}
