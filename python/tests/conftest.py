import os
import sys

# The benchmark models are shared with the tests.
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "bench"))
