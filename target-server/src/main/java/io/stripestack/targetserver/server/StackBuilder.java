package io.stripestack.targetserver.server;

import io.stripestack.blockdev.BlockDevice;
import io.stripestack.blockdev.FileBlockDevice;
import io.stripestack.blockdev.MemoryBlockDevice;
import io.stripestack.readahead.ReadaheadBlockDevice;
import io.stripestack.readahead.ReadaheadBudget;
import io.stripestack.crypto.CryptSpec;
import io.stripestack.crypto.CryptoBlockDevice;
import io.stripestack.crypto.PlainModeKeys;
import io.stripestack.crypto.SectorCipher;
import io.stripestack.crypto.luks.LuksVolume;
import io.stripestack.raid5.Raid5Array;
import io.stripestack.raid5.Raid5Config;
import io.stripestack.raid5.Raid5Files;
import io.stripestack.raid5.Raid5Layout;
import io.stripestack.raid5.ConsistencyPolicy;
import io.stripestack.raid5.Raid5Options;
import io.stripestack.remote.RemoteBlockDevice;
import io.stripestack.targetserver.config.StripestackConfig.ArrayConfig;
import io.stripestack.targetserver.config.StripestackConfig.CryptoConfig;
import io.stripestack.targetserver.config.StripestackConfig.LunConfig;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Turns configuration into BlockDevice chains: opens (or creates) arrays, then builds each LUN's stack
 * bottom-up: base (array, file or RAM), optional crypto, readahead at the top (or, as an experiment that
 * caches ciphertext and decrypts only what is read, directly below crypto). The only place that knows every layer.
 *
 * <p>Used once at start-up by the thread that starts the server. {@link #buildLun} is public so that the
 * benches measure the stacks the server builds rather than a copy of their assembly.
 */
public final class StackBuilder {
    private static final Logger log = LoggerFactory.getLogger(StackBuilder.class);

    private StackBuilder() {
    }

    /**
     * Creates the array if none of its members exists and a size is configured, else assembles it from
     * the superblocks of the members, the existing spares and every other file of the same array UUID in
     * their directories ({@link #searchDirs}). Configured spares that do not exist yet are created and
     * added as hot spares.
     */
    static OpenedArray openArray(ArrayConfig c, Raid5Options options) throws IOException {
        RemoteArrayMembers remote = RemoteArrayMembers.open(c);
        try {
            return openArray(c, options, remote);
        } finally {
            remote.closeUnowned();
        }
    }

    private static OpenedArray openArray(ArrayConfig c, Raid5Options options, RemoteArrayMembers remote)
            throws IOException {
        List<Path> members = c.members();
        boolean create = members.stream().noneMatch(Files::exists) && !remote.anyCarriesSuperblock();
        Raid5Array array;
        if (create) {
            if (c.createMemberSize() <= 0) {
                throw new IOException("array " + c.name() + ": none of its members exists or carries an md superblock ("
                        + members + (c.remote().isEmpty() ? "" : ", " + c.remote().members().size() + " remote")
                        + "); set create_member_size to create a new array there, or correct the paths");
            }
            remote.requireAllReachable();
            ConsistencyPolicy policy = newArrayPolicy(c);
            Raid5Config rc = Raid5Config.defaults(c.name()).withChunk(c.chunkBytes())
                    .withLayout(Raid5Layout.parse(c.layout()));
            if (policy == ConsistencyPolicy.PPL) {
                rc = rc.withDataOffset(Raid5Config.PPL_DATA_OFFSET_SECTORS);   // as mdadm: the log keeps room in a reshape
            }
            array = Raid5Files.create(members, c.createMemberSize(), remote.members(), rc,
                    options.withConsistencyPolicy(policy), !c.createSparse());
            log.info("array {}: created on {} {} members of {} bytes (chunk {} KiB, {})", c.name(), members.size(),
                    c.createSparse() ? "sparse" : "allocated", c.createMemberSize(), c.chunkBytes() / 1024, c.layout());
        } else {
            List<Path> present = new ArrayList<>(members);
            c.spares().stream().filter(Files::exists).forEach(present::add);
            array = Raid5Files.assemble(present, searchDirs(c), remote.forAssembly(), remote.unreachable(),
                    options.withConsistencyPolicy(c.consistencyPolicy()), c.direct());
            for (String problem : array.assemblyProblems()) {
                log.warn("array {}: {}", c.name(), problem);
            }
            log.info("array {}: assembled, {}", c.name(), array.status().health());
        }
        try {
            remote.handOver(array, create);
            for (Path spare : c.spares()) {
                if (!Files.exists(spare)) {
                    Raid5Files.addSpare(array, spare, 0, !c.createSparse());
                }
            }
        } catch (IOException | RuntimeException e) {
            array.close();
            throw e;
        }
        return new OpenedArray(array, create, remote.all());
    }

    /**
     * A new array's policy: the configured one, else the partial parity log (the write hole closed), unless
     * the chunk is too large for it, then the write-intent bitmap.
     */
    private static ConsistencyPolicy newArrayPolicy(ArrayConfig c) {
        if (c.consistencyPolicy() != null) {
            return c.consistencyPolicy();
        }
        if (c.chunkBytes() > Raid5Config.PPL_MAX_CHUNK_AT_DEFAULT_OFFSET) {
            log.info("array {}: chunk {} KiB is too large for a partial parity log; consistency policy bitmap",
                    c.name(), c.chunkBytes() / 1024);
            return ConsistencyPolicy.BITMAP;
        }
        return ConsistencyPolicy.PPL;
    }

    /**
     * Where an array's members are looked for by UUID besides the configured files: the directories of the
     * configured members and spares (a spare added at run time, {@code ctl set md0/add FILE}, usually lies
     * there, and no list names it).
     */
    static Set<Path> searchDirs(ArrayConfig c) {
        Set<Path> dirs = new LinkedHashSet<>();
        for (List<Path> files : List.of(c.members(), c.spares())) {
            for (Path f : files) {
                Path parent = f.toAbsolutePath().getParent();
                if (parent != null) {
                    dirs.add(parent);
                }
            }
        }
        return dirs;
    }

    /** An array, whether it was created (all zeros) rather than assembled, and its members on remote targets. */
    record OpenedArray(Raid5Array array, boolean created, List<RemoteBlockDevice> remoteMembers) {
    }

    /** The bottom of a LUN's chain: the named array, a file (created if configured), or RAM. */
    static BlockDevice openBase(LunConfig lun, Map<String, Raid5Array> arrays) throws IOException {
        var b = lun.backing();
        if (b.array() != null) {
            return arrays.get(b.array());
        }
        if (b.ram()) {
            return new MemoryBlockDevice("ram-lun" + lun.lun(), Math.toIntExact(b.createSize()), 512);
        }
        if (!Files.exists(b.file())) {
            if (b.createSize() <= 0) {
                throw new IOException("LUN " + lun.lun() + ": backing file " + b.file()
                        + " does not exist; create it or set create_size");
            }
            log.info("LUN {}: creating backing file {} of {} bytes", lun.lun(), b.file(), b.createSize());
            return FileBlockDevice.create(b.file(), b.createSize(), 512);
        }
        return FileBlockDevice.open(b.file(), 512, false, lun.readOnly());
    }

    /**
     * Builds a LUN's chain on a base the caller opened ({@link #openBase}, or a bench's view of its array);
     * closing the chain's top closes the base.
     *
     * @param baseIsNew the base was created in this start (all zeros): only then may a missing key file
     *                  be generated ({@code create_key})
     */
    public static LunStack buildLun(String target, LunConfig lun, BlockDevice base, boolean baseIsNew,
            ReadaheadBudget budget) throws IOException {
        BlockDevice below = base;
        ReadaheadBlockDevice readahead = null;
        CryptoBlockDevice crypto = null;
        boolean readaheadOn = lun.readahead().readAheadKb() != 0;
        if (lun.crypto() != null) {
            if (readaheadOn && lun.readahead().belowCrypto()) {
                readahead = readahead(below, lun, budget);
                below = readahead;
            }
            crypto = crypto(target, lun, below, baseIsNew);
            below = crypto;
        }
        if (readaheadOn && readahead == null) {
            readahead = readahead(below, lun, budget);
            below = readahead;
        }
        return new LunStack(target, lun, below, readahead, crypto, base);
    }

    private static ReadaheadBlockDevice readahead(BlockDevice below, LunConfig lun, ReadaheadBudget budget) {
        ReadaheadBlockDevice ra = new ReadaheadBlockDevice(below, budget);
        if (lun.readahead().readAheadKb() > 0) {
            try {
                ra.setReadAheadKb(lun.readahead().readAheadKb());
            } catch (IllegalArgumentException e) {
                // Not closed here: closing the stage would close the chain below, which the caller closes.
                throw new IllegalArgumentException("LUN " + lun.lun() + " readahead: " + e.getMessage(), e);
            }
        }
        return ra;
    }

    private static CryptoBlockDevice crypto(String target, LunConfig lun, BlockDevice below, boolean baseIsNew)
            throws IOException {
        CryptoConfig c = lun.crypto();
        if (c.createKey() && c.keyFile() != null && !Files.exists(c.keyFile())) {
            if (!baseIsNew) {
                throw new IOException("LUN " + lun.lun() + ": key file " + c.keyFile() + " is missing and the device"
                        + " below holds existing data; restore the key file (a new key would make the data unreadable)");
            }
            Files.createDirectories(c.keyFile().toAbsolutePath().getParent());
            PlainModeKeys.createRandomKeyFile(c.keyFile(), c.keyBits() / 8);
            log.info("LUN {}: created a new random {}-bit key in {} (mode 0600); back it up", lun.lun(),
                    c.keyBits(), c.keyFile());
        }
        String name = "crypt-" + target + "-lun" + lun.lun();
        byte[] key = null;
        try {
            if (c.luks()) {
                Path file = c.keyFile() != null ? c.keyFile() : c.passphraseFile();
                LuksVolume.SecretFile kind = c.keyFile() != null ? LuksVolume.SecretFile.KEY_FILE
                        : LuksVolume.SecretFile.PASSPHRASE_FILE;
                try (LuksVolume volume = LuksVolume.unlock(below, file, kind)) {
                    SectorCipher cipher = SectorCipher.create(CryptSpec.parse(volume.cipherSpec()), volume.volumeKey(),
                            volume.sectorSize(), false);
                    boolean discards = c.allowDiscards() || volume.allowDiscards();
                    log.info("LUN {}: LUKS{} volume {} unlocked (keyslot {}), {}, payload at sector {}, discards {}",
                            lun.lun(), volume.version(), volume.uuid(), volume.keyslot(), volume.cipherSpec(),
                            volume.payloadOffsetSectors(), !discards ? "not passed down"
                                    : "passed down (" + (c.allowDiscards() ? "allow_discards" : "the header's allow-discards flag") + ")");
                    return new CryptoBlockDevice(name, below, cipher, volume.payloadOffsetSectors(), 0, discards,
                            volume.payloadBytes());
                }
            }
            int keyBytes = c.keyBits() / 8;
            if (c.keyFile() != null) {
                key = PlainModeKeys.readKeyFile(c.keyFile(), keyBytes);
            } else {
                key = PlainModeKeys.keyFromPassphraseFile(c.passphraseFile(), c.hash(), keyBytes);
            }
            SectorCipher cipher = SectorCipher.create(CryptSpec.parse(c.cipher()), key, c.sectorSize(), c.ivLargeSectors());
            return new CryptoBlockDevice(name, below, cipher, c.offsetSectors(), c.skipSectors(), c.allowDiscards());
        } finally {
            if (key != null) {
                Arrays.fill(key, (byte) 0);
            }
        }
    }
}
