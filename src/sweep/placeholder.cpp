// placeholder until the sweep module lands
