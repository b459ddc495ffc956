// placeholder until the workload module lands
