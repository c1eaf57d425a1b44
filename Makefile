# The two commands of the README. Both set up everything they need on a fresh machine.
#   make demo   -> environment + sample bag + depth/pair nodes on replay -> demo_out/
#   make test   -> environments (Jazzy and Kilted) + lint + the whole test suite
.PHONY: demo test env env-kilted lint
# The venvs are installed without .pyc files (pip --no-compile); where PYTHONDONTWRITEBYTECODE is
# set, every process of the demo and the tests would compile torch and rclpy from source again.
unexport PYTHONDONTWRITEBYTECODE

env:
	scripts/bootstrap.sh jazzy

env-kilted:
	scripts/bootstrap.sh kilted

demo: env
	.venv/bin/python -m tt_depth_ros.tools.demo.run

lint: env
	.venv/bin/ruff check .

test:
	scripts/run_tests.sh
