import sys

from icae_tui.cli import main

sys.exit(main())
