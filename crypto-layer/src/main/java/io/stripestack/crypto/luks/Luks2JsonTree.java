package io.stripestack.crypto.luks;

import io.stripestack.crypto.luks.LuksHeader.Keyslot;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Builds and edits the LUKS2 JSON tree as cryptsetup lays it out: the members a new header starts with, a
 * keyslot's entry, and dropping a keyslot from every list that names it. Edits change the parsed tree in
 * place rather than rebuilding it, so members this code does not interpret (tokens, config.flags) survive
 * every update. Nothing here checks the result: each commit runs the tree through Luks2Metadata first.
 */
final class Luks2JsonTree {
    private Luks2JsonTree() {
    }

    /** The JSON of a header with one crypt segment from {@code dataOffset} to the end, one digest and no keyslots. */
    static Map<String, Object> forNewHeader(long hdrSize, long keyslotsSize, String encryption, long dataOffset,
                                            int sectorSize, LuksHash digestHash, int digestIterations, byte[] digestSalt,
                                            byte[] digest) {
        Map<String, Object> json = new LinkedHashMap<>();
        json.put("keyslots", new LinkedHashMap<String, Object>());
        json.put("tokens", new LinkedHashMap<String, Object>());
        Map<String, Object> segment = new LinkedHashMap<>();
        segment.put("type", "crypt");
        segment.put("offset", Long.toString(dataOffset));
        segment.put("size", "dynamic");
        segment.put("iv_tweak", "0");
        segment.put("encryption", encryption);
        segment.put("sector_size", sectorSize);
        Map<String, Object> segments = new LinkedHashMap<>();
        segments.put("0", segment);
        json.put("segments", segments);
        Map<String, Object> d = new LinkedHashMap<>();
        d.put("type", "pbkdf2");
        d.put("keyslots", new ArrayList<Object>());
        d.put("segments", new ArrayList<Object>(List.of("0")));
        d.put("hash", digestHash.luksName());
        d.put("iterations", digestIterations);
        d.put("salt", Base64.getEncoder().encodeToString(digestSalt));
        d.put("digest", Base64.getEncoder().encodeToString(digest));
        Map<String, Object> digests = new LinkedHashMap<>();
        digests.put("0", d);
        json.put("digests", digests);
        Map<String, Object> config = new LinkedHashMap<>();
        config.put("json_size", Long.toString(hdrSize - Luks2Copies.BINARY_BYTES));
        config.put("keyslots_size", Long.toString(keyslotsSize));
        json.put("config", config);
        return json;
    }

    /** Adds {@code keyslot}'s entry (keyslots kept in number order) and binds it to digest {@code digestId}. */
    static void addKeyslot(Map<String, Object> json, Keyslot keyslot, String digestId) {
        Map<String, Object> entry = new LinkedHashMap<>();
        entry.put("type", "luks2");
        entry.put("key_size", keyslot.keyBytes());
        Map<String, Object> af = new LinkedHashMap<>();
        af.put("type", "luks1");
        af.put("stripes", keyslot.stripes());
        af.put("hash", keyslot.afHash().luksName());
        entry.put("af", af);
        Map<String, Object> area = new LinkedHashMap<>();
        area.put("type", "raw");
        area.put("offset", Long.toString(keyslot.areaOffset()));
        area.put("size", Long.toString(keyslot.areaLength()));
        area.put("encryption", keyslot.areaCipher());
        area.put("key_size", keyslot.areaKeyBytes());
        entry.put("area", area);
        Kdf kdf = keyslot.kdf();
        Map<String, Object> kdfJson = new LinkedHashMap<>();
        kdfJson.put("type", kdf.typeName());
        if (kdf instanceof Kdf.Pbkdf2 pbkdf2) {
            kdfJson.put("hash", pbkdf2.hash().luksName());
            kdfJson.put("iterations", pbkdf2.iterations());
        } else if (kdf instanceof Kdf.Argon2 argon2) {
            kdfJson.put("time", argon2.time());
            kdfJson.put("memory", argon2.memoryKiB());
            kdfJson.put("cpus", argon2.parallelism());
        }
        kdfJson.put("salt", Base64.getEncoder().encodeToString(keyslot.salt()));
        entry.put("kdf", kdfJson);

        Map<String, Object> keyslots = jsonMap(json, "keyslots");
        keyslots.put(Integer.toString(keyslot.index()), entry);
        json.put("keyslots", sortedByNumber(keyslots));
        List<Object> bound = jsonList(jsonMap(jsonMap(json, "digests"), digestId), "keyslots");
        bound.add(Integer.toString(keyslot.index()));
        bound.sort(Comparator.comparingInt(o -> Integer.parseInt((String) o)));
    }

    /** Removes keyslot {@code slot}, and its name from every digest (Luks2Metadata refuses a dangling one) and token. */
    static void removeKeyslot(Map<String, Object> json, int slot) {
        String id = Integer.toString(slot);
        jsonMap(json, "keyslots").remove(id);
        for (String group : new String[] {"digests", "tokens"}) {
            for (Object member : jsonMap(json, group).values()) {
                if (member instanceof Map<?, ?> m && m.get("keyslots") instanceof List<?> list) {
                    list.remove(id);
                }
            }
        }
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> jsonMap(Map<String, Object> parent, String key) {
        return (Map<String, Object>) parent.get(key);
    }

    @SuppressWarnings("unchecked")
    private static List<Object> jsonList(Map<String, Object> parent, String key) {
        return (List<Object>) parent.get(key);
    }

    private static Map<String, Object> sortedByNumber(Map<String, Object> members) {
        List<String> keys = new ArrayList<>(members.keySet());
        keys.sort(Comparator.comparingInt(Integer::parseInt));
        Map<String, Object> sorted = new LinkedHashMap<>();
        for (String k : keys) {
            sorted.put(k, members.get(k));
        }
        return sorted;
    }
}
