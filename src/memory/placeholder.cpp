// placeholder until the memory module lands
