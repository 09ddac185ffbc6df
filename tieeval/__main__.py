from tieeval.cli import main

main(prog_name="tieeval")
