"""`python -m ombre.cli`: the same command as the `ombre` executable."""

from . import main

main()
