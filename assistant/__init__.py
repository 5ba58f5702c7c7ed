"""On-call assistant for LLM serving: a bilingual troubleshooting KB with grounded answers."""

__version__ = "0.1.0"
