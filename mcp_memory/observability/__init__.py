"""What an operator watches: Prometheus metrics (metrics.py) and optional OpenTelemetry traces
(tracing.py). The only modules that import prometheus_client and opentelemetry: every other layer
records through the small methods here, which is why this package sits low (it imports only errors).
"""
