package io.stripestack.cli;

import io.stripestack.blockdev.BlockDevice;
import io.stripestack.blockdev.FileBlockDevice;
import io.stripestack.crypto.luks.Kdf;
import io.stripestack.crypto.luks.LuksFormatOptions;
import io.stripestack.crypto.luks.LuksFormatter;
import io.stripestack.crypto.luks.LuksHash;
import io.stripestack.crypto.luks.LuksHeader;
import io.stripestack.crypto.luks.LuksVolume;
import io.stripestack.crypto.luks.VolumeKey;
import io.stripestack.raid5.Raid5Files;
import io.stripestack.raid5.Raid5Options;
import io.stripestack.targetserver.config.ConfigLoader;
import io.stripestack.targetserver.config.StripestackConfig;
import io.stripestack.targetserver.server.DefaultConfig;
import java.io.Console;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.concurrent.Callable;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code stripestack luks VERB}: LUKS1/LUKS2 headers on the device below a LUN's crypto layer (a member
 * array, assembled offline, or a file), like cryptsetup's luksFormat, open --test-passphrase, luksAddKey,
 * luksKillSlot, luksDump and luksHeaderBackup. The server must not be running on that device (member
 * files are locked). Secrets come from files or the terminal, never from the command line.
 */
@Command(name = "luks", mixinStandardHelpOptions = true,
        description = "LUKS headers on the device below a LUN's crypto layer (cryptsetup-compatible).",
        subcommands = {LuksCommand.Format.class, LuksCommand.OpenTest.class, LuksCommand.AddKey.class,
                LuksCommand.RemoveKey.class, LuksCommand.Dump.class, LuksCommand.HeaderBackup.class})
final class LuksCommand {

    /** Where the header lives: a file, or an array of a configuration. */
    static final class Target {
        @Option(names = "--device", paramLabel = "FILE", description = "a file or block device")
        Path device;

        @Option(names = "--array", paramLabel = "NAME", description = "an array of the configuration (assembled offline)")
        String array;

        @Option(names = {"-c", "--config"}, paramLabel = "FILE", description = "configuration defining --array (default: the embedded default)")
        Path config;

        BlockDevice open(boolean writable) throws Exception {
            if ((device == null) == (array == null)) {
                throw new IllegalArgumentException("give --device FILE or --array NAME (with --config FILE)");
            }
            if (device != null) {
                if (!Files.exists(device)) {
                    throw new IllegalArgumentException(device + " does not exist: create the device file first, e.g."
                            + " '(umask 077; truncate -s 64M " + device + ")' (LUKS2's header takes the first 16 MiB)");
                }
                return FileBlockDevice.open(device, 512, false, !writable);
            }
            StripestackConfig c = config != null ? ConfigLoader.load(config) : DefaultConfig.load();
            var ac = c.arrays().get(array);
            if (ac == null) {
                throw new IllegalArgumentException("no array '" + array + "' in " + c.file() + " (defined: "
                        + String.join(", ", c.arrays().keySet()) + ")");
            }
            return Raid5Files.assemble(ac.members(), Raid5Options.defaults(), false);
        }
    }

    /** A secret from a key file (every byte), a passphrase file (first line) or the terminal. */
    static final class Secret {
        @Option(names = "--key-file", paramLabel = "FILE", description = "key file: every byte is the passphrase (cryptsetup --key-file)")
        Path keyFile;

        @Option(names = "--passphrase-file", paramLabel = "FILE", description = "passphrase file: its first line")
        Path passphraseFile;

        byte[] read(String prompt, boolean confirm) throws IOException {
            if (keyFile != null && passphraseFile != null) {
                throw new IllegalArgumentException("give --key-file or --passphrase-file, not both");
            }
            if (keyFile != null) {
                if (!Files.exists(keyFile)) {
                    throw new IllegalArgumentException("key file " + keyFile + " does not exist: create one only"
                            + " you can read, e.g. '(umask 077; head -c 64 /dev/urandom > " + keyFile + ")'");
                }
                return LuksVolume.readSecret(keyFile, LuksVolume.SecretFile.KEY_FILE);
            }
            if (passphraseFile != null) {
                if (!Files.exists(passphraseFile)) {
                    throw new IllegalArgumentException("passphrase file " + passphraseFile + " does not exist:"
                            + " write the passphrase as its first line in a file only you can read (umask 077)");
                }
                return LuksVolume.readSecret(passphraseFile, LuksVolume.SecretFile.PASSPHRASE_FILE);
            }
            Console console = System.console();
            if (console == null) {
                throw new IllegalArgumentException("no terminal to ask for the passphrase: give --key-file or --passphrase-file");
            }
            char[] first = console.readPassword("%s: ", prompt);
            try {
                if (confirm) {
                    char[] again = console.readPassword("Verify passphrase: ");
                    boolean same = Arrays.equals(first, again);
                    Arrays.fill(again, '\0');
                    if (!same) {
                        throw new IllegalArgumentException("passphrases do not match");
                    }
                }
                var encoded = StandardCharsets.UTF_8.encode(java.nio.CharBuffer.wrap(first));
                byte[] bytes = new byte[encoded.remaining()];
                encoded.get(bytes);
                if (encoded.hasArray()) {
                    Arrays.fill(encoded.array(), (byte) 0);
                }
                return bytes;
            } finally {
                Arrays.fill(first, '\0');
            }
        }
    }

    @Command(name = "format", mixinStandardHelpOptions = true,
            description = "Write a new LUKS header (cryptsetup luksFormat). Destroys what the device holds.")
    static final class Format implements Callable<Integer> {
        @ArgGroup(exclusive = false, multiplicity = "1")
        Target target;
        @ArgGroup(exclusive = false)
        Secret secret = new Secret();

        @Option(names = "--type", defaultValue = "luks2", description = "luks1 or luks2 (default ${DEFAULT-VALUE})")
        String type;
        @Option(names = "--cipher", description = "dm-crypt cipher spec (default aes-xts-plain64)")
        String cipher;
        @Option(names = "--key-size", defaultValue = "0", description = "volume key bits (default 512 for XTS, 256 for CBC)")
        int keyBits;
        @Option(names = "--hash", description = "hash for PBKDF2 and the AF splitter (default sha256)")
        String hash;
        @Option(names = "--pbkdf", description = "pbkdf2, argon2i or argon2id (LUKS2 default argon2id; LUKS1 always pbkdf2)")
        String pbkdf;
        @Option(names = "--pbkdf-force-iterations", defaultValue = "0", description = "fixed iterations (PBKDF2) or passes (Argon2) instead of the ~2 s benchmark")
        int iterations;
        @Option(names = "--pbkdf-memory", defaultValue = "65536", description = "Argon2 memory in KiB (with --pbkdf-force-iterations)")
        int memoryKiB;
        @Option(names = "--align-payload", defaultValue = "0", description = "align the payload to this many 512-byte sectors")
        long alignPayload;
        @Option(names = "--offset", defaultValue = "0", description = "put the payload exactly at this 512-byte sector")
        long offset;
        @Option(names = "--sector-size", defaultValue = "0", description = "encryption sector size (LUKS2: 512..4096)")
        int sectorSize;
        @Option(names = "--label", description = "LUKS2 label")
        String label;
        @Option(names = {"-q", "--batch-mode", "--yes"}, description = "do not ask for confirmation")
        boolean yes;

        @Override
        public Integer call() throws Exception {
            LuksFormatOptions options = type.equalsIgnoreCase("luks1") ? LuksFormatOptions.luks1()
                    : type.equalsIgnoreCase("luks2") ? LuksFormatOptions.luks2() : null;
            if (options == null) {
                throw new IllegalArgumentException("--type " + type + ": use luks1 or luks2");
            }
            if (cipher != null || keyBits != 0) {
                options = options.withCipher(cipher != null ? cipher : options.cipherSpec(), keyBits);
            }
            if (hash != null) {
                options = options.withHash(LuksHash.forName(hash));
            }
            if (iterations > 0) {
                LuksHash h = options.hash();
                String kind = pbkdf != null ? pbkdf : options.version() == 1 ? "pbkdf2" : "argon2id";
                Kdf kdf = switch (kind) {
                    case "pbkdf2" -> new Kdf.Pbkdf2(h, iterations);
                    case "argon2id" -> Kdf.Argon2.id(iterations, memoryKiB, 1);
                    case "argon2i" -> new Kdf.Argon2(false, iterations, memoryKiB, 1);
                    default -> throw new IllegalArgumentException("--pbkdf " + kind + ": use pbkdf2, argon2i or argon2id");
                };
                options = options.withKdf(kdf);
            } else if (pbkdf != null) {
                throw new IllegalArgumentException("--pbkdf needs --pbkdf-force-iterations here (the benchmark picks the KDF otherwise)");
            }
            if (alignPayload > 0) {
                options = options.withAlignPayload(alignPayload);
            }
            if (offset > 0) {
                options = options.withPayloadOffset(offset);
            }
            if (sectorSize > 0) {
                options = options.withSectorSize(sectorSize);
            }
            if (label != null) {
                options = options.withLabel(label);
            }
            if (!yes) {
                Console console = System.console();
                String where = target.device != null ? target.device.toString() : "array " + target.array;
                if (console == null) {
                    throw new IllegalArgumentException("formatting overwrites " + where + "; add --yes to confirm");
                }
                String answer = console.readLine("This will overwrite data on %s irrevocably.%nAre you sure? (Type 'yes' in capital letters): ", where);
                if (!"YES".equals(answer)) {
                    System.err.println("Operation aborted.");
                    return 1;
                }
            }
            byte[] passphrase = secret.read("Enter passphrase for the new header", true);
            try (BlockDevice device = target.open(true);
                 LuksHeader header = LuksFormatter.format(device, options, passphrase)) {
                System.out.println("LUKS" + header.version() + " " + header.uuid() + ": " + header.cipherSpec() + ", "
                        + header.volumeKeyBytes() * 8 + "-bit key, payload at sector " + header.payloadOffsetSectors()
                        + ", sector size " + header.sectorSize() + ", keyslots " + header.activeKeyslots());
            } finally {
                Arrays.fill(passphrase, (byte) 0);
            }
            return 0;
        }
    }

    /**
     * The verbs that first unlock a keyslot: read the secret, open the device, read the header, unlock,
     * then {@link #withKey}; the secret and the volume key are zeroed whatever happens.
     */
    abstract static class UnlockingVerb implements Callable<Integer> {
        @ArgGroup(exclusive = false, multiplicity = "1")
        Target target;
        @ArgGroup(exclusive = false)
        Secret secret = new Secret();

        /** Whether the verb rewrites the header. */
        abstract boolean writes();

        abstract void withKey(LuksHeader header, VolumeKey key) throws Exception;

        @Override
        public final Integer call() throws Exception {
            byte[] passphrase = secret.read("Enter any existing passphrase", false);
            try (BlockDevice device = target.open(writes());
                 LuksHeader header = LuksHeader.read(device);
                 VolumeKey key = header.unlock(passphrase, source(secret))) {
                withKey(header, key);
            } finally {
                Arrays.fill(passphrase, (byte) 0);
            }
            return 0;
        }
    }

    @Command(name = "open-test", mixinStandardHelpOptions = true,
            description = "Check that a passphrase opens a keyslot (cryptsetup open --test-passphrase).")
    static final class OpenTest extends UnlockingVerb {
        @Override
        boolean writes() {
            return false;
        }

        @Override
        void withKey(LuksHeader header, VolumeKey key) {
            System.out.println("Key slot " + key.keyslot() + " unlocked.");
        }
    }

    @Command(name = "add-key", mixinStandardHelpOptions = true,
            description = "Add a keyslot for a new passphrase, unlocking with an existing one (cryptsetup luksAddKey).")
    static final class AddKey extends UnlockingVerb {
        @Option(names = "--new-key-file", paramLabel = "FILE", description = "the new passphrase: every byte")
        Path newKeyFile;
        @Option(names = "--new-passphrase-file", paramLabel = "FILE", description = "the new passphrase: first line")
        Path newPassphraseFile;
        @Option(names = "--pbkdf-force-iterations", defaultValue = "0", description = "fixed cost instead of the ~2 s benchmark (same KDF type as the header's default)")
        int iterations;

        @Override
        boolean writes() {
            return true;
        }

        @Override
        void withKey(LuksHeader header, VolumeKey key) throws IOException {
            Secret fresh = new Secret();
            fresh.keyFile = newKeyFile;
            fresh.passphraseFile = newPassphraseFile;
            byte[] added = fresh.read("Enter new passphrase for key slot", true);
            try {
                Kdf kdf = header.benchmarkKdf();
                if (iterations > 0) {
                    kdf = kdf instanceof Kdf.Argon2 a ? new Kdf.Argon2(a.idVariant(), iterations, a.memoryKiB(), a.parallelism())
                            : new Kdf.Pbkdf2(((Kdf.Pbkdf2) kdf).hash(), iterations);
                }
                int slot = header.addKeyslot(key, added, kdf);
                System.out.println("Key slot " + slot + " created.");
            } finally {
                Arrays.fill(added, (byte) 0);
            }
        }
    }

    @Command(name = "remove-key", mixinStandardHelpOptions = true,
            description = "Remove the keyslot a passphrase opens (cryptsetup luksRemoveKey); --slot N removes that slot instead.")
    static final class RemoveKey extends UnlockingVerb {
        @Option(names = "--slot", defaultValue = "-1", description = "remove this keyslot (after unlocking with any passphrase)")
        int slot;
        @Option(names = {"-q", "--batch-mode", "--yes"}, description = "allow removing the last keyslot")
        boolean yes;

        @Override
        boolean writes() {
            return true;
        }

        @Override
        void withKey(LuksHeader header, VolumeKey key) throws IOException {
            int victim = slot >= 0 ? slot : key.keyslot();
            if (!header.activeKeyslots().contains(victim)) {
                throw new IllegalArgumentException("keyslot " + victim + " is not active (active: " + header.activeKeyslots() + ")");
            }
            if (header.activeKeyslots().size() == 1 && !yes) {
                throw new IllegalArgumentException("keyslot " + victim + " is the last one: removing it makes the data"
                        + " unreadable forever; add --yes if that is what you want");
            }
            header.removeKeyslot(victim);
            System.out.println("Key slot " + victim + " removed.");
        }
    }

    @Command(name = "dump", mixinStandardHelpOptions = true, description = "Print the header (cryptsetup luksDump).")
    static final class Dump implements Callable<Integer> {
        @ArgGroup(exclusive = false, multiplicity = "1")
        Target target;

        @Override
        public Integer call() throws Exception {
            try (BlockDevice device = target.open(false); LuksHeader header = LuksHeader.read(device)) {
                System.out.print(header.dump());
            }
            return 0;
        }
    }

    @Command(name = "header-backup", mixinStandardHelpOptions = true,
            description = "Save the header and keyslot area to a new file (cryptsetup luksHeaderBackup).")
    static final class HeaderBackup implements Callable<Integer> {
        @ArgGroup(exclusive = false, multiplicity = "1")
        Target target;
        @Option(names = "--header-backup-file", required = true, paramLabel = "FILE", description = "the new backup file")
        Path file;

        @Override
        public Integer call() throws Exception {
            try (BlockDevice device = target.open(false); LuksHeader header = LuksHeader.read(device)) {
                header.backup(file);
                System.out.println("Header backup written to " + file + " (" + header.headerAreaBytes() + " bytes).");
            }
            return 0;
        }
    }

    private static String source(Secret s) {
        return s.keyFile != null ? s.keyFile.toString() : s.passphraseFile != null ? s.passphraseFile.toString() : "the terminal";
    }

    private LuksCommand() {
    }
}
