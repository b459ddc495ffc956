// placeholder until the schedule module lands
