// Package probe reads what the lab benchmark (integration/benchlab) and the
// soak run (integration/soak) measure about a running lab: a process's CPU,
// memory, threads and file descriptors from /proc, samples of rhi's
// Prometheus text, the fake control API's request counter, the peer
// router's table, and summaries of repeated timings. Besides reading, it
// starts rhi where anycast.Site.StartRHI cannot wait for it (StartRHI).
package probe
