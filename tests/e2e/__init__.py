"""End-to-end tests' own files: pinned npm programs (one folder each) and the frameworks'
sessions (frameworks/)."""
