"""The ways in: the `ask` and `assistant` commands, the HTTP API with its page, and Slack.

Adapters turn a request into a call to the core (knowledge, retrieval, answer, tools) and
the core's Answer back into text, a status code or a chat message. The core imports
nothing from here, so a new way in is a new module, not a change to the core.
"""
