import sys

from moorage.cli.main import main

sys.exit(main())
