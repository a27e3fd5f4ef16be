"""The analyses behind the experiment scripts, one module each, where tests reach them: a
frozen config of the study's own parameters, run(...) -> a JSON-ready result dict, and
report(result) -> the text the command prints."""
