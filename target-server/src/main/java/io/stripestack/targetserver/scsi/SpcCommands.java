package io.stripestack.targetserver.scsi;

/**
 * The primary commands (SPC-4) of one logical unit that concern the unit itself rather than its medium:
 * TEST UNIT READY, REQUEST SENSE, INQUIRY and its VPD pages, MODE SENSE and MODE SELECT, REPORT SUPPORTED
 * OPERATION CODES. The reservation commands are {@link Reservations}'; REPORT LUNS is answered by
 * {@link ScsiTarget} before any unit is chosen.
 *
 * <p>Concurrency: runs on the I/O worker threads that call {@link LogicalUnit#execute}, many at once. The
 * INQUIRY pages are built once here and never change; the state shared with other commands is the unit's
 * {@link ModePages} (volatile WCE and SWP; MODE SELECT serialized on its monitor) and {@link UnitAttentions}
 * (per-nexus queues with their own monitors).
 */
final class SpcCommands {
    private final LogicalUnit unit;
    private final ModePages modePages;
    private final UnitAttentions unitAttentions;

    private final byte[] standardInquiry;
    private final byte[] supportedVpdPages;
    private final byte[] unitSerialNumber;
    private final byte[] deviceIdentification;
    private final byte[] thirdPartyCopy;
    private final byte[] blockLimits;
    private final byte[] blockDeviceCharacteristics;
    private final byte[] logicalBlockProvisioning;

    /** Builds the INQUIRY pages from {@code unit}'s identity and geometry, which must be set already. */
    SpcCommands(LogicalUnit unit, ModePages modePages, UnitAttentions unitAttentions) {
        this.unit = unit;
        this.modePages = modePages;
        this.unitAttentions = unitAttentions;
        LogicalUnitIdentity identity = unit.identity();
        this.standardInquiry = InquiryData.standard(identity);
        this.supportedVpdPages = InquiryData.supportedPages(unit.offersUnmap());
        this.unitSerialNumber = InquiryData.unitSerialNumber(identity);
        this.deviceIdentification = InquiryData.deviceIdentification(identity);
        this.thirdPartyCopy = InquiryData.thirdPartyCopy(unit.blockSize());
        this.blockLimits = InquiryData.blockLimits(unit);
        this.blockDeviceCharacteristics = InquiryData.blockDeviceCharacteristics();
        this.logicalBlockProvisioning = unit.offersUnmap()
                ? InquiryData.logicalBlockProvisioning(unit.device().discardZeroes()) : null;
    }

    void testUnitReady(ScsiCommand cmd) {
        cmd.complete(null);
    }

    void requestSense(ScsiCommand cmd, byte[] cdb) {
        if ((cdb[1] & 0x01) != 0) {
            throw SenseException.invalidFieldInCdb(1, 0); // DESC: descriptor-format sense is not supported
        }
        int allocation = Cdb.u8(cdb, 4);
        int attention = unitAttentions.take(cmd.nexus());
        SenseException pending = attention >= 0 ? SenseException.unitAttention(attention) : SenseException.noSense();
        CommandData.respond(cmd, pending.toFixedFormat(), allocation);
    }

    void inquiry(ScsiCommand cmd, byte[] cdb) {
        int allocation = Cdb.u16(cdb, 3);
        boolean evpd = (cdb[1] & 0x01) != 0;
        if ((cdb[1] & 0x02) != 0) {
            throw SenseException.invalidFieldInCdb(1, 1); // CMDDT is obsolete
        }
        int page = Cdb.u8(cdb, 2);
        if (!evpd) {
            if (page != 0) {
                throw SenseException.invalidFieldInCdb(2, -1);
            }
            CommandData.respond(cmd, standardInquiry, allocation);
            return;
        }
        byte[] data = switch (page) {
            case InquiryData.VPD_SUPPORTED_PAGES -> supportedVpdPages;
            case InquiryData.VPD_UNIT_SERIAL_NUMBER -> unitSerialNumber;
            case InquiryData.VPD_DEVICE_IDENTIFICATION -> deviceIdentification;
            case InquiryData.VPD_THIRD_PARTY_COPY -> thirdPartyCopy;
            case InquiryData.VPD_BLOCK_LIMITS -> blockLimits;
            case InquiryData.VPD_BLOCK_DEVICE_CHARACTERISTICS -> blockDeviceCharacteristics;
            case InquiryData.VPD_LOGICAL_BLOCK_PROVISIONING -> logicalBlockProvisioning;
            default -> null;
        };
        if (data == null) {
            throw SenseException.invalidFieldInCdb(2, -1);
        }
        CommandData.respond(cmd, data, allocation);
    }

    void modeSense(ScsiCommand cmd, byte[] cdb, boolean ten) {
        boolean disableBlockDescriptors = (cdb[1] & 0x08) != 0;
        boolean longLba = ten && (cdb[1] & 0x10) != 0;
        int pc = (cdb[2] & 0xC0) >>> 6;
        byte[] pages = modePages.sense(cdb[2] & 0x3f, Cdb.u8(cdb, 3), pc, 2);
        int header = ten ? 8 : 4;
        int descriptor = disableBlockDescriptors ? 0 : longLba ? 16 : 8;
        byte[] d = new byte[header + descriptor + pages.length];
        int deviceSpecific = (unit.writeProtected() ? 0x80 : 0) | 0x10; // WP, DPOFUA
        if (ten) {
            Cdb.put16(d, 0, d.length - 2);
            d[3] = (byte) deviceSpecific;
            d[4] = (byte) (longLba ? 0x01 : 0);
            Cdb.put16(d, 6, descriptor);
        } else {
            d[0] = (byte) (d.length - 1);
            d[2] = (byte) deviceSpecific;
            d[3] = (byte) descriptor;
        }
        if (descriptor == 8) {
            Cdb.put32(d, header, Math.min(unit.blockCount(), 0xFFFFFFFFL));
            Cdb.put32(d, header + 4, unit.blockSize());
        } else if (descriptor == 16) {
            Cdb.put64(d, header, unit.blockCount());
            Cdb.put32(d, header + 12, unit.blockSize());
        }
        System.arraycopy(pages, 0, d, header + descriptor, pages.length);
        CommandData.respond(cmd, d, ten ? Cdb.u16(cdb, 7) : Cdb.u8(cdb, 4));
    }

    void modeSelect(ScsiCommand cmd, byte[] cdb, boolean ten) {
        if ((cdb[1] & 0x01) != 0) {
            throw SenseException.invalidFieldInCdb(1, 0); // SP: pages cannot be saved
        }
        int length = ten ? Cdb.u16(cdb, 7) : Cdb.u8(cdb, 4);
        cmd.setCommandTransferLength(length);
        if (length == 0) {
            cmd.complete(null);
            return;
        }
        byte[] params = CommandData.parameterList(cmd, length);
        int header = ten ? 8 : 4;
        if (length < header) {
            throw SenseException.parameterListLengthError();
        }
        int descriptorLength = ten ? Cdb.u16(params, 6) : Cdb.u8(params, 3);
        boolean longLba = ten && (params[4] & 0x01) != 0;
        int expectedDescriptor = longLba ? 16 : 8;
        if (descriptorLength != 0 && descriptorLength != expectedDescriptor) {
            throw SenseException.invalidFieldInParameterList(ten ? 6 : 3, -1);
        }
        if (header + descriptorLength > length) {
            throw SenseException.parameterListLengthError();
        }
        if (descriptorLength != 0) {
            long descriptorBlockSize = longLba ? Cdb.u32(params, header + 12) : Cdb.u24(params, header + 5);
            if (descriptorBlockSize != unit.blockSize()) {
                throw SenseException.invalidFieldInParameterList(header + (longLba ? 12 : 5), -1);
            }
        }
        if (modePages.select(params, header + descriptorLength, length)) {
            unitAttentions.raiseForOthers(cmd.nexus(), UnitAttentions.MODE_PARAMETERS_CHANGED);
        }
        cmd.complete(null);
    }

    void reportSupportedOperationCodes(ScsiCommand cmd, byte[] cdb) {
        SupportedOperations.report(cmd, cdb, unit);
    }
}
