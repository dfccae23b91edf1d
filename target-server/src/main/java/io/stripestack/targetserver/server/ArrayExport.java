package io.stripestack.targetserver.server;

import io.stripestack.blockdev.ForwardingBlockDevice;
import io.stripestack.raid5.Raid5Array;

/**
 * An array as the base of a LUN's chain. Closing the chain (a LUN deleted at run time) must not close the
 * array: the array outlives its LUN (its controls stay registered, and another LUN may export it later), and the
 * server closes it at shutdown. Every other call goes to the array.
 *
 * <p>Concurrency: no state of its own; as thread-safe as the array.
 */
final class ArrayExport extends ForwardingBlockDevice {
    private final Raid5Array array;

    ArrayExport(Raid5Array array) {
        super(array);
        this.array = array;
    }

    Raid5Array array() {
        return array;
    }

    /** Leaves the array open; the LUN's layers above were flushed by whoever closes the chain. */
    @Override
    public void close() {
    }
}
