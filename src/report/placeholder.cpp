// placeholder until the report module lands
