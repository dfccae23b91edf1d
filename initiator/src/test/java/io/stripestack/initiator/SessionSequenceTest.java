package io.stripestack.initiator;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

/** ExpStatSN starts after the final Login Response's StatSN and follows serial arithmetic from there. */
class SessionSequenceTest {

    @Test
    void expStatSnStartsAfterTheLoginResponse() {
        SessionSequence sequence = new SessionSequence();
        sequence.open(1, 64, 41);
        assertEquals(42, sequence.expStatSn(), "the first command acknowledges the login response's status");
        sequence.advanceStatSn(42);
        assertEquals(43, sequence.expStatSn());
        sequence.advanceStatSn(40);
        assertEquals(43, sequence.expStatSn(), "an older StatSN never moves it back");
    }

    /** A target whose StatSN starts at 2^31 or above: from 0, serial comparison would never move ExpStatSN. */
    @Test
    void aStatSnAboveTwoToTheThirtyFirstAdvancesToo() {
        SessionSequence sequence = new SessionSequence();
        int login = 0x9000_0000;
        sequence.open(1, 64, login);
        sequence.advanceStatSn(login + 1);
        assertEquals(login + 2, sequence.expStatSn());
        sequence.advanceStatSn(-1);
        assertEquals(0, sequence.expStatSn(), "StatSN wraps from 2^32 - 1 to 0");
    }
}
