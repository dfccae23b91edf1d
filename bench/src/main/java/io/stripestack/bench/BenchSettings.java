package io.stripestack.bench;

import io.stripestack.crypto.CryptSpec;
import io.stripestack.blockdev.Sizes;
import java.util.ArrayList;
import java.util.List;

/**
 * Everything a benchmark run is configured with; printed with the results so a run can be repeated.
 *
 * @param quick            tiny sizes (for tests): the figures mean nothing
 * @param repeat           timed runs per measurement (after one untimed warm-up)
 * @param direct           members opened with O_DIRECT (otherwise the page cache serves them)
 * @param memberBytesPerSecond each member paced like an independent disk of this bandwidth, 0 for no pacing
 * @param members          RAID-5 members (RAID-0 gets one fewer)
 * @param memberBytes      size of each member file
 * @param chunkBytes       chunk size of the alignment and write-path studies
 * @param queueDepth       requests outstanding in the alignment and write-path studies
 * @param bytesPerRun      bytes each timed run moves (at least one request per thread)
 * @param chunkSizes       chunk sizes of the RAID-5 vs RAID-0 study
 * @param stripeCacheSizes stripe cache sizes (rows) of the RAID-5 vs RAID-0 study
 * @param randomReadBytes  request size of that study's random reads (14 outstanding)
 * @param largeReadBytes   request size of that study's single large read
 * @param readaheadBytes   readahead budget of the alignment study's readahead columns
 * @param xorMillis        how long each XOR routine runs per repeat
 * @param iscsi            also measure end to end through the iSCSI server with qemu-img bench
 * @param cipher           the alignment study's cipher for its encrypted stacks and cipher-rate rows (the crypto
 *                         layer's default, aes-cbc-essiv:sha256, unless chosen)
 */
record BenchSettings(boolean quick, int repeat, boolean direct, long memberBytesPerSecond, int members, long memberBytes, int chunkBytes,
                     int queueDepth, long bytesPerRun, List<Integer> chunkSizes, List<Integer> stripeCacheSizes,
                     int randomReadBytes, int largeReadBytes, long readaheadBytes, long xorMillis, boolean iscsi,
                     CryptSpec cipher) {

    BenchSettings {
        if (repeat < 1 || members < 3 || queueDepth < 1 || bytesPerRun <= 0 || memberBytesPerSecond < 0) {
            throw new IllegalArgumentException("bench needs --repeat >= 1, --members >= 3, --queue-depth >= 1, --bytes > 0"
                    + " and --member-mbps >= 0");
        }
        chunkSizes = List.copyOf(chunkSizes);
        stripeCacheSizes = List.copyOf(stripeCacheSizes);
    }

    /** The full-size defaults (members of 256 MiB: about 1 GiB of page cache per array). */
    static BenchSettings defaults() {
        return new BenchSettings(false, 3, false, 0, 4, 256L << 20, 1 << 20, 4, 256L << 20,
                List.of(64 << 10, 256 << 10, 1 << 20, 32 << 20), List.of(256, 8192, 16384), 8 << 20, 256 << 20,
                64L << 20, 200, false, CryptSpec.PLAIN_DEFAULT);
    }

    /** Tiny sizes that exercise every code path in a few seconds. */
    static BenchSettings quickDefaults() {
        return new BenchSettings(true, 2, false, 0, 4, 8L << 20, 64 << 10, 2, 1L << 20,
                List.of(64 << 10, 256 << 10), List.of(256, 16384), 256 << 10, 2 << 20, 4L << 20, 20, false,
                CryptSpec.PLAIN_DEFAULT);
    }

    List<String> describe() {
        List<String> lines = new ArrayList<>();
        lines.add("mode: " + (quick ? "QUICK (tiny sizes, figures are meaningless)" : "full")
                + "; repeats: " + repeat + " timed after 1 warm-up; members: " + (direct ? "O_DIRECT" : "page cache")
                + (memberBytesPerSecond > 0 ? ", each paced like a disk of " + memberBytesPerSecond / 1_000_000 + " MB/s" : ""));
        lines.add("raid5 members: " + members + " x " + Sizes.format(memberBytes) + ", chunk " + Sizes.format(chunkBytes)
                + ", queue depth " + queueDepth + ", " + Sizes.format(bytesPerRun) + " per timed run");
        lines.add("raid5-vs-raid0: chunks " + formatAll(chunkSizes) + ", stripe cache rows " + stripeCacheSizes
                + ", random reads " + Sizes.format(randomReadBytes) + " x14, large reads " + Sizes.format(largeReadBytes) + " x1");
        lines.add("readahead budget " + Sizes.format(readaheadBytes) + "; xor " + xorMillis + " ms per routine and repeat"
                + (iscsi ? "; end to end through iSCSI with qemu-img bench" : ""));
        lines.add("alignment encrypted stacks: " + cipher + ", " + cipherKeyBytes() * 8 + "-bit key, 512-byte sectors");
        return lines;
    }

    /** The key size a server LUN gets by default for {@link #cipher}: 512 bits for XTS (two keys), 256 for CBC. */
    int cipherKeyBytes() {
        return cipher.mode() == CryptSpec.Mode.XTS ? 64 : 32;
    }

    private static String formatAll(List<Integer> sizes) {
        List<String> out = new ArrayList<>();
        for (int s : sizes) {
            out.add(Sizes.format(s));
        }
        return String.join(",", out);
    }
}
