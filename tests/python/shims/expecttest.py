"""expecttest.py - a stand-in for the expecttest package, which Debian 12 does not ship and
torch's test utilities (torch/testing/_internal/common_utils.py) import for their TestCase base
class. The distributed tests run here (torch_dist_suite.py) use nothing else of it."""
import unittest


class TestCase(unittest.TestCase):
    def assertExpectedInline(self, actual, expect, skip=0):  # noqa: N802 (its name upstream)
        self.assertEqual(actual, expect)


ACCEPT = False  # expecttest's "rewrite the expected strings" switch: never, here
