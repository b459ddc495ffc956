"""The installed `projector` command: runs the CLI shipped in the package (bin/projector)."""
import os
import sys


def main():
    binary = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "projector")
    os.execv(binary, [sys.argv[0], *sys.argv[1:]])
