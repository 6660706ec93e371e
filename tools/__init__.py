"""Build tooling of the book (not part of lib: chapters never import it)."""
