package io.stripestack.crypto.luks;

import static io.stripestack.crypto.luks.Luks2Copies.corrupt;

import io.stripestack.crypto.CryptSpec;
import io.stripestack.crypto.luks.LuksHeader.Keyslot;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The validated, typed view of a LUKS2 header's JSON metadata, and the checks that produce it. This is the
 * one place that decides what the JSON may say: a header from a damaged disk or a hostile image must end in
 * a refusal naming the member at fault before any of its values reaches arithmetic or an allocation, so
 * every member Luks2Header relies on is checked for presence, type and range here, together. Members it
 * does not interpret (tokens, flags) stay in the JSON tree untouched.
 */
record Luks2Metadata(long jsonSize, long keyslotsSize, String segmentId, long segmentOffset, long segmentSize,
                     String encryption, int sectorSize, Map<Integer, Slot> slots, Map<String, VolumeDigest> digests) {
    /** LUKS2's keyslot count and the alignment of every area of the binary header. */
    static final int KEYSLOTS = 32;
    static final long AREA_ALIGN = 4096;
    /** cryptsetup's largest volume key (4096 bits). */
    static final int MAX_KEY_BYTES = 512;
    /** cryptsetup refuses Argon2 memory above 4 GiB. */
    static final int MAX_ARGON2_MEMORY_KIB = 4 * 1024 * 1024;

    /** A keyslot as the JSON describes it, with the digest it is bound to (null: unbound, unusable). */
    record Slot(Keyslot keyslot, int priority, String digestId) {
    }

    /** The digest that verifies a volume key. */
    record VolumeDigest(LuksHash hash, int iterations, byte[] salt, byte[] digest, List<String> segments) {
    }

    /**
     * Checks {@code json} against a header of {@code hdrSize}-byte copies. Reading, creating and every commit
     * go through this, so what is written is held to the same rules as what is read.
     *
     * @param name the header's name for messages (device and which header)
     */
    static Luks2Metadata validate(Map<String, Object> json, long hdrSize, String name) throws LuksHeaderException {
        Fields f = new Fields(name);
        Map<String, Object> config = f.map(json, "config");
        long jsonSize = f.decimal(config, "json_size", "config");
        long keyslotsSize = f.decimal(config, "keyslots_size", "config");
        if (jsonSize != hdrSize - Luks2Copies.BINARY_BYTES) {
            throw f.invalid("config.json_size " + jsonSize + " does not match the header size " + hdrSize + " minus 4096");
        }
        if (keyslotsSize % AREA_ALIGN != 0) {
            throw f.invalid("config.keyslots_size " + keyslotsSize + " is not a multiple of 4096");
        }
        if (config.get("requirements") instanceof Map<?, ?> requirements && requirements.get("mandatory") instanceof List<?> mandatory
                && !mandatory.isEmpty()) {
            throw new LuksHeaderException(name + " requires features " + mandatory + " that this implementation does not "
                    + "support (e.g. an unfinished reencryption); finish that with cryptsetup first");
        }
        f.map(json, "tokens");

        Map<String, Object> segments = f.map(json, "segments");
        if (segments.size() != 1) {
            throw new LuksHeaderException(name + " has " + segments.size() + " data segments; exactly one is supported "
                    + "(more mean an unfinished reencryption: finish it with cryptsetup first)");
        }
        String segmentId = segments.keySet().iterator().next();
        String where = "segments." + segmentId;
        Map<String, Object> segment = f.map(segments, segmentId);
        if (!"crypt".equals(f.string(segment, "type", where))) {
            throw new LuksHeaderException(name + ": segment type '" + segment.get("type") + "' is not supported (only crypt)");
        }
        if (segment.containsKey("integrity")) {
            throw new LuksHeaderException(name + " uses dm-integrity (authenticated encryption), which is not supported");
        }
        long segmentOffset = f.decimal(segment, "offset", where);
        String sizeText = f.string(segment, "size", where);
        long segmentSize = "dynamic".equals(sizeText) ? -1 : f.decimal(segment, "size", where);
        if (f.decimal(segment, "iv_tweak", where) != 0) {
            throw new LuksHeaderException(name + ": a non-zero iv_tweak (reencryption leftover) is not supported");
        }
        String encryption = f.string(segment, "encryption", where);
        int sectorSize = f.integer(segment, "sector_size", where);
        if (sectorSize < 512 || sectorSize > 4096 || Integer.bitCount(sectorSize) != 1) {
            throw f.invalid(where + ".sector_size " + sectorSize + " is not 512, 1024, 2048 or 4096");
        }
        if (segmentOffset % sectorSize != 0 || segmentOffset % LuksIo.SECTOR != 0) {
            throw f.invalid(where + ".offset " + segmentOffset + " is not a multiple of the sector size " + sectorSize);
        }
        if (2 * hdrSize + keyslotsSize > segmentOffset) {
            throw f.invalid("the keyslots area ends at byte " + (2 * hdrSize + keyslotsSize) + ", beyond the data offset "
                    + segmentOffset);
        }
        CryptSpec segmentSpec = f.spec(encryption, where);

        Map<String, VolumeDigest> digests = new LinkedHashMap<>();
        Map<String, String> digestOfSlot = new HashMap<>();
        Map<String, Object> digestMap = f.map(json, "digests");
        for (String id : digestMap.keySet()) {
            String at = "digests." + id;
            Map<String, Object> d = f.map(digestMap, id);
            if (!"pbkdf2".equals(f.string(d, "type", at))) {
                throw new LuksHeaderException(name + ": digest type '" + d.get("type") + "' is not supported (only pbkdf2)");
            }
            for (String slot : f.stringList(d, "keyslots", at)) {
                if (digestOfSlot.put(slot, id) != null) {
                    throw f.invalid("keyslot " + slot + " is bound to two digests");
                }
            }
            List<String> boundSegments = f.stringList(d, "segments", at);
            for (String seg : boundSegments) {
                if (!segments.containsKey(seg)) {
                    throw f.invalid(at + " names segment " + seg + ", which does not exist");
                }
            }
            byte[] digest = f.base64(d, "digest", at);
            if (digest.length == 0 || digest.length > 64) {
                throw f.invalid(at + ".digest has " + digest.length + " bytes");
            }
            digests.put(id, new VolumeDigest(f.hash(d, "hash", at), f.positive(d, "iterations", at),
                    f.base64(d, "salt", at), digest, boundSegments));
        }

        Map<Integer, Slot> slots = new LinkedHashMap<>();
        Map<String, Object> keyslots = f.map(json, "keyslots");
        long areaStart = 2 * hdrSize;
        long areaEnd = areaStart + keyslotsSize;
        List<long[]> areas = new ArrayList<>();
        for (String id : keyslots.keySet()) {
            String at = "keyslots." + id;
            int index;
            try {
                index = Integer.parseInt(id);
            } catch (NumberFormatException e) {
                throw f.invalid("keyslot name '" + id + "' is not a number");
            }
            if (index < 0 || index >= KEYSLOTS || !Integer.toString(index).equals(id)) {
                throw f.invalid("keyslot name '" + id + "' is not one of 0.." + (KEYSLOTS - 1));
            }
            Map<String, Object> k = f.map(keyslots, id);
            if (!"luks2".equals(f.string(k, "type", at))) {
                throw new LuksHeaderException(name + ": keyslot " + id + " has type '" + k.get("type")
                        + "', not supported (only luks2; 'reencrypt' means an unfinished reencryption)");
            }
            int keyBytes = f.positive(k, "key_size", at);
            if (keyBytes > MAX_KEY_BYTES) {
                throw f.invalid(at + ".key_size " + keyBytes + " exceeds " + MAX_KEY_BYTES + " bytes");
            }
            Map<String, Object> af = f.map(k, "af");
            if (!"luks1".equals(f.string(af, "type", at + ".af"))) {
                throw f.invalid(at + ".af.type is not luks1");
            }
            int stripes = f.integer(af, "stripes", at + ".af");
            if (stripes != AfSplitter.LUKS_STRIPES) {
                throw f.invalid(at + ".af.stripes is " + stripes + ", not 4000");
            }
            LuksHash afHash = f.hash(af, "hash", at + ".af");
            Map<String, Object> area = f.map(k, "area");
            if (!"raw".equals(f.string(area, "type", at + ".area"))) {
                throw f.invalid(at + ".area.type is not raw");
            }
            long offset = f.decimal(area, "offset", at + ".area");
            long size = f.decimal(area, "size", at + ".area");
            String areaCipher = f.string(area, "encryption", at + ".area");
            int areaKeyBytes = f.positive(area, "key_size", at + ".area");
            try {
                f.spec(areaCipher, at + ".area").checkKeyLength(areaKeyBytes);
            } catch (IllegalArgumentException e) {
                throw new LuksHeaderException(name + ": keyslot " + id + " area: " + e.getMessage());
            }
            long needed = LuksIo.roundUp(AfSplitter.splitLength(keyBytes, stripes), LuksIo.SECTOR);
            if (offset % LuksIo.SECTOR != 0 || offset < areaStart || size < needed || offset + size > areaEnd) {
                throw f.invalid(at + ".area [" + offset + ", " + (offset + size) + ") does not hold " + needed
                        + " bytes inside the keyslots area [" + areaStart + ", " + areaEnd + ")");
            }
            for (long[] other : areas) {
                if (offset < other[1] && other[0] < offset + size) {
                    throw f.invalid(at + ".area overlaps another keyslot's area");
                }
            }
            areas.add(new long[] {offset, offset + size});
            Kdf kdf = f.kdf(f.map(k, "kdf"), at + ".kdf");
            byte[] salt = f.base64(f.map(k, "kdf"), "salt", at + ".kdf");
            int priority = k.containsKey("priority") ? f.integer(k, "priority", at) : 1;
            if (priority < 0 || priority > 2) {
                throw f.invalid(at + ".priority " + priority + " is not 0 (ignore), 1 (normal) or 2 (prefer)");
            }
            String digestId = digestOfSlot.get(id);
            if (digestId != null && !digests.get(digestId).segments().contains(segmentId)) {
                digestId = null; // bound to a digest of no data segment: cannot unlock the volume
            }
            slots.put(index, new Slot(new Keyslot(index, kdf, salt, offset, size, areaCipher, areaKeyBytes, keyBytes,
                    stripes, afHash), priority, digestId));
        }
        for (String slot : digestOfSlot.keySet()) {
            if (!keyslots.containsKey(slot)) {
                throw f.invalid("a digest names keyslot " + slot + ", which does not exist");
            }
        }
        int volumeKeyBytes = -1;
        for (Slot slot : slots.values()) {
            if (slot.digestId() != null) {
                if (volumeKeyBytes >= 0 && volumeKeyBytes != slot.keyslot().keyBytes()) {
                    throw f.invalid("keyslots of the data segment disagree on the volume key size");
                }
                volumeKeyBytes = slot.keyslot().keyBytes();
            }
        }
        if (volumeKeyBytes > 0) {
            try {
                segmentSpec.checkKeyLength(volumeKeyBytes);
            } catch (IllegalArgumentException e) {
                throw new LuksHeaderException(name + ": " + e.getMessage());
            }
        }
        return new Luks2Metadata(jsonSize, keyslotsSize, segmentId, segmentOffset, segmentSize, encryption, sectorSize,
                slots, digests);
    }

    /** Typed access to JSON members with error messages naming the member. */
    private record Fields(String name) {
        LuksHeaderException invalid(String what) {
            return corrupt(name, "its JSON metadata is invalid: " + what);
        }

        Map<String, Object> map(Map<String, Object> parent, String key) throws LuksHeaderException {
            if (parent.get(key) instanceof Map<?, ?> m) {
                @SuppressWarnings("unchecked")
                Map<String, Object> typed = (Map<String, Object>) m;
                for (Object k : typed.keySet()) {
                    if (!(k instanceof String)) {
                        throw invalid("member names under " + key + " are not strings");
                    }
                }
                return typed;
            }
            throw invalid("object '" + key + "' is missing");
        }

        String string(Map<String, Object> parent, String key, String where) throws LuksHeaderException {
            if (parent.get(key) instanceof String s) {
                return s;
            }
            throw invalid(where + "." + key + " is missing or not a string");
        }

        int integer(Map<String, Object> parent, String key, String where) throws LuksHeaderException {
            if (parent.get(key) instanceof Integer i) {
                return i;
            }
            throw invalid(where + "." + key + " is missing or not a 32-bit number");
        }

        int positive(Map<String, Object> parent, String key, String where) throws LuksHeaderException {
            int value = integer(parent, key, where);
            if (value < 1) {
                throw invalid(where + "." + key + " is " + value + ", not positive");
            }
            return value;
        }

        /** A 64-bit unsigned count stored as a decimal string, as LUKS2 stores offsets and sizes. */
        long decimal(Map<String, Object> parent, String key, String where) throws LuksHeaderException {
            String text = string(parent, key, where);
            if (text.isEmpty() || text.length() > 18 || !text.chars().allMatch(c -> c >= '0' && c <= '9')) {
                throw invalid(where + "." + key + " '" + text + "' is not a decimal byte count");
            }
            return Long.parseLong(text);
        }

        List<String> stringList(Map<String, Object> parent, String key, String where) throws LuksHeaderException {
            if (parent.get(key) instanceof List<?> list) {
                List<String> out = new ArrayList<>(list.size());
                for (Object o : list) {
                    if (!(o instanceof String s)) {
                        throw invalid(where + "." + key + " holds a non-string");
                    }
                    out.add(s);
                }
                return out;
            }
            throw invalid(where + "." + key + " is missing or not a list");
        }

        byte[] base64(Map<String, Object> parent, String key, String where) throws LuksHeaderException {
            try {
                return Base64.getDecoder().decode(string(parent, key, where));
            } catch (IllegalArgumentException e) {
                throw invalid(where + "." + key + " is not base64");
            }
        }

        LuksHash hash(Map<String, Object> parent, String key, String where) throws LuksHeaderException {
            try {
                return LuksHash.forName(string(parent, key, where));
            } catch (IllegalArgumentException e) {
                throw new LuksHeaderException(name + ": " + where + ": " + e.getMessage());
            }
        }

        CryptSpec spec(String spec, String where) throws LuksHeaderException {
            try {
                return CryptSpec.parse(spec);
            } catch (IllegalArgumentException e) {
                throw new LuksHeaderException(name + ": " + where + ": " + e.getMessage());
            }
        }

        Kdf kdf(Map<String, Object> kdf, String where) throws LuksHeaderException {
            String type = string(kdf, "type", where);
            try {
                switch (type) {
                    case "pbkdf2":
                        return new Kdf.Pbkdf2(hash(kdf, "hash", where), positive(kdf, "iterations", where));
                    case "argon2i":
                    case "argon2id":
                        int memory = positive(kdf, "memory", where);
                        if (memory > MAX_ARGON2_MEMORY_KIB) {
                            throw invalid(where + ".memory " + memory + " KiB exceeds 4 GiB");
                        }
                        return new Kdf.Argon2(type.equals("argon2id"), positive(kdf, "time", where), memory,
                                positive(kdf, "cpus", where));
                    default:
                        throw new LuksHeaderException(name + ": " + where + ".type '" + type
                                + "' is not supported (pbkdf2, argon2i, argon2id)");
                }
            } catch (IllegalArgumentException e) {
                throw invalid(where + ": " + e.getMessage());
            }
        }
    }
}
