"""What sqlgate writes into other programs' files: MCP client configs (`sqlgate install`) and Claude
Code hooks (`sqlgate capture`)."""
