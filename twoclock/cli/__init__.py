"""The command line: the shared parser and publishing (`common`), flags generated from configs
(`flags`), the explicit rescue of results (`rescue`) and the headline command (`headline`)."""
