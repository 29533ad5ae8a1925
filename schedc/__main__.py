"""``python -m schedc``: the same as the ``schedc`` console script."""

from schedc.cli import main

raise SystemExit(main())
