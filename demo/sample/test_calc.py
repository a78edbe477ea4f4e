"""The tests of calc.py; `python3 -m unittest` runs them."""

import unittest

from calc import mean, total


class TotalTest(unittest.TestCase):
    def test_total(self):
        self.assertEqual(total([1, 2, 3]), 6)

    def test_total_of_nothing(self):
        self.assertEqual(total([]), 0)


class MeanTest(unittest.TestCase):
    def test_mean(self):
        self.assertEqual(mean([1, 2, 3]), 2)

    def test_mean_of_one(self):
        self.assertEqual(mean([4]), 4)

    def test_mean_of_nothing(self):
        with self.assertRaises(ValueError):
            mean([])


if __name__ == "__main__":
    unittest.main()
