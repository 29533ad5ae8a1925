"""``python -m schedc``: the same as the ``schedc`` console script."""

from schedc.entry import main

raise SystemExit(main())
