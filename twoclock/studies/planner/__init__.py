"""The planner (twoclock.pilot) checked against this project's models: pilots simulated by the
engine, planned, and scored at held-out batches (`check`: from the pilots' clocks; `logs_check`:
from their logged curves alone; `calibrate`: the bands' coverage over pilot designs). The
studies plan_check and plan_calibration run them."""
