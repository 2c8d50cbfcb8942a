"""`python -m lackjail.cli`: the same as the `lackjail` command."""

from lackjail.cli import main

main()
