"""Command line (being written)."""
import click


@click.group()
def main():
    """tieeval"""
