"""Model families: one folder each."""
