// placeholder until the validate module lands
