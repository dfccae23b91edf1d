package io.stripestack.raid5;

import java.io.IOException;
import java.util.List;

/** Assemble could not start the array; {@link #problems()} names each member at fault and what to do. */
public final class Raid5AssembleException extends IOException {
    private static final long serialVersionUID = 1L;
    private final transient List<String> problems;

    public Raid5AssembleException(String summary, List<String> problems) {
        super(summary + (problems.isEmpty() ? "" : ":\n  " + String.join("\n  ", problems)));
        this.problems = List.copyOf(problems);
    }

    public List<String> problems() {
        return problems;
    }
}
