"""Turn markdown and plain-text runbooks into searchable chunks and an on-disk index."""
