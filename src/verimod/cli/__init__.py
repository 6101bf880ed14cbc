"""The ``verimod`` command line (Typer). Thin: parse options, call the library, print."""
