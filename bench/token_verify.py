"""What verifying one bearer token costs the server, with the issuer's keys already cached.

Runs the product's own verifier (`mcp_memory.security.oauth.tokens.TokenVerifier`, as the guard in front of
the MCP endpoints calls it) against a local issuer (tests/services/local_issuer.py: its metadata and
JWKS over HTTP on 127.0.0.1), warms the key cache, then times --tokens verifications of distinct
tokens each: RS256 (2048-bit), ES256, PS256, and a static hashed token. A whole call over HTTP is
bench/transport_latency.py's.

    .venv/bin/python bench/token_verify.py --tokens 5000

Prints p50/p95/p99 in milliseconds per kind; nothing is asserted.
"""

from __future__ import annotations

import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from bench.harness import cli  # noqa: E402
from mcp_memory.config import SecuritySettings, Settings, TokenEntry  # noqa: E402
from mcp_memory.security.oauth.tokens import build_verifier  # noqa: E402
from mcp_memory.security.static_tokens import hash_token  # noqa: E402
from tests.services.local_issuer import LocalIssuer, SigningKey, local_issuer  # noqa: E402

RESOURCE = "https://memory.example.com/mcp"


def percentiles(samples: list[float]) -> tuple[float, float, float]:
    ordered = sorted(samples)

    def at(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    return statistics.median(ordered), at(0.95), at(0.99)


async def measure(issuer: LocalIssuer, count: int) -> dict[str, list[float]]:
    ps256 = SigningKey("RSA")
    ps256.alg = "PS256"
    issuer.keys.append(ps256)
    static = "mmt_bench-static-token"
    with tempfile.TemporaryDirectory() as data:
        settings = Settings(
            user_id="bench",
            data_dir=Path(data),
            security=SecuritySettings(
                authorization_server=issuer.url,
                resource_url=RESOURCE,
                tokens=[TokenEntry(sha256=hash_token(static), user_id="bench")],
            ),
        )
        verifier = build_verifier(settings)
        assert verifier is not None
        kinds = {"RS256": issuer.keys[0], "ES256": issuer.keys[1], "PS256": ps256}
        results: dict[str, list[float]] = {}
        for name, key in kinds.items():
            tokens = [issuer.mint(issuer.claims(RESOURCE, sub=f"user{i}"), key=key) for i in range(count)]
            await verifier.verify(tokens[0])  # metadata and keys fetched here, then cached
            samples = []
            for token in tokens:
                start = time.perf_counter()
                await verifier.verify(token)
                samples.append((time.perf_counter() - start) * 1000)
            results[name] = samples
        samples = []
        for _ in range(count):
            start = time.perf_counter()
            await verifier.verify(static)
            samples.append((time.perf_counter() - start) * 1000)
        results["static (SHA-256)"] = samples
        return results


def main() -> None:
    parser = cli.parser(__doc__)
    parser.add_argument("--tokens", type=int, default=5000, help="verifications per kind")
    args = parser.parse_args()
    with local_issuer() as issuer:
        results = anyio.run(measure, issuer, args.tokens)
    print(
        f"# token verification, keys cached ({platform.processor() or platform.machine()}, {args.tokens} each)"
    )
    print("| token | p50 ms | p95 ms | p99 ms |")
    print("|---|---:|---:|---:|")
    for name, samples in results.items():
        p50, p95, p99 = percentiles(samples)
        print(f"| {name} | {p50:.3f} | {p95:.3f} | {p99:.3f} |")


if __name__ == "__main__":
    main()
