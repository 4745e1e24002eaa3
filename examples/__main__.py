"""The main job (``python3 run.py main``): run the examples specialized and report.

For each example: what ran (the backend), how long the specialized call took against plain
Python, and whether the results agree with plain Python.
"""

import argparse
import logging
import sys

from asp_core.platform import query_platform


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python3 run.py main", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="smaller inputs")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    print(query_platform().summary())
    print()
    from examples import elementwise

    report = elementwise.main(n=50_000 if args.quick else 400_000)
    return 0 if report["identical"] else 1


if __name__ == "__main__":
    sys.exit(main())
