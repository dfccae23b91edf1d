package io.stripestack.targetserver.server;

import io.stripestack.targetserver.config.StripestackConfig;
import io.stripestack.targetserver.config.StripestackConfig.ArrayConfig;
import io.stripestack.targetserver.config.StripestackConfig.CryptoConfig;
import io.stripestack.targetserver.config.StripestackConfig.LunConfig;
import io.stripestack.targetserver.config.StripestackConfig.Portal;
import io.stripestack.targetserver.config.StripestackConfig.RemoteMemberConfig;
import io.stripestack.targetserver.config.StripestackConfig.TargetConfig;
import io.stripestack.targetserver.control.AdminServer;
import io.stripestack.targetserver.iscsi.IscsiServer;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.channels.FileChannel;
import java.nio.file.AccessDeniedException;
import java.nio.file.FileStore;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What a start needs, checked before anything is created or written: the member and spare files (openable for
 * reading and writing, or creatable, with the space an allocated creation takes), the LUNs' backing files, key
 * and passphrase files, the remote members' CHAP secret files, the portals' ports and the admin socket. Every
 * problem is reported at once, each naming the file (or address), the reason (not found, permission denied, not a
 * regular file, address already in use...) and what to do. The probes open files without creating or changing
 * them and bind each port for a moment. Sparse members (existing ones with unallocated blocks, or ones to be
 * created sparse) on a file system with less free space than they may take are warned about with the numbers.
 * Also lists the files a start may create, so that a start that fails later removes them
 * ({@link StripestackServer#start}). Stateless.
 */
final class StartPreflight {
    private static final Logger log = LoggerFactory.getLogger(StartPreflight.class);

    private StartPreflight() {
    }

    /** Thrown with every problem found; nothing was created or written. */
    static final class StartRefusedException extends IOException {
        StartRefusedException(List<String> problems) {
            super("cannot start; nothing was created or written:\n  - " + String.join("\n  - ", problems));
        }
    }

    static void check(StripestackConfig config) throws StartRefusedException {
        List<String> problems = new ArrayList<>();
        Map<FileStore, Long> allocatedToCreate = new LinkedHashMap<>();
        Map<FileStore, Long> sparseToCreate = new LinkedHashMap<>();
        Map<FileStore, Path> where = new LinkedHashMap<>();
        Map<FileStore, Long> unallocated = new LinkedHashMap<>();
        for (ArrayConfig ac : config.arrays().values()) {
            boolean created = willBeCreated(ac);
            for (List<Path> files : List.of(ac.members(), ac.spares())) {
                for (Path f : files) {
                    if (Files.exists(f)) {
                        probeReadWrite(f, "member file of array " + ac.name(), problems);
                        long holes = unallocatedBytes(f);
                        FileStore store = holes > 0 ? storeOf(f) : null;
                        if (store != null) {
                            unallocated.merge(store, holes, Long::sum);
                            where.putIfAbsent(store, f.toAbsolutePath().getParent());
                        }
                    } else if (created || files == ac.spares()) {
                        FileStore store = creatable(f, "member file of array " + ac.name(), problems);
                        if (store != null && ac.createMemberSize() > 0) {
                            Map<FileStore, Long> toCreate = ac.createSparse() ? sparseToCreate : allocatedToCreate;
                            toCreate.merge(store, ac.createMemberSize(), Long::sum);
                            where.putIfAbsent(store, f.toAbsolutePath().getParent());
                        }
                    }
                }
            }
            for (List<RemoteMemberConfig> remote : List.of(ac.remote().members(), ac.remote().spares())) {
                for (RemoteMemberConfig m : remote) {
                    if (m.chapSecretFile() != null) {
                        probeRead(m.chapSecretFile(), "CHAP secret file of remote member " + m.url() + " of array "
                                + ac.name(), "restore it or correct chap_secret_file", problems);
                    }
                }
            }
        }
        for (TargetConfig tc : config.targets()) {
            for (LunConfig lc : tc.luns()) {
                checkLun(config, tc, lc, problems);
            }
        }
        for (Map.Entry<FileStore, Long> e : allocatedToCreate.entrySet()) {
            long free = usable(e.getKey());
            if (free >= 0 && free < e.getValue()) {
                problems.add(where.get(e.getKey()) + ": the files to create there need " + mib(e.getValue())
                        + " MiB allocated, but its file system has " + mib(free) + " MiB free -- free space there, choose "
                        + "a smaller create_member_size, or create the members sparse (create_sparse: true) knowing that "
                        + "writes fail once that file system is full");
            }
        }
        for (Map.Entry<FileStore, Long> e : sparseToCreate.entrySet()) {
            long free = usable(e.getKey());
            if (free >= 0 && free < e.getValue()) {
                log.warn("{}: the sparse member files to create there take up to {} MiB once written, but its file "
                        + "system has {} MiB free: writes will fail (ENOSPC) and fail the members once it is full -- free "
                        + "space there, or create them allocated (create_sparse: false)", where.get(e.getKey()),
                        mib(e.getValue()), mib(free));
            }
        }
        for (Map.Entry<FileStore, Long> e : unallocated.entrySet()) {
            long free = usable(e.getKey());
            if (free >= 0 && free < e.getValue()) {
                log.warn("{}: the member files there are sparse: {} MiB of them is not allocated yet, but their file "
                        + "system has {} MiB free: once it is full, writes fail (ENOSPC) and fail the members -- free "
                        + "space there, or allocate the files (fallocate -l SIZE FILE keeps their data)",
                        where.get(e.getKey()), mib(e.getValue()), mib(free));
            }
        }
        for (Portal p : config.server().portals()) {
            String refusal = portRefusal(p);
            if (refusal != null) {
                problems.add(refusal);
            }
        }
        Portal metrics = config.server().metrics();
        String metricsRefusal = metrics == null ? null : portRefusal(metrics);
        if (metricsRefusal != null) {
            problems.add("metrics (server.metrics): " + metricsRefusal.replaceFirst("^iSCSI: ", ""));
        }
        Path socket = config.server().adminSocket().toAbsolutePath();
        try {
            AdminServer.refuseIfAnotherServerListens(socket);
        } catch (IOException e) {
            problems.add(e.getMessage());
        }
        if (!Files.exists(socket)) {
            creatable(socket, "admin socket", problems);
        }
        if (!problems.isEmpty()) {
            throw new StartRefusedException(problems);
        }
    }

    /**
     * The files a start may create that do not exist now: members and spares, LUN backing files and generated key
     * files. A start that fails removes those it created.
     */
    static List<Path> absentFilesAStartMayCreate(StripestackConfig config) {
        Set<Path> files = new LinkedHashSet<>();
        for (ArrayConfig ac : config.arrays().values()) {
            files.addAll(ac.members());
            files.addAll(ac.spares());
        }
        for (TargetConfig tc : config.targets()) {
            for (LunConfig lc : tc.luns()) {
                if (lc.backing().file() != null) {
                    files.add(lc.backing().file());
                }
                if (lc.crypto() != null && lc.crypto().keyFile() != null) {
                    files.add(lc.crypto().keyFile());
                }
            }
        }
        List<Path> absent = new ArrayList<>();
        for (Path f : files) {
            if (!Files.exists(f, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
                absent.add(f);
            }
        }
        return absent;
    }

    /** As the server decides it: none of the member files exists (remote members: the server asks them). */
    private static boolean willBeCreated(ArrayConfig ac) {
        return ac.remote().isEmpty() && ac.members().stream().noneMatch(Files::exists);
    }

    private static void checkLun(StripestackConfig config, TargetConfig tc, LunConfig lc, List<String> problems) {
        String lun = "LUN " + lc.lun() + " of " + tc.iqn();
        Path file = lc.backing().file();
        boolean baseIsNew = lc.backing().ram();
        if (file != null) {
            if (Files.exists(file)) {
                if (lc.readOnly()) {
                    probeRead(file, "backing file of " + lun, "make it readable by the server's user", problems);
                } else {
                    probeReadWrite(file, "backing file of " + lun, problems);
                }
            } else if (lc.backing().createSize() <= 0) {
                problems.add(file + " (backing file of " + lun + "): not found -- create it, correct the path, or set "
                        + "create_size to have it created");
            } else {
                baseIsNew = true;
                creatable(file, "backing file of " + lun, problems);
            }
        } else if (lc.backing().array() != null) {
            ArrayConfig ac = config.arrays().get(lc.backing().array());
            baseIsNew = ac != null && willBeCreated(ac);
        }
        CryptoConfig c = lc.crypto();
        if (c == null) {
            return;
        }
        if (c.keyFile() != null) {
            if (Files.exists(c.keyFile())) {
                probeRead(c.keyFile(), "key file of " + lun, "make it readable by the server's user (mode 0600)", problems);
            } else if (!c.createKey()) {
                problems.add(c.keyFile() + " (key file of " + lun + "): not found -- restore the key file, or correct "
                        + "key_file; for a new, empty device set create_key to have a new key made");
            } else if (!baseIsNew) {
                problems.add(c.keyFile() + " (key file of " + lun + "): not found, and the device below holds existing "
                        + "data -- restore the key file (a new key would make the data unreadable)");
            } else {
                creatable(c.keyFile(), "key file of " + lun, problems);
            }
        }
        if (c.passphraseFile() != null) {
            probeRead(c.passphraseFile(), "passphrase file of " + lun, "restore it or correct passphrase_file", problems);
        }
    }

    /** Opens {@code f} for reading and writing (creating and changing nothing); a problem names why not. */
    private static void probeReadWrite(Path f, String what, List<String> problems) {
        if (Files.isDirectory(f)) {
            problems.add(f + " (" + what + "): not a regular file (a directory) -- name the file itself");
            return;
        }
        try (FileChannel ch = FileChannel.open(f, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            if (!lockable(ch)) {
                problems.add(f + " (" + what + "): already in use (another stripestack process, or another array or LUN "
                        + "of this one, has it open) -- stop the other user or remove the file from one of the "
                        + "configurations");
            }
        } catch (IOException e) {
            problems.add(f + " (" + what + "): " + reason(e) + " -- " + fix(e, "readable and writable"));
        }
    }

    /** Whether nobody holds the lock a member's or backing file's user takes (FileBlockDevice's); released at once. */
    private static boolean lockable(FileChannel ch) throws IOException {
        try (java.nio.channels.FileLock lock = ch.tryLock()) {
            return lock != null;
        } catch (java.nio.channels.OverlappingFileLockException e) {
            return false;
        }
    }

    private static void probeRead(Path f, String what, String fixWhenMissing, List<String> problems) {
        if (Files.isDirectory(f)) {
            problems.add(f + " (" + what + "): not a regular file (a directory) -- name the file itself");
            return;
        }
        try (FileChannel ch = FileChannel.open(f, StandardOpenOption.READ)) {
            // readable
        } catch (NoSuchFileException e) {
            problems.add(f + " (" + what + "): not found -- " + fixWhenMissing);
        } catch (IOException e) {
            problems.add(f + " (" + what + "): " + reason(e) + " -- " + fix(e, "readable"));
        }
    }

    /**
     * Whether {@code f} can be created: its nearest existing ancestor is a writable directory. Returns that
     * directory's file store (for the space check), or null with a problem noted.
     */
    private static FileStore creatable(Path f, String what, List<String> problems) {
        Path dir = f.toAbsolutePath().getParent();
        while (dir != null && !Files.exists(dir)) {
            dir = dir.getParent();
        }
        if (dir == null || !Files.isDirectory(dir)) {
            problems.add(f + " (" + what + ", to be created): " + dir + " is not a directory -- correct the path");
            return null;
        }
        if (!Files.isWritable(dir)) {
            problems.add(f + " (" + what + ", to be created): permission denied on " + dir + " -- let the server's "
                    + "user write there, or choose another directory");
            return null;
        }
        try {
            return Files.getFileStore(dir);
        } catch (IOException e) {
            problems.add(f + " (" + what + ", to be created): " + dir + ": " + reason(e));
            return null;
        }
    }

    /** Why {@code p} cannot be listened on (as the iSCSI server would say it), or null; binds it for a moment. */
    private static String portRefusal(Portal p) {
        if (p.port() == 0) {
            return null;
        }
        InetSocketAddress address = new InetSocketAddress(p.host(), p.port());
        try (ServerSocket s = new ServerSocket()) {
            s.setReuseAddress(true);
            s.bind(address);
            return null;
        } catch (IOException e) {
            return IscsiServer.cannotListen(address, e).getMessage();
        }
    }

    /** The reason a file operation failed, in words: not found, permission denied, the system's reason. */
    static String reason(IOException e) {
        if (e instanceof NoSuchFileException) {
            return "not found";
        }
        if (e instanceof AccessDeniedException) {
            return "permission denied";
        }
        if (e instanceof FileSystemException fse && fse.getReason() != null) {
            return fse.getReason().toLowerCase(Locale.ROOT);
        }
        return e.getMessage() == null ? e.toString() : e.getMessage();
    }

    private static String fix(IOException e, String access) {
        if (e instanceof NoSuchFileException) {
            return "restore it or correct the path";
        }
        if (e instanceof AccessDeniedException) {
            return "make it " + access + " by the server's user (its mode, owner, or the directories above it)";
        }
        return "check the file";
    }

    /**
     * The bytes of regular file {@code f} that its file system has not allocated yet (its holes), from stat(1)'s
     * block count (the JDK does not give st_blocks); 0 when it cannot tell.
     */
    private static long unallocatedBytes(Path f) {
        if (!Files.isRegularFile(f)) {
            return 0;
        }
        try {
            Process stat = new ProcessBuilder("stat", "-c", "%b %B", f.toString()).redirectErrorStream(true).start();
            byte[] answer = stat.getInputStream().readAllBytes();
            String out = new String(answer, java.nio.charset.StandardCharsets.US_ASCII).trim();
            if (stat.waitFor() != 0) {
                return 0;
            }
            String[] blocks = out.split(" ");
            long allocated = Long.parseLong(blocks[0]) * Long.parseLong(blocks[1]);
            return Math.max(0, Files.size(f) - allocated);
        } catch (IOException | NumberFormatException | ArrayIndexOutOfBoundsException e) {
            log.debug("{}: allocation unknown: {}", f, e.toString());
            return 0;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return 0;
        }
    }

    private static FileStore storeOf(Path f) {
        try {
            return Files.getFileStore(f);
        } catch (IOException e) {
            return null;
        }
    }

    private static long usable(FileStore store) {
        try {
            return store.getUsableSpace();
        } catch (IOException e) {
            return -1;
        }
    }

    private static long mib(long bytes) {
        return bytes >> 20;
    }
}
