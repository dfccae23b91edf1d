package io.stripestack.targetserver.control;

import java.io.IOException;
import java.util.List;

/**
 * One administration verb of the admin socket beyond the attribute verbs ({@code ls}, {@code target},
 * {@code lun}, {@code acl}, {@code chap}, {@code saveconfig}): it gets the words after the verb and returns the
 * answer's lines. A refusal is an exception whose message names what and why; it reaches the operator as it is.
 * Commands run on the admin worker thread, one at a time.
 */
@FunctionalInterface
public interface AdminCommand {

    String run(List<String> args) throws IOException;
}
