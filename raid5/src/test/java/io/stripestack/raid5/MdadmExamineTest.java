package io.stripestack.raid5;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The real {@code mdadm --examine} reads the superblocks the engine writes. */
class MdadmExamineTest {
    @TempDir
    Path dir;

    static Path mdadm() {
        for (String candidate : List.of("/usr/sbin/mdadm", "/sbin/mdadm", "/usr/bin/mdadm")) {
            Path p = Path.of(candidate);
            if (Files.isExecutable(p)) {
                return p;
            }
        }
        if ("true".equals(System.getenv("CI"))) {
            fail("mdadm is not installed; CI requires it (apt-get install mdadm)");
        }
        Assumptions.abort("mdadm not installed");
        return null;
    }

    static String examine(Path member) throws IOException, InterruptedException {
        ProcessBuilder pb = new ProcessBuilder(mdadm().toString(), "--examine", member.toString()).redirectErrorStream(true);
        pb.environment().put("TZ", "UTC");      // times print as UTC, in the C locale's format
        pb.environment().put("LC_ALL", "C");
        Process p = pb.start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(30, TimeUnit.SECONDS));
        assertEquals(0, p.exitValue(), "mdadm --examine " + member + " failed:\n" + out);
        return out;
    }

    static String field(String examine, String name) {
        Matcher m = Pattern.compile("^\\s*" + Pattern.quote(name) + " : (.*)$", Pattern.MULTILINE).matcher(examine);
        assertTrue(m.find(), "no '" + name + "' in:\n" + examine);
        return m.group(1).trim();
    }

    /** A time as mdadm prints it ({@code ctime(3)} format, UTC under {@link #examine}). */
    static Instant examineTime(String value) {
        DateTimeFormatter format = DateTimeFormatter.ofPattern("EEE MMM d HH:mm:ss yyyy", Locale.ROOT);
        return LocalDateTime.parse(value.replaceAll("\\s+", " "), format).toInstant(ZoneOffset.UTC);
    }

    private List<Path> paths(int n) {
        List<Path> paths = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            paths.add(dir.resolve("m" + i + ".img"));
        }
        return paths;
    }

    @Test
    void examineShowsTheArrayOnEveryMember() throws Exception {
        List<Path> paths = paths(4);
        Raid5Config config = new Raid5Config("lun0", 64 * 1024, Raid5Layout.RIGHT_ASYMMETRIC, 2048);
        String uuid;
        try (Raid5Array array = Raid5Files.create(paths, 8 << 20, config, Raid5Options.defaults())) {
            uuid = array.uuid();
            array.write(0, ByteBuffer.allocate(4096));
        }
        for (int i = 0; i < paths.size(); i++) {
            String out = examine(paths.get(i));
            assertEquals("a92b4efc", field(out, "Magic"));
            assertEquals("1.2", field(out, "Version"));
            assertEquals("raid5", field(out, "Raid Level"));
            assertEquals("4", field(out, "Raid Devices"));
            assertEquals(uuid, field(out, "Array UUID"));
            assertTrue(field(out, "Name").startsWith("lun0"), out);
            assertEquals("64K", field(out, "Chunk Size"));
            assertEquals("right-asymmetric", field(out, "Layout"));
            assertEquals("clean", field(out, "State"));
            assertEquals("Active device " + i, field(out, "Device Role"));
            assertEquals("AAAA ('A' == active, '.' == missing, 'R' == replacing)", field(out, "Array State"));
            assertEquals("2048 sectors", field(out, "Data Offset"));
            assertEquals("8 sectors", field(out, "Super Offset"));
            assertTrue(field(out, "Checksum").endsWith("- correct"), out);
            // 8 MiB member - 1 MiB data offset = 7 MiB, rounded down to 64 KiB chunks: 7168 KiB per member.
            assertTrue(field(out, "Array Size").startsWith("21504 KiB"), out);
            assertEquals("2", field(out, "Events"), "opened active (1), closed clean (2): " + out);
        }
    }

    /** Creation and update times are the seconds now, as mdadm shows them (not a date in 2106). */
    @Test
    void examineShowsTimesOfNow() throws Exception {
        List<Path> paths = paths(3);
        Instant before = Instant.now();
        try (Raid5Array array = Raid5Files.create(paths, 4 << 20, Raid5Config.defaults("t").withChunk(16384),
                Raid5Options.defaults())) {
            array.write(0, ByteBuffer.allocate(4096));
        }
        String out = examine(paths.get(0));
        for (String name : List.of("Creation Time", "Update Time")) {
            Instant shown = examineTime(field(out, name));
            assertTrue(Math.abs(Duration.between(before, shown).toSeconds()) < 60,
                    name + " " + shown + " is not within a minute of " + before + ":\n" + out);
        }
        ByteBuffer block = ByteBuffer.allocate(Md1Superblock.BLOCK_BYTES).order(ByteOrder.LITTLE_ENDIAN);
        try (FileChannel ch = FileChannel.open(paths.get(0))) {
            ch.read(block, Md1Superblock.OFFSET_BYTES);
        }
        assertEquals(0, block.getLong(64) >>> 40, "ctime high 24 bits on disk");
        assertEquals(0, block.getLong(192) >>> 40, "utime high 24 bits on disk");
    }

    @Test
    void examineShowsAFailedMemberAndDegradedState() throws Exception {
        List<Path> paths = paths(3);
        try (Raid5Array array = Raid5Files.create(paths, 4 << 20, Raid5Config.defaults("deg").withChunk(16384),
                Raid5Options.defaults())) {
            array.failMember(1);
        }
        String out = examine(paths.get(0));
        assertEquals("A.A ('A' == active, '.' == missing, 'R' == replacing)", field(out, "Array State"));
        assertTrue(field(out, "Checksum").endsWith("- correct"), out);
        assertEquals("left-symmetric", field(out, "Layout"));
        String stale = examine(paths.get(1));
        long freshEvents = Long.parseLong(field(out, "Events"));
        long staleEvents = Long.parseLong(field(stale, "Events"));
        assertTrue(staleEvents < freshEvents, "failed member keeps its old event count: " + stale);
    }
}
