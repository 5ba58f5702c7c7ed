"""What `ingest` and `assistant` both need, kept below both so that ingest depends on
nothing in assistant: the languages and their detection (`lang`), and the error family
whose messages are meant for people (`errors`).
"""
