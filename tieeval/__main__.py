import sys

try:
    from tieeval.cli import program
except KeyboardInterrupt:  # Ctrl-C while the command line loads
    sys.stderr.write("Error: interrupted\n")
    sys.exit(130)

program(prog_name="tieeval")
