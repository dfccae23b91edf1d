package io.stripestack.targetserver.server;

import io.stripestack.blockdev.BlockDevice;
import io.stripestack.raid5.ArrayExport;
import io.stripestack.raid5.Raid5Array;
import io.stripestack.readahead.ReadaheadBudget;
import io.stripestack.targetserver.config.StripestackConfig.LunConfig;
import io.stripestack.targetserver.scsi.CopyTargets;
import io.stripestack.targetserver.scsi.LogicalUnit;
import io.stripestack.targetserver.scsi.LogicalUnitIdentity;
import java.io.Closeable;
import java.io.IOException;
import java.nio.file.Files;
import java.util.Map;
import java.util.Set;
import java.util.UUID;

/**
 * Builds one LUN, at start-up and at run time alike: its base (an array, through {@link ArrayExport}, a file or
 * RAM), its chain ({@link StackBuilder#buildLun}) and the SCSI logical unit on top. On failure nothing it opened
 * stays open.
 *
 * <p>Concurrency: used by one thread at a time (the starting thread, then the administration, which holds the
 * {@link LiveTargets} monitor); the array map is only read.
 */
final class LunFactory {
    private final Map<String, Raid5Array> arrays;
    private final Set<String> arraysCreatedAtStart;
    private final ReadaheadBudget readaheadBudget;

    LunFactory(Map<String, Raid5Array> arrays, Set<String> arraysCreatedAtStart, ReadaheadBudget readaheadBudget) {
        this.arrays = arrays;
        this.arraysCreatedAtStart = arraysCreatedAtStart;
        this.readaheadBudget = readaheadBudget;
    }

    /** A LUN's chain and the unit that serves it. */
    record BuiltLun(LunStack stack, LogicalUnit unit) {
    }

    /**
     * @param atStart whether the server is starting: an array created in this start counts as new (all zeros),
     *                so a missing key file may be generated for it; at run time only a new file or RAM is new
     */
    BuiltLun build(String iqn, LunConfig lc, CopyTargets copyTargets, boolean atStart) throws IOException {
        var backing = lc.backing();
        boolean baseIsNew = backing.ram() || (backing.array() != null ? atStart && arraysCreatedAtStart.contains(backing.array())
                : !Files.exists(backing.file()));
        Raid5Array array = backing.array() == null ? null : arrays.get(backing.array());
        BlockDevice base = array != null ? new ArrayExport(array) : StackBuilder.openBase(lc, arrays);
        try {
            LunStack stack = StackBuilder.buildLun(iqn, lc, base, baseIsNew, readaheadBudget);
            String stableName = iqn + "/lun" + lc.lun() + "/" + (array != null ? array.uuid() : base.name());
            LogicalUnit unit = new LogicalUnit(stack.top(), identity(stableName, lc.serial()), lc.readOnly(), copyTargets);
            return new BuiltLun(stack, unit);
        } catch (IOException | RuntimeException e) {
            closeQuietly(base, e); // an array stays open: ArrayExport does not close it
            throw e;
        }
    }

    private static LogicalUnitIdentity identity(String stableName, String serial) {
        UUID id = LogicalUnitIdentity.stableIdFromName(stableName);
        if (serial == null) {
            return LogicalUnitIdentity.of(id);
        }
        return new LogicalUnitIdentity(LogicalUnitIdentity.DEFAULT_VENDOR, LogicalUnitIdentity.DEFAULT_PRODUCT,
                LogicalUnitIdentity.DEFAULT_REVISION, serial, LogicalUnitIdentity.naaFrom(id));
    }

    private static void closeQuietly(Closeable c, Exception cause) {
        try {
            c.close();
        } catch (IOException | RuntimeException e) {
            cause.addSuppressed(e);
        }
    }
}
