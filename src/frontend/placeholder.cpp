// placeholder until the frontend module lands
