package io.stripestack.bench.crypto;

import io.stripestack.crypto.CryptSpec;
import io.stripestack.crypto.CryptoBlockDevice;
import io.stripestack.crypto.SectorCipher;
import io.stripestack.raid5.Raid5Array;
import io.stripestack.raid5.Raid5Config;
import io.stripestack.raid5.Raid5Files;
import io.stripestack.raid5.Raid5Options;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

/**
 * What the crypto layer's write pieces cost the RAID-5 array below: sequential writes of one size through an
 * encrypted LUN over a fresh array of the default geometry (4 members, 512 KiB chunks: 1.5 MiB rows), counting
 * the array's member pre-reads and row updates per GiB written. Counts, not timings, so a run on a busy
 * machine gives the same figures.
 *
 * <p>Usage: {@code CryptoPieceBench [writeMiB=8] [totalMiB=144] [dir=/tmp]} (plain main).
 */
public final class CryptoPieceBench {
    private CryptoPieceBench() {
    }

    public static void main(String[] args) throws Exception {
        int writeMiB = args.length > 0 ? Integer.parseInt(args[0]) : 8;
        int totalMiB = args.length > 1 ? Integer.parseInt(args[1]) : 144;
        Path dir = Files.createTempDirectory(Path.of(args.length > 2 ? args[2] : "/tmp"), "crypto-pieces");
        List<Path> paths = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            paths.add(dir.resolve("member" + i + ".img"));
        }
        byte[] key = new byte[32];
        new SecureRandom().nextBytes(key);
        SectorCipher cipher = SectorCipher.create(CryptSpec.parse("aes-cbc-essiv:sha256"), key, 512, false);
        Arrays.fill(key, (byte) 0);
        Raid5Array array = Raid5Files.create(paths, (totalMiB / 3 + 8L) << 20, Raid5Config.defaults("pieces"),
                Raid5Options.defaults());
        try (CryptoBlockDevice crypt = new CryptoBlockDevice("crypt", array, cipher, 0, 0, false)) {
            ByteBuffer buffer = ByteBuffer.allocateDirect(writeMiB << 20);
            Map<String, Long> before = array.stats().snapshot();
            long written = 0;
            for (long offset = 0; offset + buffer.capacity() <= (long) totalMiB << 20; offset += buffer.capacity()) {
                buffer.clear();
                crypt.write(offset, buffer);
                written += buffer.capacity();
            }
            Map<String, Long> after = array.stats().snapshot();
            System.out.printf("%d MiB sequential writes, %d MiB written through aes-cbc-essiv:sha256 over RAID-5 (4 x, 512 KiB chunks)%n",
                    writeMiB, written >> 20);
            for (String counter : List.of("member_prereads", "full_stripe_writes", "reconstruct_writes", "rmw_writes", "held_writes")) {
                long n = after.get(counter) - before.get(counter);
                System.out.printf("  %-20s %6d  (%.0f per GiB)%n", counter, n, n * 1024.0 / (written >> 20));
            }
        } finally {
            for (Path p : paths) {
                Files.deleteIfExists(p);
            }
            Files.deleteIfExists(dir);
        }
    }
}
