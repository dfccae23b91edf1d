package io.stripestack.targetserver.config;

import io.stripestack.targetserver.config.StripestackConfig.ArrayConfig;
import io.stripestack.targetserver.config.StripestackConfig.Portal;
import io.stripestack.targetserver.config.StripestackConfig.TargetConfig;
import java.util.List;

/**
 * What a running server's administration changes, as configuration: its portals (as configured, port 0 kept),
 * arrays and targets (CHAP as user and secret file, no secret). What {@link ConfigSaver} writes. Immutable.
 */
public record RunningState(List<Portal> portals, List<ArrayConfig> arrays, List<TargetConfig> targets) {
    public RunningState {
        portals = List.copyOf(portals);
        arrays = List.copyOf(arrays);
        targets = List.copyOf(targets);
    }
}
