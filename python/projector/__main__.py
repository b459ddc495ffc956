"""`python -m projector ARGS` = `projector ARGS`."""
from projector._cli import main

main()
