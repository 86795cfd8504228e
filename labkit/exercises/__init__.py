"""Exercises with checkers, one module per notebook (``labkit.exercises.nb01`` ...).

In a notebook::

    from labkit.exercises import nb01
    nb01.q1.hint()          # hints unlock one at a time
    nb01.q1.check(answer)   # raises AssertionError with a helpful message, or confirms
    nb01.q1.solution()      # kept out of the lesson; shown only when asked

The checkers themselves are tested against right and wrong answers (``tests/test_exercises_nbNN.py``, one file per notebook).
"""

from labkit.exercises.core import Exercise

__all__ = ["Exercise"]
