"""The engine (JAX): one run as stages, sweeps and schedules over it, keys, the store, devices."""
