from mcp_memory.cli import main

main()
