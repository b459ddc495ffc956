// placeholder until the cost module lands
