"""Command line: ``python -m course doctor``."""

import sys


def main(argv: list[str]) -> int:
    if argv[:1] == ["doctor"]:
        from course.doctor import main as doctor

        return doctor()
    print("usage: python -m course doctor", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
