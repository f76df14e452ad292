"""``python -m kernelscope``."""

from .cli.main import entry

if __name__ == "__main__":  # Dask spawns its workers by importing the main module again
    entry()
