"""The `compare` command: what each context strategy costs over a run, offline.

`engine` measures, `tables` prints, `billing` holds the providers' prompt-cache billing
models, `wire` turns a request body into the prompt a cache sees, `baselines/` the
transcript strategies compared against, `availability` what earlier evidence the model can
still reach, `parallel` the worker processes, `many` several runs at once, `verdict` the
one-line result and `calibrate` the billing model against real bills.
"""
