package apisixtest

import (
	"math/rand/v2"
	"slices"
	"sync"
	"time"
)

// Latency is the distribution of the data path's loop latencies: each
// request's wait for its worker's serving loop plus its cost, in the
// loop's virtual time. It is what the model says a client would see from
// APISIX's workers, free of the host's scheduling and timer slack that a
// client's own clock adds (on a loaded host, far more than the model).
// Quantiles are nearest-rank: P99 is the smallest latency that at least
// 99 % of the requests did not exceed.
type Latency struct {
	// Count is every data-path request since the record started.
	Count int64 `json:"count"`
	// Sampled is how many of them the quantiles are taken from: all of
	// them up to latencySamples, then a uniform sample of that many.
	Sampled int           `json:"sampled"`
	P50     time.Duration `json:"p50_ns"`
	P99     time.Duration `json:"p99_ns"`
	// Max is exact, sampled or not.
	Max time.Duration `json:"max_ns"`
}

// latencySamples bounds the latencies kept: 65,536 (512 KiB), over two
// minutes of 500 requests/s. Beyond it the record keeps a uniform sample
// (reservoir sampling), so the quantiles stay those of the whole record up
// to sampling error, while Count and Max stay exact.
const latencySamples = 1 << 16

// latencyLog records loop latencies with bounded memory.
type latencyLog struct {
	mu      sync.Mutex
	count   int64
	max     time.Duration
	samples []time.Duration
	rng     *rand.Rand // picks what the reservoir replaces; fixed seed
}

func (l *latencyLog) add(d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.count++
	l.max = max(l.max, d)
	if len(l.samples) < latencySamples {
		l.samples = append(l.samples, d)
		return
	}
	// Algorithm R: the count-th latency replaces a random sample with
	// probability latencySamples/count.
	if l.rng == nil {
		l.rng = rand.New(rand.NewPCG(1, 2))
	}
	if i := l.rng.Int64N(l.count); i < latencySamples {
		l.samples[i] = d
	}
}

func (l *latencyLog) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.count, l.max, l.samples, l.rng = 0, 0, nil, nil
}

func (l *latencyLog) summary() Latency {
	l.mu.Lock()
	sorted := slices.Clone(l.samples)
	lat := Latency{Count: l.count, Sampled: len(l.samples), Max: l.max}
	l.mu.Unlock()
	slices.Sort(sorted)
	lat.P50, lat.P99 = nearestRank(sorted, 50), nearestRank(sorted, 99)
	return lat
}

// nearestRank is the pct-th percentile of sorted: the value at rank
// ⌈pct/100 × n⌉, counted from 1. 0 when sorted is empty.
func nearestRank(sorted []time.Duration, pct int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := (pct*len(sorted) + 99) / 100
	return sorted[max(rank, 1)-1]
}
