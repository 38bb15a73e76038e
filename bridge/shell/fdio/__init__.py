"""File-descriptor I/O: reads, framing, ordered writes with back-pressure, stdout hygiene."""
