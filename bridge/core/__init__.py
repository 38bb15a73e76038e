"""The sans-I/O core: pure protocol logic driven by events, answering with actions.

Nothing here may do I/O, read a clock, draw randomness, or import threads or trio.
"""
