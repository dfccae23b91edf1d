package io.stripestack.bench;

/**
 * A workload's repeats summarised: throughput, CPU and each {@link Probe}'s change per GiB moved.
 *
 * @param megabytesPerSecond decimal MB/s
 * @param cpuPercent         process CPU % of one core over the run
 * @param cpuMillisPerGib    process CPU ms per GiB moved
 * @param perGib             each probe's change per GiB moved, in the order the probes were given
 */
record Measured(Stat megabytesPerSecond, Stat cpuPercent, Stat cpuMillisPerGib, Stat[] perGib) {

    static Measured of(Sample[] samples, long[][] probeDeltas) {
        int n = samples.length;
        double[] mbps = new double[n];
        double[] cpu = new double[n];
        double[] cpuPerGib = new double[n];
        for (int i = 0; i < n; i++) {
            mbps[i] = samples[i].megabytesPerSecond();
            cpu[i] = samples[i].cpuPercent();
            cpuPerGib[i] = samples[i].cpuMillisPerGib();
        }
        int probes = probeDeltas.length;
        Stat[] perGib = new Stat[probes];
        for (int p = 0; p < probes; p++) {
            double[] values = new double[n];
            for (int i = 0; i < n; i++) {
                values[i] = probeDeltas[p][i] / samples[i].gibibytes();
            }
            perGib[p] = Stat.of(values);
        }
        return new Measured(Stat.of(mbps), Stat.of(cpu), Stat.of(cpuPerGib), perGib);
    }
}
