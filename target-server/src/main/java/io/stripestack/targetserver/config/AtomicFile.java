package io.stripestack.targetserver.config;

import io.stripestack.secrets.FilePermissions;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Set;

/**
 * Replaces a file's contents so that whoever reads it, even after the process or the machine died at any
 * instant, finds the old contents or the new, whole: the new bytes go to a temporary file in the same directory,
 * are forced to disk, the temporary file is renamed over the old one (atomic on one file system) and the
 * directory is forced so that the rename itself is durable. The new file keeps the old one's permissions
 * (owner-only when there was none). A temporary file left by a process killed before its rename is harmless:
 * its name starts with a dot and ends with {@code .tmp}. Stateless; concurrent writers of one file must
 * serialize themselves.
 */
public final class AtomicFile {
    private AtomicFile() {
    }

    /** @throws IOException naming {@code file} (not only the temporary file) and why it was not replaced */
    public static void write(Path file, byte[] contents) throws IOException {
        try {
            replace(file, contents);
        } catch (IOException e) {
            Path dir = file.toAbsolutePath().normalize().getParent();
            String why = e instanceof java.nio.file.NoSuchFileException ? "the directory " + dir + " does not exist"
                    : e instanceof java.nio.file.AccessDeniedException ? "permission denied (" + e.getMessage() + ")"
                    : e.getMessage() == null ? e.toString() : e.getMessage();
            throw new IOException(why.contains(file.toAbsolutePath().normalize().toString()) ? why
                    : "cannot write " + file.toAbsolutePath().normalize() + ": " + why, e);
        }
    }

    private static void replace(Path file, byte[] contents) throws IOException {
        Path target = file.toAbsolutePath().normalize();
        Path dir = target.getParent();
        Set<PosixFilePermission> permissions = Files.exists(target) ? Files.getPosixFilePermissions(target)
                : FilePermissions.OWNER_READ_WRITE;
        Path temp = Files.createTempFile(dir, "." + target.getFileName() + ".", ".tmp",
                PosixFilePermissions.asFileAttribute(FilePermissions.OWNER_READ_WRITE));
        boolean renamed = false;
        try {
            try (FileChannel ch = FileChannel.open(temp, StandardOpenOption.WRITE)) {
                ByteBuffer buffer = ByteBuffer.wrap(contents);
                while (buffer.hasRemaining()) {
                    ch.write(buffer);
                }
                ch.force(true);
            }
            Files.setPosixFilePermissions(temp, permissions);
            try {
                Files.move(temp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            } catch (AtomicMoveNotSupportedException e) {
                throw new IOException("cannot replace " + target + " atomically on this file system: " + e.getMessage(), e);
            }
            renamed = true;
            try (FileChannel d = FileChannel.open(dir, StandardOpenOption.READ)) {
                d.force(true);
            }
        } finally {
            if (!renamed) {
                Files.deleteIfExists(temp);
            }
        }
    }
}
