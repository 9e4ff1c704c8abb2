"""`python -m orbitmq` is the `orbitmq` command."""

import sys

from orbitmq.cli import main

sys.exit(main())
