import sys

from jeeves.cli import main

sys.exit(main())
