// Package statushttp serves what the daemon knows over HTTP on
// status_listen and on control_socket (for the CLI), each bounded and
// retried by Serve: /metrics for Prometheus, /status as JSON, /healthz for
// probes. Every value is read from a status.Source at request time, so
// label sets follow the running config: a VIP dropped by a reload
// disappears. It imports nothing of the daemon.
package statushttp
