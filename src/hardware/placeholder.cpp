// placeholder until the hardware module lands
