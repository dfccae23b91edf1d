/**
 * The iSCSI vocabulary (RFC 7143) that the target (target-server's {@code iscsi} package) and the project's
 * initiator share, so that a fix in one reaches the other: the Basic Header Segment's opcodes, flag bits and
 * field offsets ({@link io.stripestack.iscsi.proto.Bhs}), CRC32C digests
 * ({@link io.stripestack.iscsi.proto.Crc32cDigest}), the key=value text codec
 * ({@link io.stripestack.iscsi.proto.TextKeys}), CHAP ({@link io.stripestack.iscsi.proto.Chap}) and the table of
 * login and text keys with their result functions ({@link io.stripestack.iscsi.proto.LoginKey},
 * {@link io.stripestack.iscsi.proto.KeyNegotiation}). It knows no sockets and no Netty: the initiator works on
 * {@link java.nio.ByteBuffer}s, the target on Netty ByteBufs through thin views that use these offsets.
 */
package io.stripestack.iscsi.proto;
