package io.stripestack.readahead;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

class ReadaheadBudgetTest {
    private static final int SEGMENT = 4096;

    private static void assertAdjacent(Segment[] run, int count) {
        for (int i = 1; i < count; i++) {
            assertEquals(run[i - 1].ordinal + 1, run[i].ordinal);
            assertEquals(run[i - 1].slabOffset + SEGMENT, run[i].slabOffset, "adjacent in memory");
        }
    }

    @Test
    void runsAreAdjacentInMemoryAndStopAtSegmentsInUse() {
        ReadaheadBudget budget = new ReadaheadBudget(8L * SEGMENT, SEGMENT);
        Segment[] run = new Segment[8];
        assertEquals(3, budget.tryAcquireRun(3, run));
        assertAdjacent(run, 3);
        Segment[] second = new Segment[8];
        assertEquals(5, budget.tryAcquireRun(8, second), "the rest, from where the last run ended");
        assertAdjacent(second, 5);
        assertEquals(3, second[0].ordinal);
        assertEquals(0, budget.tryAcquireRun(1, new Segment[1]), "exhausted");
        assertEquals(8L * SEGMENT, budget.inUseBytes());

        // Free 1 and 5..6: the cursor has wrapped to 0, so 1 comes first, alone, then 5 and 6 together.
        budget.release(run[1]);
        budget.release(second[2]);
        budget.release(second[3]);
        Segment[] third = new Segment[8];
        assertEquals(1, budget.tryAcquireRun(4, third), "segment 2 is in use, so the run ends after 1");
        assertEquals(1, third[0].ordinal);
        assertEquals(2, budget.tryAcquireRun(4, third));
        assertEquals(5, third[0].ordinal);
        assertAdjacent(third, 2);
        assertEquals(0, budget.tryAcquireRun(4, third));
    }
}
