from .cli import cli

cli(prog_name="python -m inference")
