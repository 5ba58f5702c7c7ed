"""Running and checking the assistant: `doctor`, `bench`, `eval`, and the store of answers
and feedback. Built on the core like the adapters are; the core imports nothing from here.
"""
