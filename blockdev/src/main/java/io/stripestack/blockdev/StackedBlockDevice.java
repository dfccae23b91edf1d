package io.stripestack.blockdev;

import java.io.IOException;

/**
 * A device stacked on one device below that describes itself as that device does: its name, size, block size,
 * geometry and discard support are the device below's, and closing it closes the device below. The two
 * forwarding bases, {@link ForwardingBlockDevice} (the device below's counters) and
 * {@link MeteredForwardingBlockDevice} (its own), take this description from here, so it is written once;
 * a layer overrides only what it changes.
 */
public interface StackedBlockDevice extends BlockDevice {
    /** The device below; never null. */
    @Override
    BlockDevice below();

    @Override
    default String name() {
        return below().name();
    }

    @Override
    default long size() {
        return below().size();
    }

    @Override
    default int logicalBlockSize() {
        return below().logicalBlockSize();
    }

    @Override
    default Geometry geometry() {
        return below().geometry();
    }

    @Override
    default boolean supportsDiscard() {
        return below().supportsDiscard();
    }

    @Override
    default boolean discardZeroes() {
        return below().discardZeroes();
    }

    @Override
    default void close() throws IOException {
        below().close();
    }
}
