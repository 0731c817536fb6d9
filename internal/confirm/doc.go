// Package confirm asks BIRD, on its own goroutine, whether it agrees with
// what rhi wants announced, and keeps what it said per VIP: since when a
// VIP disagrees, how long BIRD took to agree after a change, when to warn,
// and when to renew an address whose change BIRD missed.
//
// Step is the pure part, one VIP at a time; Runner runs the checks, logs
// what changed and batches the renewals it hands back to the loop.
package confirm
