package io.stripestack.targetserver.scsi;

import io.netty.buffer.ByteBuf;

/**
 * Moving a command's data, the same for every command family: Data-In truncated to the allocation length,
 * and the checks that the Data-Out holds what the CDB describes.
 *
 * <p>Stateless; called on the worker thread that runs the command, which alone touches the command then.
 */
final class CommandData {
    private CommandData() {
    }

    /** Sends {@code data} truncated to the allocation length (SPC-4 4.2.5.6). */
    static void respond(ScsiCommand cmd, byte[] data, int allocationLength) {
        cmd.setCommandTransferLength(allocationLength);
        int n = Math.min(data.length, allocationLength);
        if (n == 0) {
            cmd.complete(null);
            return;
        }
        ByteBuf buf = cmd.allocator().buffer(n, n);
        buf.writeBytes(data, 0, n);
        cmd.complete(buf);
    }

    /**
     * The Data-Out buffer when it holds at least {@code bytes}; an initiator that sent less (its Expected
     * Data Transfer Length was shorter than the CDB's transfer length) gets INVALID FIELD IN INFORMATION
     * UNIT, and nothing is written.
     */
    static ByteBuf requireDataOut(ScsiCommand cmd, int bytes) {
        ByteBuf data = cmd.dataOut();
        if (data == null || data.readableBytes() < bytes) {
            throw SenseException.invalidFieldInInformationUnit(
                    "Data-Out holds " + (data == null ? 0 : data.readableBytes()) + " of " + bytes + " bytes");
        }
        return data;
    }

    /**
     * The Data-Out buffer when it holds exactly {@code bytes}: WRITE SAME's single block has no meaning with
     * extra bytes, so unlike READ/WRITE a longer Data-Out is refused.
     */
    static ByteBuf requireExactDataOut(ScsiCommand cmd, int bytes) {
        ByteBuf data = requireDataOut(cmd, bytes);
        if (data.readableBytes() != bytes) {
            throw SenseException.invalidFieldInInformationUnit(
                    "Data-Out holds " + data.readableBytes() + " bytes, the CDB says " + bytes);
        }
        return data;
    }

    /** A copy of a (small) parameter list from Data-Out. */
    static byte[] parameterList(ScsiCommand cmd, int length) {
        ByteBuf data = requireDataOut(cmd, length);
        byte[] params = new byte[length];
        data.getBytes(data.readerIndex(), params);
        return params;
    }
}
