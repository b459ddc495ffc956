// placeholder until the perf module lands
