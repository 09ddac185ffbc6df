import sys

try:
    from tieeval.cli import main
except KeyboardInterrupt:  # Ctrl-C while the command line loads
    sys.stderr.write("Error: interrupted\n")
    sys.exit(130)

main(prog_name="tieeval")
