"""Exercises with checkers, one module per notebook (``labkit.exercises.nb01`` ...).

In a notebook::

    from labkit.exercises import nb01
    nb01.q1.hint()          # hints unlock one at a time
    nb01.q1.check(answer)   # raises AssertionError with a helpful message, or confirms
    nb01.q1.solution()      # kept out of the lesson; shown only when asked

What every exercise shares is in ``labkit.exercises.core``. The checkers are tested against right
and wrong answers (``tests/exercises/test_nbNN.py``), every question against one contract
(``tests/exercises/test_contract.py``).
"""

from labkit.exercises.core import Exercise

__all__ = ["Exercise"]
