package io.stripestack.targetserver.scsi;

/**
 * Builds the INQUIRY data of a logical unit: standard data (SPC-4 6.6.2) and the VPD pages Supported
 * Pages (0x00), Unit Serial Number (0x80), Device Identification (0x83), Third-party Copy (0x8F), Block Limits
 * (0xB0), Block Device Characteristics (0xB1) and Logical Block Provisioning (0xB2, only when UNMAP is offered).
 *
 * <p>Every page depends only on values fixed at construction, so the logical unit builds each once and
 * serves copies of the bytes; nothing here is shared mutable state.
 */
final class InquiryData {
    private InquiryData() {
    }

    static final int VPD_SUPPORTED_PAGES = 0x00;
    static final int VPD_UNIT_SERIAL_NUMBER = 0x80;
    static final int VPD_DEVICE_IDENTIFICATION = 0x83;
    static final int VPD_THIRD_PARTY_COPY = 0x8F;
    static final int VPD_BLOCK_LIMITS = 0xB0;
    static final int VPD_BLOCK_DEVICE_CHARACTERISTICS = 0xB1;
    static final int VPD_LOGICAL_BLOCK_PROVISIONING = 0xB2;

    /** SCSI protocol identifier of iSCSI (SPC-4 7.6.1), used with PIV=1 designators. */
    private static final int PROTOCOL_ISCSI = 0x5;

    /** Version descriptors (SPC-4 table 141): SAM-5, iSCSI (no version claimed), SPC-4, SBC-3. */
    private static final int[] VERSION_DESCRIPTORS = {0x00A0, 0x0960, 0x0460, 0x04C0};

    /** Standard INQUIRY data of a direct-access block device; 96 bytes with version descriptors. */
    static byte[] standard(LogicalUnitIdentity id) {
        byte[] d = new byte[96];
        d[0] = 0x00;              // peripheral qualifier 0 (connected), device type 0 (direct access block)
        d[1] = 0x00;              // RMB=0: not removable
        d[2] = 0x06;              // VERSION: SPC-4
        d[3] = 0x12;              // HISUP=1, RESPONSE DATA FORMAT=2
        d[4] = (byte) (d.length - 5);
        d[5] = 0x08;              // 3PC: the unit has a copy manager (EXTENDED COPY)
        d[7] = 0x02;              // CMDQUE: full task management model
        Cdb.putAscii(d, 8, id.vendorId(), 8);
        Cdb.putAscii(d, 16, id.productId(), 16);
        Cdb.putAscii(d, 32, id.revision(), 4);
        for (int i = 0; i < VERSION_DESCRIPTORS.length; i++) {
            Cdb.put16(d, 58 + 2 * i, VERSION_DESCRIPTORS[i]);
        }
        return d;
    }

    /** Standard INQUIRY data for a LUN the target does not have: qualifier 011b, device type 1Fh (SPC-4 6.6.2). */
    static byte[] notConnected() {
        byte[] d = new byte[36];
        d[0] = 0x7F;
        d[2] = 0x06;
        d[3] = 0x12;
        d[4] = (byte) (d.length - 5);
        return d;
    }

    static byte[] supportedPages(boolean provisioning) {
        int[] pages = provisioning
                ? new int[] {VPD_SUPPORTED_PAGES, VPD_UNIT_SERIAL_NUMBER, VPD_DEVICE_IDENTIFICATION,
                    VPD_THIRD_PARTY_COPY, VPD_BLOCK_LIMITS, VPD_BLOCK_DEVICE_CHARACTERISTICS,
                    VPD_LOGICAL_BLOCK_PROVISIONING}
                : new int[] {VPD_SUPPORTED_PAGES, VPD_UNIT_SERIAL_NUMBER, VPD_DEVICE_IDENTIFICATION,
                    VPD_THIRD_PARTY_COPY, VPD_BLOCK_LIMITS, VPD_BLOCK_DEVICE_CHARACTERISTICS};
        byte[] d = new byte[4 + pages.length];
        d[1] = VPD_SUPPORTED_PAGES;
        Cdb.put16(d, 2, pages.length);
        for (int i = 0; i < pages.length; i++) {
            d[4 + i] = (byte) pages[i];
        }
        return d;
    }

    static byte[] unitSerialNumber(LogicalUnitIdentity id) {
        String serial = id.serialNumber();
        byte[] d = new byte[4 + serial.length()];
        d[1] = (byte) VPD_UNIT_SERIAL_NUMBER;
        Cdb.put16(d, 2, serial.length());
        Cdb.putAscii(d, 4, serial, serial.length());
        return d;
    }

    /**
     * Device identification: the logical unit's NAA designator (binary), its T10 vendor ID based designator
     * (vendor id + product id + serial, ASCII) and the relative target port (port 1, the target's only port).
     */
    static byte[] deviceIdentification(LogicalUnitIdentity id) {
        byte[] naa = id.naaBytes();
        String t10 = pad(id.vendorId(), 8) + pad(id.productId(), 16) + id.serialNumber();
        int length = 4 + (4 + naa.length) + (4 + t10.length()) + (4 + 4);
        byte[] d = new byte[length];
        d[1] = (byte) VPD_DEVICE_IDENTIFICATION;
        Cdb.put16(d, 2, length - 4);
        int p = 4;
        d[p] = 0x01;              // code set: binary
        d[p + 1] = 0x03;          // association: logical unit; designator type: NAA
        d[p + 3] = (byte) naa.length;
        System.arraycopy(naa, 0, d, p + 4, naa.length);
        p += 4 + naa.length;
        d[p] = 0x02;              // code set: ASCII
        d[p + 1] = 0x01;          // association: logical unit; designator type: T10 vendor ID based
        d[p + 3] = (byte) t10.length();
        Cdb.putAscii(d, p + 4, t10, t10.length());
        p += 4 + t10.length();
        d[p] = (byte) (PROTOCOL_ISCSI << 4 | 0x01); // binary
        d[p + 1] = (byte) 0x94;   // PIV=1, association: target port, designator type: relative target port
        d[p + 3] = 4;
        Cdb.put16(d, p + 6, 1);
        return d;
    }

    /**
     * Third-party Copy (SPC-4 7.8.17): the copy manager's descriptors Supported Commands (EXTENDED COPY(LID1),
     * RECEIVE COPY RESULTS' COPY STATUS and OPERATING PARAMETERS), Parameter Data, Supported Descriptors,
     * Supported CSCD Descriptor IDs (none) and General Copy Operations, with the limits of
     * {@link CopyParameterList}, {@link CopyManager} and {@link CopyLimits} that RECEIVE COPY OPERATING PARAMETERS
     * reports too.
     */
    static byte[] thirdPartyCopy(int blockSize) {
        byte[] supportedCommands = {3 + 4,
            (byte) Opcodes.EXTENDED_COPY, 1, Opcodes.SA_EXTENDED_COPY_LID1,
            (byte) Opcodes.RECEIVE_COPY_RESULTS, 2, Opcodes.SA_COPY_STATUS,
            Opcodes.SA_RECEIVE_COPY_OPERATING_PARAMETERS};
        byte[] parameterData = new byte[28];
        Cdb.put16(parameterData, 4, CopyParameterList.MAX_TARGET_DESCRIPTORS);
        Cdb.put16(parameterData, 6, CopyParameterList.MAX_SEGMENT_DESCRIPTORS);
        Cdb.put32(parameterData, 8, CopyParameterList.MAX_DESCRIPTOR_LIST_LENGTH);
        // MAXIMUM INLINE DATA LENGTH (bytes 12-15): 0.
        byte[] supportedDescriptors = {2, CopyParameterList.BLOCK_TO_BLOCK,
            (byte) CopyParameterList.IDENTIFICATION_DESCRIPTOR};
        byte[] supportedCscdIds = new byte[2]; // SUPPORTED CSCD IDS LIST LENGTH 0
        byte[] generalCopyOperations = new byte[32];
        Cdb.put32(generalCopyOperations, 0, CopyLimits.CONCURRENT_COPIES);    // TOTAL CONCURRENT COPIES
        Cdb.put32(generalCopyOperations, 4, CopyLimits.CONCURRENT_COPIES);    // MAXIMUM IDENTIFIED CONCURRENT COPIES
        Cdb.put32(generalCopyOperations, 8, CopyManager.maxSegmentBytes(blockSize));
        generalCopyOperations[12] = (byte) Integer.numberOfTrailingZeros(blockSize); // DATA SEGMENT GRANULARITY
        // INLINE DATA GRANULARITY (byte 13): 0.
        byte[][] descriptors = {
            thirdPartyCopyDescriptor(0x0001, supportedCommands),
            thirdPartyCopyDescriptor(0x0004, parameterData),
            thirdPartyCopyDescriptor(0x0008, supportedDescriptors),
            thirdPartyCopyDescriptor(0x000C, supportedCscdIds),
            thirdPartyCopyDescriptor(0x8001, generalCopyOperations),
        };
        int length = 4;
        for (byte[] descriptor : descriptors) {
            length += descriptor.length;
        }
        byte[] d = new byte[length];
        d[1] = (byte) VPD_THIRD_PARTY_COPY;
        Cdb.put16(d, 2, length - 4);
        int at = 4;
        for (byte[] descriptor : descriptors) {
            System.arraycopy(descriptor, 0, d, at, descriptor.length);
            at += descriptor.length;
        }
        return d;
    }

    /** A third-party copy descriptor: type, length, and {@code body} padded to a multiple of four bytes. */
    private static byte[] thirdPartyCopyDescriptor(int type, byte[] body) {
        int padded = (body.length + 3) & ~3;
        byte[] d = new byte[4 + padded];
        Cdb.put16(d, 0, type);
        Cdb.put16(d, 2, padded);
        System.arraycopy(body, 0, d, 4, body.length);
        return d;
    }

    /** Block Limits (SBC-3 6.5.3). */
    static byte[] blockLimits(LogicalUnit lu) {
        byte[] d = new byte[64];
        d[1] = (byte) VPD_BLOCK_LIMITS;
        Cdb.put16(d, 2, d.length - 4);
        // WSNZ=0 (byte 4): a WRITE SAME of zero blocks writes to the end of the medium, within MAXIMUM WRITE SAME LENGTH.
        d[5] = (byte) LogicalUnit.MAX_COMPARE_AND_WRITE_BLOCKS;
        Cdb.put16(d, 6, lu.optimalGranularityBlocks());
        Cdb.put32(d, 8, lu.maxTransferBlocks());
        Cdb.put32(d, 12, lu.optimalTransferBlocks());
        if (lu.offersUnmap()) {
            Cdb.put32(d, 20, LogicalUnit.MAX_UNMAP_BLOCKS);
            Cdb.put32(d, 24, LogicalUnit.MAX_UNMAP_DESCRIPTORS);
            Cdb.put32(d, 28, lu.optimalGranularityBlocks());
        }
        Cdb.put64(d, 36, LogicalUnit.MAX_WRITE_SAME_BLOCKS);
        return d;
    }

    /** Block Device Characteristics (SBC-3 6.5.2): non-rotating medium, form factor not reported. */
    static byte[] blockDeviceCharacteristics() {
        byte[] d = new byte[64];
        d[1] = (byte) VPD_BLOCK_DEVICE_CHARACTERISTICS;
        Cdb.put16(d, 2, d.length - 4);
        Cdb.put16(d, 4, 0x0001);
        return d;
    }

    /**
     * Logical Block Provisioning (SBC-3 6.5.4): UNMAP and WRITE SAME(10/16) with UNMAP supported, thin
     * provisioned; LBPRZ when unmapped blocks read back as zeros.
     */
    static byte[] logicalBlockProvisioning(boolean readsZeroesAfterUnmap) {
        byte[] d = new byte[8];
        d[1] = (byte) VPD_LOGICAL_BLOCK_PROVISIONING;
        Cdb.put16(d, 2, d.length - 4);
        d[5] = (byte) (0x80 | 0x40 | 0x20 | (readsZeroesAfterUnmap ? 0x04 : 0)); // LBPU, LBPWS, LBPWS10, LBPRZ
        d[6] = 0x02;              // PROVISIONING TYPE: thin provisioned
        return d;
    }

    private static String pad(String s, int width) {
        StringBuilder b = new StringBuilder(width).append(s);
        while (b.length() < width) {
            b.append(' ');
        }
        return b.toString();
    }
}
