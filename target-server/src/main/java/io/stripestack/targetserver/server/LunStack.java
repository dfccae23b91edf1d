package io.stripestack.targetserver.server;

import io.stripestack.blockdev.BlockDevice;
import io.stripestack.readahead.ReadaheadBlockDevice;
import io.stripestack.crypto.CryptoBlockDevice;
import io.stripestack.raid5.ArrayExport;
import io.stripestack.raid5.Raid5Array;
import io.stripestack.targetserver.config.StripestackConfig.LunConfig;
import java.util.ArrayList;
import java.util.List;

/**
 * One LUN's chain of BlockDevices, top first. {@code crypto} and {@code readahead} are null when the
 * LUN has none; {@code base} is the file or RAM at the bottom, or the {@link ArrayExport} of an array (which
 * closing the chain leaves open).
 */
public record LunStack(String target, LunConfig config, BlockDevice top, ReadaheadBlockDevice readahead,
        CryptoBlockDevice crypto, BlockDevice base) {

    /** The layers from the top down to and including the base (members of an array excluded). */
    public List<BlockDevice> layers() {
        List<BlockDevice> out = new ArrayList<>();
        for (BlockDevice d = top; d != null; d = d.below()) {
            out.add(d);
            if (d == base) {
                break;
            }
        }
        return out;
    }

    /** The array this LUN exports, or null when it stands on a file or RAM. */
    public Raid5Array array() {
        return base instanceof ArrayExport export ? export.array() : null;
    }

    /** The chain in words, top first, e.g. {@code readahead(128 KiB) -> crypt(aes-xts-plain64, offset 0) -> md0}. */
    public String describe() {
        StringBuilder s = new StringBuilder();
        for (BlockDevice layer : layers()) {
            if (s.length() > 0) {
                s.append(" -> ");
            }
            s.append(layer == readahead ? "readahead(" + readahead.readAheadKb() + " KiB)"
                    : layer == crypto ? "crypt(" + crypto.cipher().spec() + ", offset " + crypto.offsetSectors() + ")"
                    : layer.name());
        }
        return s.toString();
    }

    /** The control path prefix of this LUN, e.g. {@code iqn.2026-11.io.stripestack:default/lun0}. */
    public String controlPath() {
        return target + "/lun" + config.lun();
    }
}
