"""The bench's shared harness: what every benchmark needs and none should write again.

- `bench.harness.server`: start the real server (over stdio, or over HTTP/SSE as a process on a free
  port) with a clean environment and connect the MCP SDK's `Client` to it; or open the service in
  process (`open_service`).
- `bench.harness.data`: the datasets: LoCoMo (`data.locomo`), BEAM (`data.beam`), the synthetic corpus
  (`data.corpus`) and near-duplicate corpora (`data.near_duplicates`).
- `bench.harness.timing`: percentiles, timers, CPU and RSS readings.
- `bench.harness.table`: print a markdown table and save results as JSON or markdown.
- `bench.harness.cli`: an argument parser whose help is the script's docstring, with `--save`.
- `bench.harness.fleet`: N server processes behind nginx round-robin, with shared Redis.
- `bench.harness.llm`: the local OpenAI-compatible stub (the tests' fake) as the service's LLM settings.

A bench script puts the repository's root on sys.path before importing it (the first lines of every
bench script; see bench/README.md, "Adding a benchmark"):

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from bench.harness import cli, server, table, timing
"""
