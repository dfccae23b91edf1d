package io.stripestack.raid5;

import io.stripestack.blockdev.ForwardingBlockDevice;

/**
 * An array as the base of a LUN's chain (the server's LUN over an array is Readahead(Crypto(ArrayExport(array))), so
 * the chain runs down through the layers into this module and never back up). Closing the chain (a LUN deleted at run time) must not close the
 * array: the array outlives its LUN (its controls stay registered, and another LUN may export it later), and the
 * server closes it at shutdown. Every other call goes to the array.
 *
 * <p>Concurrency: no state of its own; as thread-safe as the array.
 */
public final class ArrayExport extends ForwardingBlockDevice {
    private final Raid5Array array;

    public ArrayExport(Raid5Array array) {
        super(array);
        this.array = array;
    }

    public Raid5Array array() {
        return array;
    }

    /** Leaves the array open; the LUN's layers above were flushed by whoever closes the chain. */
    @Override
    public void close() {
    }
}
