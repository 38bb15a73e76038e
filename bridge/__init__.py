"""mcp-rosetta: a stdio bridge between the two eras of the Model Context Protocol."""

__version__ = "0.1.0"
