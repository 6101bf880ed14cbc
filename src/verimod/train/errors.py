"""The one error type of the training package that the CLI reports as bad input."""

from __future__ import annotations


class TrainingInputError(ValueError):
    """A problem with a training command's inputs or output folder: ``option`` names the option
    (or file) at fault, ``message`` says what is wrong."""

    def __init__(self, option: str, message: str) -> None:
        super().__init__(f"{option}: {message}")
        self.option = option
        self.message = message
