import sys

from jeeves.cli.main import main

sys.exit(main())
