package io.stripestack.targetserver.server;

import io.stripestack.blockdev.BlockDevice;
import io.stripestack.readahead.ReadaheadBlockDevice;
import io.stripestack.crypto.CryptoBlockDevice;
import io.stripestack.targetserver.config.StripestackConfig.LunConfig;
import java.util.ArrayList;
import java.util.List;

/**
 * One LUN's chain of BlockDevices, top first. {@code crypto} and {@code readahead} are null when the
 * LUN has none; {@code base} is the array or file at the bottom (shared with nothing else).
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

    /** The control path prefix of this LUN, e.g. {@code iqn.2026-11.io.stripestack:default/lun0}. */
    public String controlPath() {
        return target + "/lun" + config.lun();
    }
}
