"""`python -m tt_depth_ros.tools.demo`: the demo's entry point (tools/demo/run.py)."""
from tt_depth_ros.tools.demo.run import main

raise SystemExit(main())
